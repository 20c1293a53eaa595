import { z } from "zod";

import { ConfigError } from "../errors.js";

/** The key holding a configuration object's type id; always its first key. */
export const TYPE_KEY = "__xpmtype__";

/** A validated, frozen configuration object of type `Id` with values `V`. */
export type Config<Id extends string = string, V extends object = object> = Readonly<{ [TYPE_KEY]: Id } & V>;

/** A configuration class: `Class.C({...})` validates, freezes and returns a configuration. */
export interface ConfigClass<Id extends string, S extends z.ZodRawShape> {
  /** The Python-compatible type id, e.g. `xpm_torch.learner.Learner`. */
  readonly typeId: Id;
  /** The class name, used in messages. */
  readonly name: string;
  readonly schema: z.ZodObject<S>;
  /** Validates `values` (unknown keys rejected) and returns the frozen configuration. */
  C(values: z.input<z.ZodObject<S>>): Config<Id, z.output<z.ZodObject<S>>>;
  /** Whether `value` is a configuration of this class. */
  is(value: unknown): value is Config<Id, z.output<z.ZodObject<S>>>;
}

/** The configuration type a class produces. */
export type ConfigOf<C> = C extends ConfigClass<infer Id, infer S> ? Config<Id, z.output<z.ZodObject<S>>> : never;

function rootName(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

/** Renders a zod path from `root`: `learner.optimizers[0].lr`. */
export function dottedPath(root: string, path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (acc, key) => (typeof key === "number" ? `${acc}[${key}]` : `${acc}.${String(key)}`),
    root,
  );
}

function toConfigError(root: string, error: z.ZodError): ConfigError {
  const issue = error.issues[0];
  if (!issue) return new ConfigError(root, "invalid configuration");
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "";
    return new ConfigError(dottedPath(root, [...issue.path, key]), "unknown parameter");
  }
  return new ConfigError(dottedPath(root, issue.path), issue.message);
}

/** Declares a configuration class from its parameters' zod schemas. */
export function defineConfig<const Id extends string, S extends z.ZodRawShape>(
  name: string,
  typeId: Id,
  shape: S,
): ConfigClass<Id, S> {
  const schema = z.strictObject(shape) as unknown as z.ZodObject<S>;
  const root = rootName(name);
  const isConfig = (value: unknown): value is Config<Id, z.output<z.ZodObject<S>>> =>
    typeof value === "object" && value !== null && (value as Record<string, unknown>)[TYPE_KEY] === typeId;
  return {
    typeId,
    name,
    schema,
    C(values) {
      // `{ ...existing, changed }` copies the type key along: accept it when it names this class.
      const { [TYPE_KEY]: declared, ...rest } = values as Record<string, unknown>;
      if (declared !== undefined && declared !== typeId) {
        throw new ConfigError(`${root}.${TYPE_KEY}`, `is ${JSON.stringify(declared)}, expected ${JSON.stringify(typeId)}`);
      }
      const parsed = schema.safeParse(rest);
      if (!parsed.success) throw toConfigError(root, parsed.error);
      return Object.freeze({ [TYPE_KEY]: typeId, ...parsed.data }) as Config<Id, z.output<z.ZodObject<S>>>;
    },
    is: isConfig,
  };
}

/** A parameter holding a configuration of one of `classes`. */
export function configOf<const C extends readonly ConfigClass<string, z.ZodRawShape>[]>(
  ...classes: C
): z.ZodType<ConfigOf<C[number]>> {
  const names = classes.map((c) => c.name).join(" or ");
  return z.custom<ConfigOf<C[number]>>((value) => classes.some((c) => c.is(value)), {
    message: `expected a ${names} configuration (made with ${classes[0]?.name}.C({...}))`,
  });
}

/** Non-negative integer that JSON carries exactly. */
export const count = () => z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
/** Integer ≥ 1. */
export const positive = () => z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);
/** A finite number (NaN and ±Infinity rejected). */
export const finite = () => z.number();
