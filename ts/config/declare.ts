import { z } from "zod";

import { ConfigError } from "../errors.js";
import { type ValueDesc, optional } from "./types.js";

/** How a parameter takes part in the experiment (see the spec's `Param`, `Meta`, ...). */
export type ParamKind = "param" | "meta" | "constant" | "generated";

export interface ParamSpec {
  readonly kind: ParamKind;
  readonly value: ValueDesc<unknown, unknown>;
  /** Makes a fresh default (a copy each time); absent when there is none. */
  readonly makeDefault?: () => unknown;
  /** Skip the parameter in identifiers while it equals its default. */
  readonly ignoreDefault: boolean;
  /** The default comes from a factory (`default_factory`). */
  readonly factory: boolean;
  /** Whether the parameter may be left unset (optional type). */
  readonly optional: boolean;
  /** For generated paths: the path relative to the configuration's directory. */
  readonly generatedPath?: string;
  readonly help?: string;
}

/** A declared parameter; `T` its value, `In` what `.C()` accepts, `Opt` whether it may be omitted. */
export class Param<T, In, K extends ParamKind, Opt extends boolean> {
  declare readonly _phantom: { value: T; input: In; kind: K; omittable: Opt };

  constructor(readonly spec: ParamSpec) {}

  /** A default value; with `ignoreDefault` the parameter leaves identifiers while equal to it. */
  default(value: In, options: { ignoreDefault?: boolean } = {}): Param<T, In, K, true> {
    const copy = structuredCloneable(value);
    return new Param({ ...this.spec, makeDefault: copy, ignoreDefault: options.ignoreDefault ?? false });
  }

  /** A default produced by `make` (a configuration, typically). */
  factory(make: () => T, options: { ignoreDefault?: boolean } = {}): Param<T, In, K, true> {
    return new Param({ ...this.spec, makeDefault: make, factory: true, ignoreDefault: options.ignoreDefault ?? false });
  }

  /** The parameter may be left unset (hashed as none, skipped while none). */
  optional(): Param<T | undefined, In | undefined, K, true> {
    return new Param({ ...this.spec, optional: true, value: optional(this.spec.value) });
  }

  help(text: string): this {
    return new Param({ ...this.spec, help: text }) as this;
  }
}

function structuredCloneable<V>(value: V): () => V {
  // Defaults are plain data or frozen configurations; frozen values can be shared as they are.
  if (typeof value !== "object" || value === null || Object.isFrozen(value)) return () => value;
  return () => structuredClone(value);
}

function make<T, In, K extends ParamKind>(kind: K, value: ValueDesc<T, In>): Param<T, In, K, false> {
  return new Param({ kind, value: value as ValueDesc<unknown, unknown>, ignoreDefault: false, factory: false, optional: false });
}

/** A parameter that defines the experiment: it enters the identifier. */
export const param = <T, In>(value: ValueDesc<T, In>) => make("param", value);
/** A parameter that does not change the result (ids, intervals, devices): left out of identifiers. */
export const meta = <T, In>(value: ValueDesc<T, In>) => make("meta", value);
/** A fixed value, always hashed, not settable. */
export function constant<T>(value: ValueDesc<T>, fixed: T): Param<T, never, "constant", true> {
  return new Param({ kind: "constant", value: value as ValueDesc<unknown, unknown>, makeDefault: () => fixed, ignoreDefault: false, factory: false, optional: false });
}
/** A path inside the job directory, set when the task is run; not settable, never hashed. */
export function generated(relative: string): Param<string, never, "generated", true> {
  return new Param({
    kind: "generated",
    value: { zod: z.string(), type: { kind: "path" }, toTyped: (v) => ({ kind: "path", value: v as string }) },
    ignoreDefault: false,
    factory: false,
    optional: true,
    generatedPath: relative,
  });
}

// Type-level views of a parameter record.
type AnyParam = Param<unknown, unknown, ParamKind, boolean> | Param<never, never, ParamKind, boolean>;
export type Params = Record<string, AnyParam>;
type Settable<P extends Params> = {
  [K in keyof P]: P[K] extends Param<infer _T, infer _In, infer Kind, infer _O> ? (Kind extends "generated" | "constant" ? never : K) : never;
}[keyof P];
type OmittableKeys<P extends Params> = {
  [K in Settable<P>]: P[K] extends Param<infer _T, infer _In, infer _K, infer O> ? (O extends true ? K : never) : never;
}[Settable<P>];
type InputOfParam<X> = X extends Param<infer _T, infer In, infer _K, infer _O> ? In : never;
type ValueOfParam<X> = X extends Param<infer T, infer _In, infer _K, infer _O> ? T : never;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** What `.C()` accepts. */
export type InputOf<P extends Params> = Simplify<
  { [K in Exclude<Settable<P>, OmittableKeys<P>>]: InputOfParam<P[K]> } & { [K in OmittableKeys<P>]?: InputOfParam<P[K]> }
>;
/** The values of a built configuration (generated paths are only known once the job exists). */
export type ValuesOf<P extends Params> = {
  readonly [K in keyof P as P[K] extends Param<infer _T, infer _In, "generated", infer _O> ? never : K]: ValueOfParam<P[K]>;
};

/** Reports a rule broken by the values being validated; `path` is relative to the configuration. */
export type Issue = (path: string, message: string) => void;

export { ConfigError };
