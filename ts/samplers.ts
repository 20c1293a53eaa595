import { type ClassOptions, type Config, type ConfigClass, defineConfig } from "./config/class.js";
import { SAMPLER_KINDS, Sampler } from "./config/classes/base.js";
import { InMemoryLtrDataset } from "./config/classes/datasets.js";
import type { ConfigOf } from "./config/class.js";
import type { Params, ValuesOf } from "./config/declare.js";
import { type Extension, registerBehaviour } from "./extensions.js";
import type { ForeignReply } from "./native.js";

/** Record kinds a sampler written in TypeScript can yield (as the schema declares them). */
export type SamplerKind = (typeof SAMPLER_KINDS)[number];

/** A preference pair of feature vectors (the same width for every record). */
export interface PairwiseRecord {
  readonly positive: ArrayLike<number>;
  readonly negative: ArrayLike<number>;
}

/** A document's feature vector and its relevance in [0, 1]. */
export interface PointwiseRecord {
  readonly features: ArrayLike<number>;
  readonly relevance: number;
}

/** Token ids of a query, a preferred document and another (0 is padding). */
export interface TripletRecord {
  readonly query: ArrayLike<number>;
  readonly positive: ArrayLike<number>;
  readonly negative: ArrayLike<number>;
}

/** The record type of a kind. */
export type RecordOf<K extends SamplerKind> = K extends "pairwise" ? PairwiseRecord : K extends "pointwise" ? PointwiseRecord : TripletRecord;

/** What a sampler's generator is given. */
export interface SamplerContext {
  /** The Learner's seed. */
  readonly seed: number;
  /** Which pass over the records this is, from 0. */
  readonly pass: number;
}

/**
 * The behaviour of a sampler written in TypeScript. `records` yields one pass of records; it is
 * called again, with the next `pass`, when a pass ends. The core pulls a batch of records per
 * request (ahead of training when the trainer has `num_workers`), so the loop never waits on
 * JavaScript per record. Resuming a run replays the generator and skips the records already
 * consumed: give the same records for the same seed and pass. In a distributed run each rank
 * keeps every world-th record.
 */
export interface SamplerBehaviour<V, K extends SamplerKind> {
  readonly kind: K;
  records(self: V, context: SamplerContext): AsyncIterable<RecordOf<K>> | Iterable<RecordOf<K>>;
}

/**
 * Samplers: the core asks `{ kind: "records", key, start, count, rank, world }` and reads the
 * records packed (its stand-in's `kind` is the record kind).
 */
const samplers: Extension<SamplerBehaviour<object, SamplerKind>> = {
  name: "sampler",
  kindOf: (behaviour) => behaviour.kind,
  answerer: (config, behaviour, seed) => {
    const stream = new RecordStream(config, behaviour, seed);
    return async ({ request }) => {
      const { start, count, rank, world } = request as { start: number; count: number; rank: number; world: number };
      return packedReply(packRecords(behaviour.kind, await stream.take(start, count, rank, world)));
    };
  },
};

/** Declares a sampler class whose records come from a (possibly async) generator in TypeScript. */
export function defineSampler<const Id extends string, P extends Params, K extends SamplerKind>(
  typeId: Id,
  params: P,
  behaviour: SamplerBehaviour<Config<Id, ValuesOf<P>>, K>,
  options: Omit<ClassOptions<P>, "extends"> = {},
): ConfigClass<Id, P> {
  const cls = defineConfig(typeId, params, { ...options, extends: Sampler } as never) as unknown as ConfigClass<Id, P>;
  registerBehaviour(cls, samplers, behaviour as SamplerBehaviour<object, SamplerKind>);
  return cls;
}

/** Arrays of a dataset held in memory. */
export interface InMemoryArrays {
  /** What the data is: it enters the experiment's identifier, the arrays do not. */
  readonly id: string;
  /** Row-major `documents × numFeatures` features. */
  readonly features: Float32Array;
  readonly numFeatures: number;
  /** Graded relevance (an integer 0–255) of each document. */
  readonly relevance: ArrayLike<number>;
  /** The query of each document; the documents of a query are contiguous. */
  readonly queries: ArrayLike<number | string>;
}

/**
 * Records or arrays as they cross to the core and back: JSON beside typed arrays, which the
 * binding copies as they are (no text encoding).
 */
export interface Packed {
  readonly json: Readonly<Record<string, unknown>>;
  readonly floats?: Readonly<Record<string, Float32Array>>;
  readonly ints?: Readonly<Record<string, Int32Array>>;
}

/** Packed records or arrays as the reply to a call of the core. */
export const packedReply = (packed: Packed): ForeignReply => ({ json: JSON.stringify(packed.json), floats: packed.floats, ints: packed.ints });

