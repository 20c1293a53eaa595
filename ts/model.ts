// Using a trained model: open its weights with its configuration and score records in batches.
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

import type { ConfigOf, InstanceOf } from "./config/class.js";
import type { Module } from "./config/classes/base.js";
import { Learner } from "./config/classes/learner.js";
import { hubModelConfig } from "./config/hub-model.js";
import { initTasksOf } from "./config/identifier-marks.js";
import type { ModuleLoader } from "./config/classes/module.js";
import { toWire } from "./config/wire.js";
import { CheckpointError, ConfigError, XpmTorchError, unwrapOutcome } from "./errors.js";
import { isHubId, resolveHubModel } from "./hub/resolve.js";
import type { HubModel } from "./hub/model.js";
import { loadNative } from "./native.js";
import { readParamsJson } from "./workspace/params-json.js";

/** A model configuration (any `Module`). */
export type ModelConfig = InstanceOf<typeof Module>;

/** Feature vectors, one per (query, document) pair. */
export type FeatureRecords = readonly (Float32Array | readonly number[])[];

/** A (query, document) pair of token ids (0 is padding). */
export interface TokenPair {
  readonly query: readonly number[];
  readonly document: readonly number[];
}

/** A (query, positive, negative) triplet of token ids. */
export interface TokenTriplet {
  readonly query: readonly number[];
  readonly positive: readonly number[];
  readonly negative: readonly number[];
}

/** A (query, document) pair of texts, for a {@link CrossEncoder} or {@link BiEncoder}. */
export interface TextPair {
  readonly query: string;
  readonly document: string;
}

/** The model being trained, as a listener written in TypeScript sees it. */
export interface ListenerModel {
  /**
   * One score per record (feature vectors, or (query, document) token-id pairs) by the model
   * as it is now, in evaluation mode and without gradients: for a validation of your own.
   * Await it inside `call()`; the training waits meanwhile.
   */
  score(records: FeatureRecords | readonly TokenPair[]): Promise<Float32Array>;
}

export interface LoadModelOptions {
  /** The model's configuration; by default read from the params.json of the job that saved it. */
  readonly model?: ModelConfig;
  /** Rows scored at once (default 256). */
  readonly batchSize?: number;
  /**
   * For texts (`score(pairs)`, `embed`): tokens at most in one batch, counted as the padded
   * batch holds them (rows × its longest; a pair's query and document together). Texts are
   * batched longest first, so short ones go many at a time (up to `batchSize`) and long ones
   * few; a text longer than the budget goes alone. Bounds the memory of a batch whatever the
   * lengths. Default: no budget, `batchSize` texts a batch.
   */
  readonly maxBatchTokens?: number;
  /** Where to score: `cpu`, `cuda`, `cuda:<n>`, or `auto` (the first GPU when there is one; the default). */
  readonly device?: "cpu" | "cuda" | "auto" | `cuda:${number}`;
  /**
   * For a model opened from its configuration: the seed of what it draws (a cross-encoder's new
   * head), drawn as a Learner with `random.seed` = `seed` draws it (default 0). A Learner given
   * as the source brings its own.
   */
  readonly seed?: number;
  /** Intra-op CPU threads while scoring and embedding (default: the process's, `OMP_NUM_THREADS`). */
  readonly numThreads?: number;
  /**
   * The precision of its forwards: `32-true` (the default) or `bf16-mixed` (float32 weights,
   * forwards under bfloat16 autocast, as a run's validation in that precision scores; scores
   * and embeddings in float32). On a CPU, bf16-mixed is faster only with native bfloat16
   * instructions (`xpm-torch doctor` says whether this one has them; without, `onWarning` is told).
   */
  readonly precision?: "32-true" | "bf16-mixed";
  /** For a Hub id: the branch, tag or commit (default `main`). */
  readonly revision?: string;
  /**
   * Told, once each, what the user should know of the model opened: weights drawn new rather
   * than read from its files (see {@link TrainedModel.newWeights}); bf16-mixed on a CPU that
   * emulates bfloat16. By default printed to stderr.
   */
  readonly onWarning?: (message: string) => void;
}

