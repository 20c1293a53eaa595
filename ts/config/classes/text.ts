// Pretrained Hugging Face text models and text data: the classes the core reads from Hugging
// Face directories (config.json, model.safetensors, tokenizer.json), local or from the Hub's cache.
import { configOf, defineConfig } from "../class.js";
import { meta, param } from "../declare.js";
import { bool, int, literal, path, str } from "../types.js";
import { hubModelDirectory, isHubId } from "../../hub/resolve.js";
import { Module, SampleIterator, Sampler } from "./base.js";

/**
 * A pretrained encoder: a local Hugging Face directory (`path`), or a model of the Hugging Face
 * Hub by its id (`"ORG/NAME"`, no `path`), found in Python's Hugging Face cache or downloaded into
 * it. Either holds `config.json` (model_type bert, roberta, xlm-roberta, distilbert or electra),
 * `model.safetensors` (or a sharded `model.safetensors.index.json`) and `tokenizer.json`.
 */
export const HFEncoder = defineConfig(
  "xpm_torch.models.HFEncoder",
  {
    id: param(str((s) => s.min(1))).help("What the model is: its Hub id (ORG/NAME) when path is not set; paths never enter identifiers"),
    path: meta(path()).optional().help("A local Hugging Face model directory (default: the Hub model named by id, from the Hugging Face cache)"),
    revision: param(str((s) => s.min(1))).optional().help("For a Hub model: the branch, tag or commit (default main)"),
  },
  {
    validate(v, issue) {
      if (v.path !== undefined) {
        if (v.revision !== undefined) issue("revision", "is for a model of the Hub, which this is not: it has a path");
      } else if (!isHubId(v.id)) {
        issue("id", `${JSON.stringify(v.id)} is not a Hugging Face Hub id (ORG/NAME): give the model's Hub id, or its local directory as path`);
      }
    },
    // A Hub model reaches the core as the cache's snapshot folder, found when it is sent.
    wire: (v): Readonly<Record<string, string>> => (v.path === undefined ? { path: hubModelDirectory(v.id, v.revision) } : {}),
    wireSchema: { properties: { path: { type: "string", minLength: 1, description: "The Hugging Face model directory" } }, required: ["path"] },
  },
);

const maxLength = () =>
  param(int((s) => s.min(4).max(1 << 20))).default(512, { ignoreDefault: true }).help("Longest input in tokens, special tokens included");

/**
 * A cross-encoder: `[CLS] query [SEP] document [SEP]` through the encoder and a one-label
 * sequence-classification head whose logit is the score. A directory holding such a head
 * (`BertForSequenceClassification`, ... with `num_labels: 1`) is loaded with it; otherwise
 * the head is new, drawn from the run's seed. Pairs are cut longest first to `max_length`.
 */
export const CrossEncoder = defineConfig(
  "xpm_torch.models.CrossEncoder",
  { encoder: param(configOf(HFEncoder)).help("The pretrained encoder"), max_length: maxLength() },
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
    encoder: param(configOf(HFEncoder)).help("The document encoder, also the query encoder unless query_encoder is set"),
    query_encoder: param(configOf(HFEncoder)).optional().help("A separate query encoder (default: encoder)"),
    pooling: param(literal(["mean", "cls"])).default("mean", { ignoreDefault: true }).help("How hidden states become one vector: mean over real tokens, or the cls token"),
    normalize: param(bool()).default(true, { ignoreDefault: true }).help("Whether vectors are L2-normalised before comparing"),
    similarity: param(literal(["dot", "cosine"])).default("dot", { ignoreDefault: true }).help("The score: dot product or cosine similarity"),
    max_length: maxLength(),
  },
  { extends: Module },
);

/** The parameters of a text file of records (triplets or scored pairs): the same for both. */
const textFile = () => ({
  id: param(str((s) => s.min(1))).help("What the data is: paths never enter identifiers"),
  path: meta(path()).help("The file"),
  format: param(str((s) => s.regex(/^(tsv|jsonl)$/))).optional().help("tsv or jsonl (default: the file's extension)"),
});

/**
 * A file of text triplets: TSV (`query<TAB>positive<TAB>negative`, no quoting) or JSONL
 * (`{"query": "...", "positive": "...", "negative": "..."}`). Empty texts are refused with
 * their `file:line:column`.
 */
