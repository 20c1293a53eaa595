// The models: pretrained Hugging Face text models (read from Hugging Face directories, local or
// from the Hub's cache: config.json, model.safetensors, tokenizer.json), scorers over features or
// token ids, and TorchScript modules.
// The classes of this package with no Python counterpart keep their type ids under `xpm_torch`, so
// that identifiers stay stable. The schema the core reads lists the subclasses of a base in the
// order they are defined: keep the order.
import { configOf, defineConfig } from "../class.js";
import { meta, param } from "../declare.js";
import { bool, float, int, list, literal, path, str } from "../types.js";
import { hubModelDirectory, isHubId } from "../../hub/resolve.js";
import { Module } from "./base.js";

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

/** A multi-layer perceptron scorer: features to one score, ReLU between layers. */
export const MlpScorer = defineConfig(
  "xpm_torch.models.MlpScorer",
  {
    input_dim: param(int((s) => s.min(1))).help("Number of input features"),
    hidden_dims: param(list(int((s) => s.min(1)))).default([], { ignoreDefault: true }).help("Widths of the hidden layers (ReLU between); the output layer has width 1"),
  },
  { extends: Module },
);

/** A linear scorer, `torch.nn.Linear(input_dim, 1)`: parameters `weight` and `bias`. */
export const Linear = defineConfig(
  "xpm_torch.models.Linear",
  { input_dim: param(int((s) => s.min(1))).help("Number of input features") },
  { extends: Module },
);

/**
 * A multi-layer perceptron scorer laid out as PyTorch's `layers = nn.Sequential(Linear,
 * [LayerNorm], activation, [Dropout], ..., Linear(h, 1))`: parameters `layers.<k>.weight|bias`.
 */
export const MLP = defineConfig(
  "xpm_torch.models.MLP",
  {
    input_dim: param(int((s) => s.min(1))).help("Number of input features"),
    hidden_dims: param(list(int((s) => s.min(1)))).default([], { ignoreDefault: true }).help("Widths of the hidden layers; the output layer has width 1"),
    activation: param(literal(["relu", "gelu", "tanh"])).default("relu", { ignoreDefault: true }).help("Activation after each hidden layer (gelu: exact erf form)"),
    dropout: param(float((s) => s.min(0).lt(1))).default(0, { ignoreDefault: true }).help("Dropout after each activation"),
    layer_norm: param(bool()).default(false, { ignoreDefault: true }).help("LayerNorm after each hidden linear layer"),
  },
  { extends: Module },
);

/**
 * A dual encoder over token ids: query and document are each the mean of their token embeddings
 * (`nn.EmbeddingBag(vocab_size, dim, mode="mean", padding_idx=0)` named `embedding`), scored by
 * cosine similarity or dot product.
 */
export const EmbeddingDualEncoder = defineConfig(
  "xpm_torch.models.EmbeddingDualEncoder",
  {
    vocab_size: param(int((s) => s.min(2))).help("Token ids are below this; 0 is padding"),
    dim: param(int((s) => s.min(1))).help("Embedding width"),
    similarity: param(literal(["dot", "cosine"])).default("dot", { ignoreDefault: true }).help("The score: dot product or cosine similarity"),
  },
  { extends: Module },
);

/**
 * DRMM: for each query term, a histogram of its cosine similarities to the document's terms
 * (the last bin holds exact matches; log-counts) goes through a feed-forward network; a softmax
 * gate over the query terms' embeddings weighs the term scores.
 */
export const DRMM = defineConfig(
  "xpm_torch.models.DRMM",
  {
    vocab_size: param(int((s) => s.min(2))).help("Token ids are below this; 0 is padding"),
    dim: param(int((s) => s.min(1))).help("Embedding width"),
    bins: param(int((s) => s.min(2))).default(30, { ignoreDefault: true }).help("Histogram bins over cosine similarity in [-1, 1]; the last holds exact matches"),
    hidden_dims: param(list(int((s) => s.min(1)))).default([5], { ignoreDefault: true }).help("Hidden widths of the feed-forward network over each histogram (tanh between)"),
  },
  { extends: Module },
);

/**
 * A Transformer cross-encoder over `[CLS] query [SEP] document` (ids `vocab_size` and
 * `vocab_size + 1`), learned positions and segments (query part, document), post-norm encoder
 * layers whose attention ignores padding, and a linear score of the mean output over the real
 * positions. Key projections start as copies of the query projections. Memory grows with
 * batch × length².
 */
export const TransformerCrossEncoder = defineConfig(
  "xpm_torch.models.TransformerCrossEncoder",
  {
    vocab_size: param(int((s) => s.min(2))).help("Token ids are below this; 0 is padding"),
    dim: param(int((s) => s.min(1))).help("Model width"),
    heads: param(int((s) => s.min(1))).help("Attention heads (divides dim)"),
    layers: param(int((s) => s.min(1))).help("Encoder layers"),
    ffn_dim: param(int((s) => s.min(1))).help("Width of each layer's feed-forward network"),
    max_length: param(int((s) => s.min(4))).help("Longest input, special tokens included; documents are truncated"),
    dropout: param(float((s) => s.min(0).lt(1))).default(0.1, { ignoreDefault: true }).help("Dropout probability"),
  },
  {
    extends: Module,
    validate(v, issue) {
      if (v.dim % v.heads !== 0) issue("heads", `must divide dim (${v.dim})`);
    },
  },
);

/**
 * A module scripted or traced in Python and saved with `torch.jit.save`. `input: "features"` calls
 * `forward(features)`; `input: "text"` calls `forward(query_ids, query_lengths, document_ids,
 * document_lengths)` (int64, 0-padded). Its parameters train in place under PyTorch's names.
 */
export const TorchScriptModel = defineConfig(
  "xpm_torch.models.TorchScriptModel",
  {
    id: param(str((s) => s.min(1))).help("What the model is: paths never enter identifiers"),
    path: meta(path()).help("The .pt file"),
    input: param(literal(["features", "text"])).help("What forward takes: a feature matrix, or token ids and lengths"),
  },
  { extends: Module },
);