const arrays = new WeakMap<object, Packed>();

/** In-memory datasets: the core asks `{ kind: "dataset", key }` once, when it builds the run. */
const inMemoryDatasets: Extension<undefined> = {
  name: "in-memory dataset",
  kindOf: () => "ltr",
  answerer: (config) => () => {
    const packed = arrays.get(config);
    if (!packed) throw new Error(`no arrays for in-memory dataset ${JSON.stringify((config as { id: string }).id)}: create it with inMemoryLtrDataset({...})`);
    return packedReply(packed);
  },
};
registerBehaviour(InMemoryLtrDataset, inMemoryDatasets, undefined);

/** A learning-to-rank dataset held in TypedArrays, copied once to the core when a run starts. */
export function inMemoryLtrDataset(data: InMemoryArrays): ConfigOf<typeof InMemoryLtrDataset> {
  const docs = data.relevance.length;
  if (!Number.isInteger(data.numFeatures) || data.numFeatures < 1) throw new RangeError("inMemoryLtrDataset: numFeatures must be a positive integer");
  if (data.features.length !== docs * data.numFeatures) {
    throw new RangeError(`inMemoryLtrDataset: ${data.features.length} features for ${docs} documents of ${data.numFeatures} features`);
  }
  if (data.queries.length !== docs) throw new RangeError(`inMemoryLtrDataset: ${data.queries.length} query ids for ${docs} documents`);
  const relevance = Array.from(data.relevance, (g, i) => {
    if (!Number.isInteger(g) || g < 0 || g > 255) throw new RangeError(`inMemoryLtrDataset: relevance[${i}] = ${g} is not an integer grade 0–255`);
    return g;
  });
  const queryBounds = [0];
  const seen = new Set<number | string>();
  for (let i = 1; i <= docs; i++) {
    if (i === docs || data.queries[i] !== data.queries[i - 1]) {
      const q = data.queries[i - 1]!;
      if (seen.has(q)) throw new RangeError(`inMemoryLtrDataset: the documents of query ${String(q)} are not contiguous (again at ${i - 1})`);
      seen.add(q);
      queryBounds.push(i);
    }
  }
  if (docs === 0) throw new RangeError("inMemoryLtrDataset: no document");
  const config = InMemoryLtrDataset.C({ id: data.id, num_features: data.numFeatures });
  arrays.set(config, {
    json: { numFeatures: data.numFeatures },
    // Copied now: the data is that of the moment the configuration was made.
    floats: { features: data.features.slice() },
    ints: { relevance: Int32Array.from(relevance), queryBounds: Int32Array.from(queryBounds) },
  });
  return config;
}

/** Rows of the same width, one after the other. */
const rowsTogether = (values: ArrayLike<number>[], what: string): Float32Array => {
  const width = values[0]?.length ?? 0;
  const out = new Float32Array(values.length * width);
  values.forEach((v, i) => {
    if (v.length !== width) throw new RangeError(`${what}: record ${i} has ${v.length} values, the first had ${width}`);
    out.set(v, i * width);
  });
  return out;
};

/** Token sequences as their ids one after the other and their lengths. */
function tokens(values: ArrayLike<number>[], name: string): Record<string, Int32Array> {
  const lengths = Int32Array.from(values, (v) => v.length);
  const ids = new Int32Array(lengths.reduce((sum, l) => sum + l, 0));
  let at = 0;
  for (const v of values) {
    ids.set(v, at);
    at += v.length;
  }
  return { [name]: ids, [`${name}Lengths`]: lengths };
}

/** Records of one kind, packed for the core. */
export function packRecords(kind: SamplerKind, records: readonly unknown[]): Packed {
  const count = records.length;
  if (kind === "pairwise") {
    const rs = records as PairwiseRecord[];
    const floats = { positive: rowsTogether(rs.map((r) => r.positive), "positive"), negative: rowsTogether(rs.map((r) => r.negative), "negative") };
    return { json: { type: "pairwise", count }, floats };
  }
  if (kind === "pointwise") {
    const rs = records as PointwiseRecord[];
    const floats = { features: rowsTogether(rs.map((r) => r.features), "features"), relevance: Float32Array.from(rs, (r) => r.relevance) };
    return { json: { type: "pointwise", count }, floats };
  }
  const rs = records as TripletRecord[];
  const ints = { ...tokens(rs.map((r) => r.query), "query"), ...tokens(rs.map((r) => r.positive), "positive"), ...tokens(rs.map((r) => r.negative), "negative") };
  return { json: { type: "triplets", count }, ints };
}