export const TextTripletFile = defineConfig(
  "xpm_torch.data.TextTripletFile",
  textFile(),
  { extends: SampleIterator },
);

/**
 * (query, positive, negative) text triplets in a fresh random order each pass, each batch
 * tokenised by the model's own tokenizer on the data producer thread (pairs for a
 * {@link CrossEncoder}, texts apart for a {@link BiEncoder}).
 */
export const TextTripletSampler = defineConfig(
  "xpm_torch.samplers.TextTripletSampler",
  { triplets: param(configOf(TextTripletFile)).help("The triplets") },
  { extends: Sampler },
);

/**
 * A file of scored text pairs for pointwise losses: TSV (`query<TAB>document<TAB>score`, no
 * quoting) or JSONL (`{"query": "...", "document": "...", "score": 0.5}`). The score is the
 * pair's relevance, a number in [0, 1]; anything else, or an empty text, is refused with its
 * `file:line:column`.
 */
export const TextPairFile = defineConfig(
  "xpm_torch.data.TextPairFile",
  textFile(),
  { extends: SampleIterator },
);

/**
 * Scored (query, document) text pairs in a fresh random order each pass: pointwise records
 * (relevance = the score) for `PointwiseCrossEntropyLoss`, tokenised as
 * {@link TextTripletSampler}'s.
 */
export const TextPairSampler = defineConfig(
  "xpm_torch.samplers.TextPairSampler",
  { pairs: param(configOf(TextPairFile)).help("The pairs") },
  { extends: Sampler },
);

const dataId = () => param(str((s) => s.min(1))).help("What the data is: paths never enter identifiers");

/**
 * Texts by id in an `id<TAB>text` file: documents (MS MARCO's `collection.tsv`) or queries
 * (`queries.tsv`). The file is indexed in one pass and each text read when a batch needs it,
 * on the data producer thread: it is never parsed whole. Ids are unique; empty texts are
 * refused with their `file:line`.
 */
export const TextCollection = defineConfig("xpm_torch.data.TextCollection", {
  id: dataId(),
  path: meta(path()).help("The file"),
});

/** TREC relevance judgements: `qid iteration docid grade` per line (negative grades read as 0). */
export const TrecQrels = defineConfig("xpm_torch.data.TrecQrels", {
  id: dataId(),
  path: meta(path()).help("The file"),
});

/** A TREC run of candidates: `qid Q0 docid rank score tag` per line. */
export const TrecRun = defineConfig("xpm_torch.data.TrecRun", {
  id: dataId(),
  path: meta(path()).help("The file"),
});

/** Training triples of ids: `qid<TAB>positive docid<TAB>negative docid` per line. */
export const IdTripletFile = defineConfig("xpm_torch.data.IdTripletFile", {
  id: dataId(),
  path: meta(path()).help("The file"),
});

/**
 * (query, positive, negative) triplets of ids over text collections (MS MARCO's
 * `qidpidtriples`), their texts read by id and tokenised as {@link TextTripletSampler}'s.
 * An id absent from its collection is refused at the triplet file's `file:line`.
 */
export const IdTripletSampler = defineConfig(
  "xpm_torch.samplers.IdTripletSampler",
  {
    queries: param(configOf(TextCollection)).help("The query texts"),
    documents: param(configOf(TextCollection)).help("The document texts"),
    triplets: param(configOf(IdTripletFile)).help("The triplets of ids"),
  },
  { extends: Sampler },
);

/**
 * A run's candidates to re-rank, judged by qrels, over text collections: the dataset of a
 * `RankingValidationListener` for a text model (MRR@10 and NDCG@10 by re-ranking MS MARCO's
 * dev run), and of a `SlateSampler`. Only the run's queries with a relevant judged document
 * are kept.
 */
export const TextRerankingDataset = defineConfig(
  "xpm_torch.data.TextRerankingDataset",
  {
    queries: param(configOf(TextCollection)).help("The query texts"),
    documents: param(configOf(TextCollection)).help("The document texts"),
    qrels: param(configOf(TrecQrels)).help("The relevance judgements"),
    run: param(configOf(TrecRun)).help("The candidates to re-rank"),
    depth: param(int((s) => s.min(1))).optional().help("Candidates kept per query, best ranked first (default: all)"),
    batch_size: meta(int((s) => s.min(1))).optional().help("Pairs scored per forward when validating (default 64)"),
  },
  { extends: SampleIterator },
);
