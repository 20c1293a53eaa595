import { z } from "zod";

import { ConfigError } from "../errors.js";
import type { InputOf, Issue, Params, ParamSpec, ValuesOf } from "./declare.js";
import { ruleMessage, ruleOfIssue } from "./rules.js";
import type { ValueDesc } from "./types.js";

/** The key holding a configuration object's type id; always its first key. */
export const TYPE_KEY = "__xpmtype__";

/** A validated, frozen configuration object of type `Id` with values `V`. */
export type Config<Id extends string = string, V extends object = object> = Readonly<{ [TYPE_KEY]: Id }> & V;

export interface ClassOptions<P extends Params> {
  /** Cross-field rules and canonicalisation; runs after the schema, before freezing. */
  validate?(values: ValuesOf<P>, issue: Issue): Partial<ValuesOf<P>> | void;
  /**
   * What the core reads beside the parameters, derived from them once here rather than again in
   * Rust (e.g. a formula's expanded terms). Never part of the identity.
   */
  wire?(values: ValuesOf<P>): Readonly<Record<string, Wire>>;
  /**
   * The JSON Schema of the fields the wire carries beside the parameters (what `wire` adds, or
   * the bridge), so that the core's types, generated from the schema, read them; `defs` are the
   * records they refer to (`#/$defs/<name>`).
   */
  readonly wireSchema?: WireSchema;
  /** `task` for what `learn()` runs; informative otherwise. */
  readonly kind?: "config" | "task";
  /** Object identity matters (see identifiers.md §6.3). */
  readonly instance?: boolean;
  /** No `.C()`: only subclasses can be built. */
  readonly abstract?: boolean;
  /**
   * Objects of this class and its subclasses may be written in TypeScript: the core gets
   * stand-ins. `true` leaves their `kind` free; `{ kinds }` lists the values it may take, which
   * the schema declares in the positions of the class so that the core's types name them.
   */
  readonly standIn?: true | StandIn;
  readonly help?: string;
}

/** What the stand-ins of a class written in TypeScript tell the core (see `ClassOptions.standIn`). */
export interface StandIn {
  /** The values of a stand-in's `kind`: what the core must know of its behaviour to build it. */
  readonly kinds: readonly string[];
}

/** A JSON value of the document the core reads (ts/config/wire.ts writes it). */
export type Wire = null | boolean | number | string | Wire[] | { [key: string]: Wire };

