// Classes of this package with no Python counterpart: the models, data and listeners that the
// Rust core implements. Their type ids live under `xpm_torch` so that identifiers stay stable.
import { configOf, configUnion, defineConfig } from "../class.js";
import { generated, meta, param } from "../declare.js";
import { bool, dict, float, int, list, literal, path, str } from "../types.js";
import { Module, SampleIterator, Sampler } from "./base.js";
import { LearnerListener } from "./learner.js";
import { TextRerankingDataset } from "./text.js";

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

/** Documents with features x ~ N(0, I) graded 0–4 by `w·x + noise` for a hidden unit vector w. */
export const SyntheticLtrDataset = defineConfig(
  "xpm_torch.data.SyntheticLtrDataset",
  {
    signal_seed: param(int((s) => s.min(0))).help("Seed of the hidden weight: datasets sharing it share the signal"),
    seed: param(int((s) => s.min(0))).help("Seed of the documents and noise"),
    num_queries: param(int((s) => s.min(1))).help("Number of queries"),
    docs_per_query: param(int((s) => s.min(1))).help("Documents per query"),
    num_features: param(int((s) => s.min(1))).help("Feature dimension"),
    noise: param(float((s) => s.min(0))).default(0.5, { ignoreDefault: true }).help("Standard deviation of the noise added to w·x before grading"),
  },
  { extends: SampleIterator },
);

/**
 * A learning-to-rank file in the SVMlight/LETOR format (`<rel> qid:<q> <i>:<v> ... # comment`, as
 * MSLR-WEB10K/30K and LETOR 4.0). `id` says what the data is: paths never enter identifiers.
 */
export const LetorDataset = defineConfig(
  "xpm_torch.data.LetorDataset",
  {
    id: param(str((s) => s.min(1))).help("What the data is, e.g. mslr-web10k/fold1/train"),
    path: meta(path()).help("The file"),
    num_features: param(int((s) => s.min(1))).optional().help("Feature dimension (default: the largest index)"),
  },
  { extends: SampleIterator },
);

/**
 * A learning-to-rank dataset held in TypedArrays in this process: create it with
 * `inMemoryLtrDataset({...})`, which attaches the arrays. `id` says what the data is (the arrays
 * do not enter identifiers).
 */
export const InMemoryLtrDataset = defineConfig(
  "xpm_torch.data.InMemoryLtrDataset",
  {
    id: param(str((s) => s.min(1))).help("What the data is"),
    num_features: param(int((s) => s.min(1))).help("Feature dimension"),
  },
  { extends: SampleIterator, standIn: true },
);

/** The learning-to-rank datasets. */
const ltrDataset = () => configUnion("LtrDataset", SyntheticLtrDataset, LetorDataset, InMemoryLtrDataset);

/** The datasets whose queries are ranked as a whole: the feature ones and a text run to re-rank. */
const rankedDataset = () =>
  configUnion("RankedDataset", SyntheticLtrDataset, LetorDataset, InMemoryLtrDataset, TextRerankingDataset);

/** Preference pairs (a more and a less relevant document of one query) from a dataset. */
export const PairwiseSampler = defineConfig(
  "xpm_torch.samplers.PairwiseSampler",
  { dataset: param(ltrDataset()).help("The documents and their grades") },
  { extends: Sampler },
);

/** Every document of a dataset with its relevance (grade / top grade): pointwise records. */
export const PointwiseSampler = defineConfig(
  "xpm_torch.samplers.PointwiseSampler",
  { dataset: param(ltrDataset()).help("The documents and their grades") },
  { extends: Sampler },
);

/**
 * Batchwise records: per query, a group of `group_size` documents — one of its best, then others
 * drawn at random — scored together (for SoftmaxCrossEntropy and the batchwise CrossEntropyLoss).
 */
export const BatchwiseSampler = defineConfig(
  "xpm_torch.samplers.BatchwiseSampler",
  {
    dataset: param(ltrDataset()).help("The documents and their grades"),
    group_size: param(int((s) => s.min(2))).default(8, { ignoreDefault: true }).help("Documents per query group"),
  },
  { extends: Sampler },
);

/**
 * Whole queries as slates: per record, a query's documents in a random order, padded to the slate
 * width, with their grades as labels. A query with more than `slate_length` documents is
 * subsampled to `slate_length` of them, one of its top grade among them; a query whose documents
 * all share a grade is left out. For the listwise losses
 * (ours: the Python library has no slate sampler).
 */
export const SlateSampler = defineConfig(
  "xpm_torch.samplers.SlateSampler",
  {
    dataset: param(rankedDataset()).help("The queries and their graded documents"),
    slate_length: param(int((s) => s.min(2))).default(64, { ignoreDefault: true }).help("Most documents per slate"),
  },
  { extends: Sampler },
);