/** A trained model, ready to score. */
export interface TrainedModel {
  /** The weights file it was loaded from ("" for a model opened from its configuration). */
  readonly weights: string;
  /**
   * The parameters drawn new (from the seed) rather than read from the model's files, as
   * transformers reports the weights it "newly initialized": a CrossEncoder over an encoder
   * saved without a one-label classification head draws its head (`classifier.weight`,
   * `classifier.bias`), and its scores mean nothing until it is trained. Empty for weights
   * loaded from a file.
   */
  readonly newWeights: readonly string[];
  /** One score per record: feature vectors, or (query, document) token pairs. */
  score(records: FeatureRecords | readonly TokenPair[]): Float32Array;
  /**
   * One score per (query, document) text pair, for a CrossEncoder or a BiEncoder: tokenised by
   * the model's own tokenizer (cut to its `max_length`) and scored off the JavaScript thread.
   * An empty text is scored as an empty sequence (its special tokens alone).
   */
  score(pairs: readonly TextPair[]): Promise<number[]>;
  /**
   * One vector per text, for a BiEncoder: pooled and normalised as the model is configured,
   * by its document encoder, or its query encoder with `{ as: "query" }`.
   */
  embed(texts: readonly string[], options?: { readonly as?: "query" | "document" }): Promise<Float32Array[]>;
  /**
   * Saves a CrossEncoder or BiEncoder as a Hugging Face directory that `transformers` loads
   * (`config.json`, `model.safetensors`, the tokenizer files): a cross-encoder as a
   * `…ForSequenceClassification` with one label, a bi-encoder as its base model (separate
   * encoders as `query/` and `document/`). `directory` must not exist yet.
   */
  saveHuggingFace(directory: string): void;
  /** The scores of each triplet's positive and negative document. */
  scoreTriplets(triplets: readonly TokenTriplet[]): { positive: Float32Array; negative: Float32Array };
}

/** `weights not in the model's files, newly drawn from <from>: classifier.weight, classifier.bias`. */
export function newWeightsLine(names: readonly string[], from: string): string {
  return `weights not in the model's files, newly drawn from ${from}: ${names.join(", ")}`;
}

type ModuleLoaderConfig = ConfigOf<typeof ModuleLoader>;

/** A Learner: the model it starts from (its model configuration, drawn from its seed). */
type LearnerSource = ConfigOf<typeof Learner>;

const WEIGHTS = "model.safetensors";

