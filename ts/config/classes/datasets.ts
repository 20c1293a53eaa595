// The datasets: text files of records, text collections with their TREC qrels and runs, and the
// learning-to-rank and token-id data.
// The classes of this package with no Python counterpart keep their type ids under `xpm_torch`, so
// that identifiers stay stable. The schema the core reads lists the subclasses of a base in the
// order they are defined: keep the order.
import { configOf, defineConfig } from "../class.js";
import { meta, param } from "../declare.js";
import { float, int, path, str } from "../types.js";
import { SampleIterator } from "./base.js";

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