const NOT_SYNC = Symbol("not a plain generator");

/**
 * The endless record stream of one TypeScript sampler (its passes one after the other), read
 * by one rank: rank `r` of `w` keeps the records whose stream index is `r` modulo `w`.
 */
export class RecordStream {
  private iterator: AsyncIterator<unknown> | Iterator<unknown> | undefined;
  private isAsync = false;
  private pass = 0;
  private inPass = 0;
  /** Records of this rank already handed out. */
  private local = 0;
  private global = 0;

  constructor(
    private readonly config: object,
    private readonly behaviour: SamplerBehaviour<object, SamplerKind>,
    private readonly seed: number,
  ) {}

  private open(pass: number): void {
    const iterable = this.behaviour.records(this.config, { seed: this.seed, pass });
    this.isAsync = Symbol.asyncIterator in iterable;
    this.iterator = this.isAsync ? (iterable as AsyncIterable<unknown>)[Symbol.asyncIterator]() : (iterable as Iterable<unknown>)[Symbol.iterator]();
    this.pass = pass;
    this.inPass = 0;
  }

  private async nextGlobal(): Promise<unknown> {
    for (;;) {
      if (this.iterator === undefined) this.open(0);
      const step = await this.iterator!.next();
      if (!step.done) {
        this.inPass += 1;
        this.global += 1;
        return step.value;
      }
      if (this.inPass === 0) throw new Error(`pass ${this.pass} yielded no record`);
      this.open(this.pass + 1);
    }
  }

  /** `count` records of rank `rank` of `world`, starting at its `start`-th record. */
  async take(start: number, count: number, rank: number, world: number): Promise<unknown[]> {
    if (start !== this.local || this.iterator === undefined) {
      // A restored or restarted run: replay from the beginning.
      this.iterator = undefined;
      this.global = 0;
      this.local = 0;
      while (this.local < start) {
        if (this.takeSync(rank, world) === NOT_SYNC) await this.nextOfRank(rank, world);
      }
    }
    const out: unknown[] = [];
    while (out.length < count) {
      // A plain generator is read without a microtask per record.
      const record = this.takeSync(rank, world);
      out.push(record === NOT_SYNC ? await this.nextOfRank(rank, world) : record);
    }
    return out;
  }

  /** The next record of this rank when the generator is a plain one, else NOT_SYNC. */
  private takeSync(rank: number, world: number): unknown {
    if (this.iterator === undefined) this.open(0);
    if (this.isAsync) return NOT_SYNC;
    const iterator = this.iterator as Iterator<unknown>;
    for (;;) {
      const step = iterator.next();
      if (step.done) {
        if (this.inPass === 0) throw new Error(`pass ${this.pass} yielded no record`);
        this.open(this.pass + 1);
        return this.takeSync(rank, world);
      }
      this.inPass += 1;
      this.global += 1;
      if ((this.global - 1) % world === rank) {
        this.local += 1;
        return step.value;
      }
    }
  }

  private async nextOfRank(rank: number, world: number): Promise<unknown> {
    while (this.global % world !== rank) await this.nextGlobal();
    const record = await this.nextGlobal();
    this.local += 1;
    return record;
  }
}

const rowsOf = (values: Float32Array, count: number): Float32Array[] => {
  const width = count === 0 ? 0 : values.length / count;
  return Array.from({ length: count }, (_, i) => values.subarray(i * width, (i + 1) * width));
};

const sequencesOf = (packed: Packed, name: string): number[][] => {
  const ids = packed.ints?.[name] ?? new Int32Array();
  const lengths = packed.ints?.[`${name}Lengths`] ?? new Int32Array();
  let at = 0;
  return Array.from(lengths, (len) => Array.from(ids.subarray(at, (at += len))));
};

/** Records packed by the core (the inverse of {@link packRecords}). */
export function unpackRecords(packed: Packed): unknown[] {
  const count = packed.json.count as number;
  const floats = (name: string): Float32Array => packed.floats?.[name] ?? new Float32Array();
  if (packed.json.type === "pairwise") {
    const positive = rowsOf(floats("positive"), count);
    const negative = rowsOf(floats("negative"), count);
    return positive.map((p, i) => ({ positive: p, negative: negative[i]! }));
  }
  if (packed.json.type === "pointwise") {
    const features = rowsOf(floats("features"), count);
    const relevance = floats("relevance");
    return features.map((f, i) => ({ features: f, relevance: relevance[i]! }));
  }
  const [query, positive, negative] = ["query", "positive", "negative"].map((n) => sequencesOf(packed, n));
  return query!.map((q, i) => ({ query: q, positive: positive![i]!, negative: negative![i]! }));
}
