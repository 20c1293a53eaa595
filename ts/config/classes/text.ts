// Pretrained Hugging Face text models and text data: the classes the core reads from local
// Hugging Face directories (config.json, model.safetensors, tokenizer.json).
import { configOf, defineConfig } from "../class.js";
import { meta, param } from "../declare.js";
import { bool, int, literal, path, str } from "../types.js";
import { Module, SampleIterator, Sampler } from "./base.js";

/**
 * A pretrained encoder in a local Hugging Face directory: `config.json` (model_type bert,
 * roberta, xlm-roberta, distilbert or electra), `model.safetensors` (or a sharded
 * `model.safetensors.index.json`) and `tokenizer.json`. Nothing is downloaded.
 */
export const HFEncoder = defineConfig("xpm_torch.models.HFEncoder", {
  id: param(str((s) => s.min(1))).help("What the model is (e.g. all-MiniLM-L6-v2): paths never enter identifiers"),
  path: meta(path()).help("The Hugging Face model directory"),
});

const maxLength = () =>
  param(int((s) => s.min(4))).default(512, { ignoreDefault: true }).help("Longest input in tokens, special tokens included");

/**
 * A cross-encoder: `[CLS] query [SEP] document [SEP]` through the encoder and a one-label
 * sequence-classification head whose logit is the score. A directory holding such a head
 * (`BertForSequenceClassification`, ... with `num_labels: 1`) is loaded with it; otherwise
 * the head is new, drawn from the run's seed. Pairs are cut longest first to `max_length`.
 */
export const CrossEncoder = defineConfig(
  "xpm_torch.models.CrossEncoder",
  { encoder: param(configOf(HFEncoder)), max_length: maxLength() },
  { extends: Module },
);

/**
 * A bi-encoder: queries and documents embedded apart — by one shared encoder, or by
 * `query_encoder` for queries and `encoder` for documents — pooled (`mean` over real tokens or
 * the `cls` token), optionally L2-normalised, then compared by `dot` product or `cosine`.
 */
export const BiEncoder = defineConfig(
  "xpm_torch.models.BiEncoder",
  {
    encoder: param(configOf(HFEncoder)),
    query_encoder: param(configOf(HFEncoder)).optional().help("A separate query encoder (default: encoder)"),
    pooling: param(literal(["mean", "cls"])).default("mean", { ignoreDefault: true }),
    normalize: param(bool()).default(true, { ignoreDefault: true }),
    similarity: param(literal(["dot", "cosine"])).default("dot", { ignoreDefault: true }),
    max_length: maxLength(),
  },
  { extends: Module },
);

/**
 * A file of text triplets: TSV (`query<TAB>positive<TAB>negative`, no quoting) or JSONL
 * (`{"query": "...", "positive": "...", "negative": "..."}`). Empty texts are refused with
 * their `file:line:column`.
 */
export const TextTripletFile = defineConfig(
  "xpm_torch.data.TextTripletFile",
  {
    id: param(str((s) => s.min(1))).help("What the data is: paths never enter identifiers"),
    path: meta(path()).help("The file"),
    format: param(str((s) => s.regex(/^(tsv|jsonl)$/))).optional().help("tsv or jsonl (default: the file's extension)"),
  },
  { extends: SampleIterator },
);

/**
 * (query, positive, negative) text triplets in a fresh random order each pass, each batch
 * tokenised by the model's own tokenizer on the data producer thread (pairs for a
 * {@link CrossEncoder}, texts apart for a {@link BiEncoder}).
 */
export const TextTripletSampler = defineConfig(
  "xpm_torch.samplers.TextTripletSampler",
  { triplets: param(configOf(TextTripletFile)) },
  { extends: Sampler },
);