/** The weights file of a path: the file itself, `<dir>/model.safetensors` or `<dir>/model/model.safetensors`. */
function weightsFile(path: string): string {
  const full = resolve(path);
  if (!existsSync(full)) throw new CheckpointError(`${full}: no such file or directory`, full);
  if (statSync(full).isFile()) return full;
  for (const candidate of [join(full, WEIGHTS), join(full, "model", WEIGHTS)]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new CheckpointError(`${full}: holds neither ${WEIGHTS} nor model/${WEIGHTS}; give a run's learned_model, a checkpoint or a best directory`, full);
}

/** The model configuration in the params.json of the job above `weights`. */
function modelOfJob(weights: string): ModelConfig {
  for (let dir = dirname(weights); ; dir = dirname(dir)) {
    const params = join(dir, "params.json");
    if (existsSync(params)) {
      const learner = readParamsJson(readFileSync(params, "utf8"), params) as { model?: ModelConfig };
      if (!learner.model) throw new XpmTorchError("ERR_CONFIG", `${params}: the task has no model`);
      return learner.model;
    }
    if (dirname(dir) === dir) break;
  }
  throw new XpmTorchError(
    "ERR_CONFIG",
    `${weights}: no params.json above it to read the model's configuration from; pass { model } to loadModel`,
  );
}

function isLoader(source: unknown): source is ModuleLoaderConfig {
  return typeof source === "object" && source !== null && "value" in source && "path" in source;
}

function isTexts(records: FeatureRecords | readonly TokenPair[] | readonly TextPair[]): records is readonly TextPair[] {
  const first = records[0] as { query?: unknown } | undefined;
  return typeof first?.query === "string";
}

function isTextPairs(records: FeatureRecords | readonly TokenPair[]): records is readonly TokenPair[] {
  const first = records[0];
  return first !== undefined && !(first instanceof Float32Array) && !Array.isArray(first);
}

export type { HubModel } from "./hub/model.js";

/**
 * Makes the Hub model `id` available in the Hugging Face cache (Python's, shared with
 * `transformers`), downloading what it lacks, so that {@link loadModel} and training find it
 * without a network: `HF_HUB_OFFLINE=1` afterwards.
 */
export function downloadModel(id: string, options: { readonly revision?: string; readonly quiet?: boolean } = {}): Promise<HubModel> {
  return resolveHubModel(id, options.revision, options.quiet ? { progress: false } : {});
}

/** A string source that names no local file or directory but a model of the Hub. */
function namesHubModel(source: string): boolean {
  return !existsSync(resolve(source)) && isHubId(source);
}

/**
 * Opens a trained model: `result.learned_model` (or `result.loaders.learned_model`), a
 * checkpoint or best directory, or any `model.safetensors`. Given a model configuration instead,
 * opens the model as that configuration builds it: a `CrossEncoder` or `BiEncoder` with its
 * pretrained Hugging Face weights, to score or embed before (or without) fine-tuning. Given a
 * Learner, opens the model its run starts from: its model configuration with what it draws (a
 * new head) drawn from the Learner's seed. Given a Hub id (`"ORG/NAME"`, not a local path), opens
 * that model from the Hugging Face cache as its own files describe it (see `hubModelConfig`):
 * `await downloadModel(id)` first when the cache may lack it.
 */
export function loadModel(source: string | ModuleLoaderConfig | ModelConfig | LearnerSource, options: LoadModelOptions = {}): TrainedModel {
  let seed = options.seed ?? 0;
  if (Learner.is(source)) {
    if (initTasksOf(source).length > 0) {
      throw new ConfigError("learner.__init_tasks__", "loads weights before training: open the initialisation task's loader instead");
    }
    seed = source.random.seed;
    source = source.model as ModelConfig;
  }
  if (typeof source === "string" && namesHubModel(source)) source = options.model ?? hubModelConfig(source, options.revision);
  const pretrained = typeof source === "object" && !isLoader(source);
  const weights = pretrained ? "" : weightsFile(isLoader(source) ? source.path : (source as string));
  const model = pretrained
    ? (source as ModelConfig)
    : (options.model ?? (isLoader(source) ? (source.value as ModelConfig) : modelOfJob(weights)));
  const batchSize = positiveCount("batchSize", options.batchSize ?? 256);
  const maxBatchTokens = options.maxBatchTokens === undefined ? null : positiveCount("maxBatchTokens", options.maxBatchTokens);
  const { binding } = loadNative();
  const handle = new binding.NativeModel();
  const opened = unwrapOutcome<{ newWeights: string[]; warnings: string[] }>(
    handle.open(JSON.stringify(toWire(model)), weights, options.device ?? "auto", seed, options.numThreads ?? null, options.precision ?? null),
  );
  const newWeights = Object.freeze([...opened.newWeights]);
  const warn = options.onWarning ?? ((message: string) => console.warn(`xpm-torch: ${message}`));
  if (newWeights.length > 0) warn(`${newWeightsLine(newWeights, `seed ${seed}`)}; its scores mean nothing until it is trained`);
  opened.warnings.forEach((message) => warn(message));
  const scoreText = (pairs: readonly TokenPair[]): Float32Array =>
    Float32Array.from(
      unwrapOutcome<number[]>(
        handle.scoreText(JSON.stringify([pairs.map((p) => p.query), pairs.map((p) => p.document)]), batchSize),
      ),
    );
  const scoreTexts = async (pairs: readonly TextPair[]): Promise<number[]> =>
    unwrapOutcome<number[]>(
      await handle.scoreTexts(
        pairs.map((p) => p.query),
        pairs.map((p) => p.document),
        batchSize,
        maxBatchTokens,
      ),
    );
  function score(records: FeatureRecords | readonly TokenPair[]): Float32Array;
  function score(pairs: readonly TextPair[]): Promise<number[]>;
  function score(records: FeatureRecords | readonly TokenPair[] | readonly TextPair[]): Float32Array | Promise<number[]> {
    if (isTexts(records)) return scoreTexts(records);
    return scoreRecords(records as FeatureRecords | readonly TokenPair[]);
  }
  return {
    weights,
    newWeights,
    score,
    saveHuggingFace(directory) {
      unwrapOutcome(handle.saveHuggingFace(resolve(directory)));
    },
    async embed(texts, embedOptions = {}) {
      const vectors = unwrapOutcome<number[][]>(await handle.embedTexts([...texts], embedOptions.as === "query", batchSize, maxBatchTokens));
      return vectors.map((v) => Float32Array.from(v));
    },
    scoreTriplets(triplets) {
      const scores = scoreText([
        ...triplets.map((t) => ({ query: t.query, document: t.positive })),
        ...triplets.map((t) => ({ query: t.query, document: t.negative })),
      ]);
      return { positive: scores.slice(0, triplets.length), negative: scores.slice(triplets.length) };
    },
  };

  function scoreRecords(records: FeatureRecords | readonly TokenPair[]): Float32Array {
    if (records.length === 0) return new Float32Array(0);
    const rows = scoreRows(records);
    const outcome =
      "tokenPairsJson" in rows
        ? handle.scoreText(rows.tokenPairsJson, batchSize)
        : handle.scoreFeatures(rows.features, rows.rows, rows.features.length / rows.rows, batchSize);
    return Float32Array.from(unwrapOutcome<number[]>(outcome));
  }
}

/** `value`, a whole number from 1 to 2³² − 1 (the binding's unsigned 32 bits), or a ConfigError at `name`. */
function positiveCount(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1 || value > 0xffff_ffff) {
    throw new ConfigError(name, `must be a whole number of at least 1 (got ${value})`);
  }
  return value;
}

/** Records as the binding scores them: feature vectors row after row, or token-id pairs as JSON. */
export function scoreRows(
  records: FeatureRecords | readonly TokenPair[],
): { readonly features: Float32Array; readonly rows: number } | { readonly tokenPairsJson: string } {
  if (isTextPairs(records)) return { tokenPairsJson: JSON.stringify([records.map((p) => p.query), records.map((p) => p.document)]) };
  const width = records[0]?.length ?? 0;
  const values = new Float32Array(records.length * width);
  records.forEach((row, i) => {
    if (row.length !== width) throw new XpmTorchError("ERR_CONFIG", `records[${i}]: ${row.length} features where records[0] has ${width}`);
    values.set(row, i * width);
  });
  return { features: values, rows: records.length };
}
