// The samplers, where a trainer's records come from: text triplets and pairs, id triplets over text
// collections, learning-to-rank pairs, points, groups and slates, and token-id triplets.
// The classes of this package with no Python counterpart keep their type ids under `xpm_torch`, so
// that identifiers stay stable. The schema the core reads lists the subclasses of a base in the
// order they are defined: keep the order.
import { configOf, defineConfig } from "../class.js";
import { param } from "../declare.js";
import { int } from "../types.js";
import { Sampler } from "./base.js";
import { ltrDataset, rankedDataset } from "./dataset-unions.js";
import { IdTripletFile, TextCollection, TextPairFile, TextTripletFile, TokenTriplets } from "./datasets.js";

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
 * Scored (query, document) text pairs in a fresh random order each pass: pointwise records
 * (relevance = the score) for `PointwiseCrossEntropyLoss`, tokenised as
 * {@link TextTripletSampler}'s.
 */
export const TextPairSampler = defineConfig(
  "xpm_torch.samplers.TextPairSampler",
  { pairs: param(configOf(TextPairFile)).help("The pairs") },
  { extends: Sampler },
);

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

/** (query, positive, negative) token-id triplets in a fresh random order each pass. */
export const TokenTripletSampler = defineConfig(
  "xpm_torch.samplers.TokenTripletSampler",
  { triplets: param(configOf(TokenTriplets)).help("Where the triplets come from") },
  { extends: Sampler },
);
