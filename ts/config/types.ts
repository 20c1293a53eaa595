import { z } from "zod";

import type { TypedValue, ValueType } from "../identity/values.js";

/**
 * A parameter's value type: its zod schema (validation and TypeScript types) together with what
 * identifiers need (the declared kind, so that 3 hashes as an int or a float as declared) and
 * the conversion of a validated value to an identifier value.
 */
export interface ValueDesc<T, In = T> {
  readonly zod: z.ZodType<T, In>;
  readonly type: ValueType;
  /** Converts a validated value; `configNode` maps nested configurations. */
  toTyped(value: T, configNode: (config: object) => TypedValue): TypedValue;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** An integer (JSON-safe: |n| ≤ 2^53 − 1). Chain zod refinements through `refine`. */
export function int(refine: (s: z.ZodNumber) => z.ZodNumber = (s) => s): ValueDesc<number> {
  return {
    zod: refine(z.number().int().min(-MAX_SAFE).max(MAX_SAFE)),
    type: { kind: "int" },
    toTyped: (v) => ({ kind: "int", value: BigInt(v) }),
  };
}

/** A finite float (NaN and ±Infinity are rejected). */
export function float(refine: (s: z.ZodNumber) => z.ZodNumber = (s) => s): ValueDesc<number> {
  return { zod: refine(z.number()), type: { kind: "float" }, toTyped: (v) => ({ kind: "float", value: v }) };
}

export function str(refine: (s: z.ZodString) => z.ZodType<string, string> = (s) => s): ValueDesc<string> {
  return { zod: refine(z.string()), type: { kind: "str" }, toTyped: (v) => ({ kind: "str", value: v }) };
}

export function bool(): ValueDesc<boolean> {
  return { zod: z.boolean(), type: { kind: "bool" }, toTyped: (v) => ({ kind: "bool", value: v }) };
}

/** A filesystem path; never part of an identifier. */
export function path(): ValueDesc<string> {
  return { zod: z.string().min(1), type: { kind: "path" }, toTyped: (v) => ({ kind: "path", value: v }) };
}

/** One of fixed string values, hashed as a string (a `str`-mixin enum in Python). */
export function literal<const V extends readonly [string, ...string[]]>(values: V): ValueDesc<V[number]> {
  return {
    zod: z.enum(values) as unknown as z.ZodType<V[number], V[number]>,
    type: { kind: "str" },
    toTyped: (v) => ({ kind: "str", value: v }),
  };
}

/** A list; `length` fixes how many items it holds (the core reads it as a tuple). */
export function list<T, In>(item: ValueDesc<T, In>, options: { readonly length?: number } = {}): ValueDesc<readonly T[], readonly In[]> {
  const array = options.length === undefined ? z.array(item.zod) : z.array(item.zod).length(options.length);
  return {
    zod: array.readonly() as unknown as z.ZodType<readonly T[], readonly In[]>,
    type: { kind: "list", item: item.type },
    toTyped: (v, node) => ({ kind: "list", items: v.map((x) => item.toTyped(x, node)) }),
  };
}

/** A set; give it a {@link SealedSet} (see `sealedSet`) or an array without duplicates. */
export function set<T, In>(item: ValueDesc<T, In>): ValueDesc<ReadonlySet<T>, ReadonlySet<In> | readonly In[]> {
  const schema = z
    .union([z.set(item.zod), z.array(item.zod)])
    .transform((v, ctx) => {
      const items = [...v];
      const result = sealedSet(...items);
      if (result.size !== items.length) ctx.addIssue({ code: "custom", message: "a set cannot hold the same value twice" });
      return result;
    });
  return {
    zod: schema as unknown as z.ZodType<ReadonlySet<T>, ReadonlySet<In> | readonly In[]>,
    type: { kind: "set", item: item.type },
    toTyped: (v, node) => ({ kind: "set", items: [...v].map((x) => item.toTyped(x, node)) }),
  };
}

/** A string-keyed dictionary (a plain object). */
export function dict<T, In>(value: ValueDesc<T, In>): ValueDesc<Readonly<Record<string, T>>, Readonly<Record<string, In>>> {
  return {
    zod: z.record(z.string(), value.zod).readonly() as unknown as z.ZodType<
      Readonly<Record<string, T>>,
      Readonly<Record<string, In>>
    >,
    type: { kind: "dict", key: { kind: "str" }, value: value.type },
    toTyped: (v, node) => ({
      kind: "dict",
      entries: Object.entries(v).map(([k, x]) => ({ key: { kind: "str", value: k }, value: value.toTyped(x, node) })),
    }),
  };
}

/** A value that may be absent (`undefined`, hashed as none). */
export function optional<T, In>(inner: ValueDesc<T, In>): ValueDesc<T | undefined, In | undefined> {
  return {
    zod: inner.zod.optional() as unknown as z.ZodType<T | undefined, In | undefined>,
    type: { kind: "optional", inner: inner.type },
    toTyped: (v, node) => (v === undefined ? { kind: "none" } : inner.toTyped(v, node)),
  };
}

/** A set that refuses changes once built, so that configurations holding it stay immutable. */
class SealedSet<T> extends Set<T> {
  #sealed = false;

  constructor(items: Iterable<T>) {
    super();
    for (const item of items) super.add(item);
    this.#sealed = true;
    Object.freeze(this);
  }

  override add(value: T): this {
    if (this.#sealed) throw new TypeError("a sealed set cannot be changed");
    return super.add(value);
  }

  override delete(): boolean {
    throw new TypeError("a sealed set cannot be changed");
  }

  override clear(): void {
    throw new TypeError("a sealed set cannot be changed");
  }
}

/** An immutable set for set-valued parameters (the `sealed_set` of the Python API). */
export function sealedSet<T>(...items: T[]): ReadonlySet<T> {
  return new SealedSet(items);
}
