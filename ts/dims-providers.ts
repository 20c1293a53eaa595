// Dims providers written in TypeScript: the `BatchDimsProvider`s of a `PredictiveBatcher` whose
// record variables and probe batches come from JavaScript, read from the records the trainer's
// sampler packs (see samplers.ts).
import { type ClassOptions, type Config, type ConfigClass, defineConfig } from "./config/class.js";
import { BatchDimsProvider } from "./config/classes/batchers.js";
import type { Params, ValuesOf } from "./config/declare.js";
import { type Extension, registerBehaviour } from "./extensions.js";
import { type RecordOf, type SamplerKind, packRecords, packedReply, unpackRecords } from "./samplers.js";

/** How a group's value of a variable is made from its records' values. */
export type DimsCombine = "max" | "sum";

/** The behaviour of a `BatchDimsProvider` written in TypeScript, for a `PredictiveBatcher`. */
export interface DimsProviderBehaviour<V, K extends SamplerKind> {
  /** The records it reads: those of the trainer's sampler. */
  readonly kind: K;
  /**
   * The formula variables of each record, one object per record in order, e.g.
   * `records.map((r) => ({ l: r.tokens.length }))`, without the batch-size variable (a group's is
   * always its record count). Called once per outer batch with all its records.
   */
  recordDims(self: V, records: readonly RecordOf<K>[]): readonly Readonly<Record<string, number>>[];
  /**
   * How a group's value of each variable is made from its records' values: `"max"` (the default,
   * what padding to the longest record costs) or `"sum"` (what concatenating them costs).
   */
  readonly combine?: Readonly<Record<string, DimsCombine>>;
  /** Records whose memory cost is that of a batch of `dims` (the probes measured before training). */
  buildProbeBatch(self: V, dims: Readonly<Record<string, number>>): readonly RecordOf<K>[];
}

const COMBINATIONS: readonly string[] = ["max", "sum"] satisfies DimsCombine[];

/**
 * Dims providers: the core asks `{ kind: "probe", key, dims }` for a probe batch, and
 * `{ kind: "dims", key, records, batch_size_variable }` (with the records' arrays) for the
 * variables of every record of a batch, once per batch.
 */
const dimsProviders: Extension<DimsProviderBehaviour<object, SamplerKind>> = {
  name: "dims provider",
  kindOf: (behaviour) => behaviour.kind,
  answerer: (config, behaviour) => ({ request, floats, ints }) => {
    if (request.kind === "probe") {
      const records = behaviour.buildProbeBatch(config, request.dims as Record<string, number>);
      return packedReply(packRecords(behaviour.kind, [...records]));
    }
    const records = unpackRecords({ json: request.records as Record<string, unknown>, floats, ints });
    const dims = behaviour.recordDims(config, records as never);
    return { json: JSON.stringify(dimsColumns(behaviour, dims, records.length, request.batch_size_variable as string)) };
  },
};

/**
 * Declares a `BatchDimsProvider` whose `recordDims` and `buildProbeBatch` are written in
 * TypeScript: the core calls `buildProbeBatch` while probing memory, and `recordDims` once per
 * outer batch, from which it computes the dimensions of every candidate micro-batch itself.
 */
export function defineBatchDimsProvider<const Id extends string, P extends Params, K extends SamplerKind>(
  typeId: Id,
  params: P,
  behaviour: DimsProviderBehaviour<Config<Id, ValuesOf<(typeof BatchDimsProvider)["params"] & P>>, K>,
  options: Omit<ClassOptions<(typeof BatchDimsProvider)["params"] & P>, "extends"> = {},
): ConfigClass<Id, (typeof BatchDimsProvider)["params"] & P> {
  for (const [name, how] of Object.entries(behaviour.combine ?? {})) {
    if (!COMBINATIONS.includes(how)) throw new TypeError(`${typeId}: combine.${name} is ${JSON.stringify(how)}: use "max" or "sum"`);
  }
  const cls = defineConfig(typeId, params, { ...options, extends: BatchDimsProvider } as never) as unknown as ConfigClass<
    Id,
    (typeof BatchDimsProvider)["params"] & P
  >;
  registerBehaviour(cls, dimsProviders, behaviour as DimsProviderBehaviour<object, SamplerKind>);
  return cls;
}

/**
 * What `recordDims` gave, checked and turned into columns for the core: one array of values per
 * variable, and how each combines.
 */
export function dimsColumns(
  behaviour: DimsProviderBehaviour<object, SamplerKind>,
  dims: readonly Readonly<Record<string, number>>[],
  count: number,
  batchSizeVariable: string,
): { columns: Record<string, number[]>; combine: Record<string, DimsCombine> } {
  if (!Array.isArray(dims) || dims.length !== count) {
    throw new TypeError(`recordDims gave ${Array.isArray(dims) ? `${dims.length} objects` : String(dims)} for ${count} records: give one object per record`);
  }
  const names = Object.keys(dims[0] ?? {}).sort();
  const columns: Record<string, number[]> = Object.fromEntries(names.map((name) => [name, []]));
  dims.forEach((record, i) => {
    const keys = Object.keys(record).sort();
    if (keys.join(",") !== names.join(",")) {
      throw new TypeError(`recordDims gave {${keys.join(", ")}} for record ${i} but {${names.join(", ")}} for record 0: give every record the same variables`);
    }
    for (const name of names) {
      const value = record[name];
      if (name === batchSizeVariable) {
        throw new TypeError(`recordDims gave the batch-size variable "${name}": leave it out, a group's is always its record count`);
      }
      if (!Number.isSafeInteger(value) || (value as number) < 0) throw new TypeError(`recordDims gave ${name} = ${value} for record ${i}, not a whole number`);
      columns[name]!.push(value as number);
    }
  });
  const combine = { ...behaviour.combine };
  for (const name of Object.keys(combine)) {
    if (!names.includes(name)) throw new TypeError(`combine names "${name}", which recordDims does not give (it gives {${names.join(", ")}})`);
  }
  return { columns, combine };
}