/** Token-id triplets: a source of (query, positive, negative) sequences for sequence models. */
export const TokenTriplets = defineConfig("xpm_torch.data.TokenTriplets", {}, { abstract: true, extends: SampleIterator });

/**
 * A file of token-id triplets: TSV (`query<TAB>positive<TAB>negative`, ids separated by spaces)
 * or JSONL (`{"query": [..], "positive": [..], "negative": [..]}`). Id 0 is padding.
 */
export const TokenTripletFile = defineConfig(
  "xpm_torch.data.TokenTripletFile",
  {
    id: param(str((s) => s.min(1))).help("What the data is: paths never enter identifiers"),
    path: meta(path()).help("The file"),
    format: param(str((s) => s.regex(/^(tsv|jsonl)$/))).optional().help("tsv or jsonl (default: the file's extension)"),
  },
  { extends: TokenTriplets },
);

/**
 * Token-id triplets with a planted signal: the positive document holds more of the query's
 * tokens than the negative one; document lengths vary between `min_length` and `max_length`.
 */
export const SyntheticTokenTriplets = defineConfig(
  "xpm_torch.data.SyntheticTokenTriplets",
  {
    seed: param(int((s) => s.min(0))).help("Seed of the triplets"),
    num_triplets: param(int((s) => s.min(1))).help("Number of triplets"),
    vocab_size: param(int((s) => s.min(16))).default(1000, { ignoreDefault: true }).help("Token ids are below this; 0 is padding"),
    query_length: param(int((s) => s.min(1))).default(4, { ignoreDefault: true }).help("Longest query"),
    min_length: param(int((s) => s.min(1))).default(16, { ignoreDefault: true }).help("Shortest document"),
    max_length: param(int((s) => s.min(1))).default(128, { ignoreDefault: true }).help("Longest document"),
  },
  {
    extends: TokenTriplets,
    validate(v, issue) {
      if (v.query_length * 4 > v.vocab_size) issue("query_length", "must be at most vocab_size / 4");
      if (v.min_length < v.query_length) issue("min_length", "must be at least query_length");
      if (v.max_length < v.min_length) issue("max_length", "must be at least min_length");
    },
  },
);

/** (query, positive, negative) token-id triplets in a fresh random order each pass. */
export const TokenTripletSampler = defineConfig(
  "xpm_torch.samplers.TokenTripletSampler",
  { triplets: param(configOf(TokenTriplets)).help("Where the triplets come from") },
  { extends: Sampler },
);

/** Metric names a {@link RankingValidationListener} understands. */
export const RANK_METRIC = /^(pairwise_accuracy|map|(mrr|ndcg|err)(@[1-9][0-9]*)?|(precision|recall)@[1-9][0-9]*)$/;

/**
 * Ranking metrics on held-out queries — `pairwise_accuracy`, `mrr`, `map`, `ndcg`, `ndcg@k`,
 * `err`, `err@k`, `precision@k`, `recall@k`; higher is better. A query without a relevant document
 * (grade > 0) is left out of every metric but pairwise accuracy. `metrics` maps each metric to
 * whether its best model is kept under `bestpath`.
 */
export const RankingValidationListener = defineConfig(
  "xpm_torch.listeners.RankingValidationListener",
  {
    dataset: param(rankedDataset()).help("The held-out data"),
    metrics: param(dict(bool()))
      .default({ "ndcg@10": true, mrr: false, pairwise_accuracy: false }, { ignoreDefault: true })
      .help("Metric name to whether its best model is kept under bestpath"),
    warmup: param(int((s) => s.min(-1))).default(-1, { ignoreDefault: true }).help("Epochs before best models are tracked (-1: from the start)"),
    validation_interval: param(int((s) => s.min(1))).default(1, { ignoreDefault: true }).help("Epochs between validations"),
    early_stop: param(int((s) => s.min(0))).default(0, { ignoreDefault: true }).help("Epochs without improvement of a kept metric before stopping (0: never)"),
    bestpath: generated("best").help("Best models (generated)"),
    info: generated("info.json").help("Metric values per epoch (generated)"),
  },
  {
    extends: LearnerListener,
    validate(v, issue) {
      const names = Object.keys(v.metrics);
      if (names.length === 0) issue("metrics", "needs at least one metric");
      for (const name of names) {
        if (!RANK_METRIC.test(name)) issue(`metrics.${name}`, "unknown metric (use pairwise_accuracy, mrr, mrr@k, map, ndcg, ndcg@k, err, err@k, precision@k or recall@k)");
      }
      if (v.early_stop % v.validation_interval !== 0) {
        issue("early_stop", `must be a multiple of validation_interval (${v.validation_interval}), or 0`);
      }
    },
  },
);