/** JSON Schema of wire-only fields (see {@link ClassOptions.wireSchema}). */
export interface WireSchema {
  readonly properties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly required?: readonly string[];
  readonly defs?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

/** A configuration class: `Class.C({...})` validates, freezes and returns a configuration. */
export interface ConfigClass<Id extends string = string, P extends Params = Params> {
  /** Python-compatible type id, case preserved, e.g. `xpm_torch.learner.Learner`. */
  readonly typeId: Id;
  /** The class name (last component of the type id). */
  readonly name: string;
  readonly parent: AnyConfigClass | undefined;
  /** Every parameter, inherited ones first, in declaration order. */
  readonly params: P;
  readonly options: ClassOptions<P>;
  /** Validates `values` and returns the frozen configuration. Errors name the parameter path. */
  C(values: InputOf<P>): Config<Id, ValuesOf<P>>;
  /** Whether `value` is a configuration of this class or of a subclass. */
  is(value: unknown): value is Config<string, ValuesOf<P>>;
}

// Erased view, for code that handles any class.
export interface AnyConfigClass {
  readonly typeId: string;
  readonly name: string;
  readonly parent: AnyConfigClass | undefined;
  readonly params: Params;
  readonly options: ClassOptions<Params>;
  is(value: unknown): boolean;
}

/** The configuration type a class produces. */
export type ConfigOf<C> = C extends ConfigClass<infer Id, infer P> ? Config<Id, ValuesOf<P>> : never;
/** A configuration of class `C` or of any subclass. */
export type InstanceOf<C> = C extends { is(value: unknown): value is infer X } ? X : never;

/** What `configOf` needs of a class. */
export interface ClassRef {
  readonly typeId: string;
  readonly name: string;
  is(value: unknown): boolean;
}

const classOf = new WeakMap<object, AnyConfigClass>();
const classesById = new Map<string, AnyConfigClass>();

/** The class of a configuration object, or undefined for anything else. */
export function configClassOf(value: unknown): AnyConfigClass | undefined {
  return typeof value === "object" && value !== null ? classOf.get(value) : undefined;
}

/** The registered class with this type id (case-insensitive, as identifiers are). */
export function classById(typeId: string): AnyConfigClass | undefined {
  return classesById.get(typeId.toLowerCase());
}

export function registeredClasses(): AnyConfigClass[] {
  return [...classesById.values()];
}

/** What `table` holds for the class of `config` or its nearest ancestor. */
export function lookupByClass<T>(table: WeakMap<object, T>, config: object): T | undefined {
  for (let c = configClassOf(config); c; c = c.parent) {
    const found = table.get(c);
    if (found !== undefined) return found;
  }
  return undefined;
}

export function isSubclass(cls: AnyConfigClass, ancestor: AnyConfigClass): boolean {
  for (let c: AnyConfigClass | undefined = cls; c; c = c.parent) if (c === ancestor) return true;
  return false;
}

export function lowerFirst(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

/** Renders a path from `root`: `learner.optimizers[0].lr`. */
export function dottedPath(root: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>((acc, key) => (typeof key === "number" ? `${acc}[${key}]` : `${acc}.${String(key)}`), root);
}

/** The value at `path` inside `input` (what a zod issue points at). */
function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let value = input;
  for (const key of path) {
    if (value instanceof Set) value = [...value][key as number];
    else if (typeof value === "object" && value !== null) value = (value as Record<PropertyKey, unknown>)[key];
    else return undefined;
  }
  return value;
}

/** What a union's failure comes down to: the first issue of the branch that got past the type. */
function innermost(issue: z.core.$ZodIssue): z.core.$ZodIssue {
  if (issue.code !== "invalid_union") return issue;
  const branch = issue.errors.find((issues) => issues.some((i) => i.path.length > 0 || i.code !== "invalid_type"));
  const first = branch?.[0];
  return first ? innermost({ ...first, path: [...issue.path, ...first.path] }) : issue;
}

/**
 * The name of `names` nearest to `name`, as tsc picks its "Did you mean ...?": one differing
 * only in case, else the closest by edit distance (a change of case costing 0.1) under
 * 0.4 × its length + 1, among names of about its length.
 */
function nearestName(name: string, names: readonly string[]): string | undefined {
  const lengthSlack = Math.max(2, Math.floor(name.length * 0.34));
  let best: string | undefined;
  let bestDistance = Math.floor(name.length * 0.4) + 1;
  for (const candidate of names) {
    if (candidate === name || Math.abs(candidate.length - name.length) > lengthSlack) continue;
    if (candidate.toLowerCase() === name.toLowerCase()) return candidate;
    if (candidate.length < 3) continue;
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** Levenshtein distance where substituting a letter by itself in another case costs 0.1. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const x = a[i - 1]!;
      const y = b[j - 1]!;
      const substitution = x === y ? 0 : x.toLowerCase() === y.toLowerCase() ? 0.1 : 1;
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

function toConfigError(root: string, error: z.ZodError, input: unknown, schema: z.ZodObject): ConfigError {
  // A misspelt key is also a missing one: the unknown key, with its nearest name, says why.
  const first = error.issues.find((i) => i.code === "unrecognized_keys" && i.path.length === 0) ?? error.issues[0];
  if (!first) return new ConfigError(root, "invalid configuration");
  const issue = innermost(first);
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "";
    // The parameters of the class itself; a nested object's keys are not at hand.
    const suggestion = issue.path.length === 0 ? nearestName(key, Object.keys(schema.shape)) : undefined;
    const message = suggestion === undefined ? "unknown parameter" : `unknown parameter; did you mean ${suggestion}?`;
    return new ConfigError(dottedPath(root, [...issue.path, key]), message, { suggestion });
  }
  const got = valueAt(input, issue.path);
  if (issue.code === "invalid_type" && got === undefined) {
    return new ConfigError(dottedPath(root, issue.path), "required parameter is missing");
  }
  const rule = ruleOfIssue(issue);
  return new ConfigError(dottedPath(root, issue.path), rule ? ruleMessage(rule, got) : issue.message);
}

function specOf(params: Params, name: string): ParamSpec | undefined {
  return params[name]?.spec;
}

/**
 * Declares a configuration class. `ownParams` are its own parameters; with `extends`, the
 * parent's come first. The type id is the Python one (`module.ClassName`), so identifiers, job
 * directories and params.json match the Python library.
 */
export function defineConfig<const Id extends string, P extends Params, PP extends Params = {}>(
  typeId: Id,
  ownParams: P,
  options: ClassOptions<PP & P> & { readonly extends?: ConfigClass<string, PP> } = {},
): ConfigClass<Id, PP & P> {
  const parent = options.extends;
  const params = { ...(parent?.params ?? {}), ...ownParams } as PP & P;
  const name = typeId.slice(typeId.lastIndexOf(".") + 1);
  const root = lowerFirst(name);
  const shape: Record<string, z.ZodType> = {};
  for (const [key, p] of Object.entries(params)) {
    if (p.spec.kind !== "generated" && p.spec.kind !== "constant") shape[key] = p.spec.value.zod;
  }
  const schema = z.strictObject(shape);

  const cls: ConfigClass<Id, PP & P> = {
    typeId,
    name,
    parent: parent as AnyConfigClass | undefined,
    params,
    options,
    C(values) {
      if (options.abstract) throw new ConfigError(root, `${name} is abstract: build one of its subclasses`);
      // `{ ...existing, changed }` copies the type key along: accept it when it names this class.
      const { [TYPE_KEY]: declared, ...given } = values as Record<string, unknown>;
      if (declared !== undefined && declared !== typeId) {
        throw new ConfigError(`${root}.${TYPE_KEY}`, `is ${JSON.stringify(declared)}, expected ${JSON.stringify(typeId)}`);
      }
      const withDefaults: Record<string, unknown> = {};
      for (const [key, p] of Object.entries(params)) {
        const spec = p.spec;
        if (spec.kind === "generated") continue;
        if (spec.kind === "constant") {
          if (key in given) throw new ConfigError(`${root}.${key}`, "is a constant and cannot be set");
          continue;
        }
        if (key in given && given[key] !== undefined) withDefaults[key] = given[key];
        else if (spec.makeDefault) withDefaults[key] = spec.makeDefault();
      }
      for (const key of Object.keys(given)) {
        if (specOf(params, key)?.kind === "generated") {
          throw new ConfigError(`${root}.${key}`, "is generated from the job directory and cannot be set");
        }
        if (!(key in withDefaults) && !(key in params)) withDefaults[key] = given[key];
      }
      const parsed = schema.safeParse(withDefaults);
      if (!parsed.success) throw toConfigError(root, parsed.error, withDefaults, schema);
      let result: Record<string, unknown> = { ...parsed.data };
      for (const [key, p] of Object.entries(params)) {
        if (p.spec.kind === "constant") result[key] = p.spec.makeDefault?.();
      }
      if (options.validate) {
        const issues: ConfigError[] = [];
        const issue: Issue = (path, message) => issues.push(new ConfigError(path ? `${root}.${path}` : root, message));
        const changes = options.validate(result as ValuesOf<PP & P>, issue);
        const first = issues[0];
        if (first) throw first;
        if (changes) result = revalidate(root, schema, { ...result, ...changes });
      }
      const config = Object.freeze({ [TYPE_KEY]: typeId, ...result }) as Config<Id, ValuesOf<PP & P>>;
      classOf.set(config, cls as unknown as AnyConfigClass);
      return config;
    },
    is(value: unknown): value is Config<string, ValuesOf<PP & P>> {
      const c = configClassOf(value);
      return c !== undefined && isSubclass(c, cls as unknown as AnyConfigClass);
    },
  };
  const key = typeId.toLowerCase();
  if (classesById.has(key)) throw new Error(`configuration type ${typeId} is declared twice`);
  classesById.set(key, cls as unknown as AnyConfigClass);
  return cls;
}

function revalidate(root: string, schema: z.ZodObject, values: Record<string, unknown>): Record<string, unknown> {
  const settable = Object.fromEntries(Object.entries(values).filter(([k]) => k in schema.shape));
  const parsed = schema.safeParse(settable);
  if (!parsed.success) throw toConfigError(root, parsed.error, settable, schema);
  return { ...values, ...parsed.data };
}

/**
 * A parameter holding a configuration of one of several unrelated `classes`, the union named
 * `name` (the core's type of such a position is named after it).
 */
export function configUnion<const C extends readonly ClassRef[]>(name: string, ...classes: C): ValueDesc<InstanceOf<C[number]>> {
  const desc = configOf(...classes);
  return desc.type.kind === "config" ? { ...desc, type: { ...desc.type, union: name } } : desc;
}

/** A parameter holding a configuration of one of `classes` (or of their subclasses). */
export function configOf<const C extends readonly ClassRef[]>(
  ...classes: C
): ValueDesc<InstanceOf<C[number]>> {
  const names = classes.map((c) => c.name).join(" or ");
  return {
    zod: z.custom<InstanceOf<C[number]>>((value) => classes.some((c) => c.is(value)), {
      message: `expected a ${names} configuration (made with ${classes[0]?.name}.C({...}))`,
    }),
    type: { kind: "config", typeId: (classes[0]?.typeId ?? "").toLowerCase(), classes: classes.map((c) => c.typeId) },
    toTyped: (value, node) => node(value as object),
  };
}
