// The TypeScript classes are the configuration's source; the Rust serde mirrors must read
// exactly what they describe. Every check is derived from the JSON Schema the classes emit
// (`xpm-torch schema`) and applied to the Rust mirror through readConfig, starting from the
// contract sample of each class (the contract test keeps one for every buildable class), so a
// class added on either side is covered without touching this file.
import { describe, expect, it } from "vitest";

import { TYPE_KEY, registeredClasses } from "../ts/config/class.js";
import "../ts/config/classes/index.js";
import { configJsonSchema } from "../ts/config/json-schema.js";
import { toWire } from "../ts/config/wire.js";
import { ConfigError, XpmTorchError, unwrapOutcome } from "../ts/errors.js";
import { loadNative } from "../ts/native.js";
import { SAMPLES, rebuilt } from "./helpers/samples.js";

type Schema = Record<string, unknown> & { type?: string | string[]; anyOf?: Schema[]; $ref?: string; enum?: unknown[]; const?: unknown };
type Wire = Record<string, unknown>;

const { binding } = loadNative();
const defs = configJsonSchema().$defs as Record<string, { properties: Record<string, Schema>; required: string[] }>;

/** What Rust reads back, or the ConfigError it raises. */
function rustReads(wire: Wire): { value: unknown } | { error: ConfigError } {
  try {
    return { value: unwrapOutcome(binding.readConfig(JSON.stringify(wire))) };
  } catch (error) {
    if (error instanceof ConfigError) return { error };
    throw error;
  }
}

/** A JSON value of another type than every type `schema` allows, or undefined when it allows any. */
function wrongTypeFor(schema: Schema): unknown {
  const types = new Set<string>();
  const collect = (s: Schema): boolean => {
    if (s.$ref) types.add("object");
    else if (s.anyOf) return s.anyOf.every(collect);
    else if (s.enum) s.enum.forEach((v) => types.add(typeof v));
    else if (s.const !== undefined) types.add(typeof s.const);
    else if (typeof s.type === "string") types.add(s.type === "integer" ? "number" : s.type);
    else if (Array.isArray(s.type)) s.type.forEach((t) => types.add(t === "integer" ? "number" : t));
    else return false;
    return true;
  };
  if (!collect(schema)) return undefined;
  if (!types.has("string")) return "not of this type";
  if (!types.has("boolean")) return true;
  return undefined;
}

const withField = (wire: Wire, name: string, value: unknown): Wire => ({ ...wire, [name]: value });
const withoutField = (wire: Wire, name: string): Wire => Object.fromEntries(Object.entries(wire).filter(([k]) => k !== name));

const classes = new Map(registeredClasses().map((cls) => [cls.typeId, cls]));
/** Parameters TypeScript may leave out of the wire (unset optional ones). */
const omissibleOf = (typeId: string) =>
  new Set(Object.entries(classes.get(typeId)!.params).flatMap(([name, { spec }]) => (spec.optional ? [name] : [])));

/** What the wire holds beside the parameters: what the class derives for the core (`ClassOptions.wire`). */
const derivedOf = (typeId: string, wire: Wire) => Object.keys(wire).filter((k) => k !== TYPE_KEY && !(k in classes.get(typeId)!.params));

/**
 * Whether TypeScript accepts a configuration without `name` and writes its wire without it: a
 * parameter left out may still reach the core derived (a Hub model's `path`), or be refused
 * only when the wire is written (that model not in the cache).
 */
function wireOmits(built: ReturnType<typeof rebuilt>, name: string): boolean {
  if (!("config" in built)) return false;
  try {
    return !(name in (toWire(built.config) as Wire));
  } catch (error) {
    if (error instanceof XpmTorchError) return false;
    throw error;
  }
}

/** The classes with a contract sample, each with its wire and its schema. */
const cases = Object.keys(SAMPLES)
  .filter((typeId) => typeId in defs)
  .map((typeId) => {
    const wire = toWire(SAMPLES[typeId]!()) as Wire;
    return { typeId, wire, def: defs[typeId]!, omissible: omissibleOf(typeId), derived: derivedOf(typeId, wire) };
  });

describe("the Rust mirrors agree with the TypeScript schema", () => {
  it("covers every class of the schema that has a sample", () => {
    expect(cases.length).toBeGreaterThan(50);
    for (const { wire, typeId } of cases) expect(wire[TYPE_KEY]).toBe(typeId);
    // The formula's expanded terms: the core has no parser of its own.
    expect(cases.find((c) => c.typeId === "xpm_torch.batchers.PredictiveBatcher")?.derived).toEqual(["formula_terms"]);
  });

  it.each(cases)("$typeId: the same names, types and optionality", ({ typeId, wire, def, omissible, derived }) => {
    const problems: string[] = [];
    for (const [name, schema] of Object.entries(def.properties)) {
      if (name === TYPE_KEY) continue;
      // Optionality: a field TypeScript may leave out (unset optional), Rust must not ask for;
      // one the user must give, Rust must not invent a default for. Parameters with defaults
      // are always written out, so either reading of them is right.
      const missing = rustReads(withoutField(wire, name));
      // Leaving it out may break a rule across fields, which TypeScript refuses too.
      const typescriptOmits = omissible.has(name) && wireOmits(rebuilt(typeId, { [name]: undefined }), name);
      if (typescriptOmits && "error" in missing) problems.push(`${name}: optional in TypeScript, required by Rust (${missing.error.message})`);
      if (def.required.includes(name) && "value" in missing) problems.push(`${name}: required in TypeScript, Rust reads the object without it`);
      // Names and types: a value of another type must be refused at this field.
      const wrong = wrongTypeFor(schema);
      if (wrong !== undefined) {
        const read = rustReads(withField(wire, name, wrong));
        if ("value" in read) problems.push(`${name}: Rust accepts ${JSON.stringify(wrong)} where TypeScript wants ${JSON.stringify(schema)}`);
        else if (/unknown field/.test(read.error.message)) problems.push(`${name}: unknown to Rust (${read.error.message})`);
        else if (!`${read.error.path} ${read.error.message}`.includes(name)) problems.push(`${name}: Rust refuses another field (${read.error.message})`);
      }
    }
    // What TypeScript derives for the core, Rust must require, at its type.
    for (const name of derived) {
      if ("value" in rustReads(withoutField(wire, name))) problems.push(`${name}: derived for the core, but Rust reads the object without it`);
      const wrong = rustReads(withField(wire, name, true));
      if ("value" in wrong) problems.push(`${name}: Rust accepts true where TypeScript derives ${JSON.stringify(wire[name])}`);
      else if (!`${wrong.error.path} ${wrong.error.message}`.includes(name)) problems.push(`${name}: Rust refuses another field (${wrong.error.message})`);
    }
    // Names the other way: what Rust writes back, TypeScript must declare or derive (constants
    // and generated paths included, which the schema leaves out).
    const read = rustReads(wire);
    const known = new Set([TYPE_KEY, ...Object.keys(classes.get(wire[TYPE_KEY] as string)!.params), ...derived]);
    if ("value" in read) problems.push(...Object.keys(read.value as Wire).filter((k) => !known.has(k)).map((k) => `${k}: a Rust field TypeScript does not declare`));
    else problems.push(`the sample itself is refused: ${read.error.message}`);
    expect(problems).toEqual([]);
  });

  it.each(cases)("$typeId: every number TypeScript allows fits the Rust type", ({ typeId, wire, def }) => {
    const problems: string[] = [];
    for (const [name, schema] of Object.entries(def.properties)) {
      if (schema.type !== "integer" && schema.type !== "number") continue;
      const bounds = [schema.minimum, schema.maximum, schema.exclusiveMinimum, schema.exclusiveMaximum];
      const [min, max, exclusiveMin, exclusiveMax] = bounds as (number | undefined)[];
      const step = schema.type === "integer" ? 1 : 0.5;
      const edges = [
        min ?? (exclusiveMin !== undefined ? exclusiveMin + step : -Number.MAX_SAFE_INTEGER),
        max ?? (exclusiveMax !== undefined ? exclusiveMax - step : Number.MAX_SAFE_INTEGER),
      ];
      // An edge that breaks a rule across fields (heads dividing dim, ...) is not allowed.
      for (const edge of edges.filter((e) => "config" in rebuilt(typeId, { [name]: e }))) {
        const read = rustReads(withField(wire, name, edge));
        if ("error" in read) problems.push(`${name} = ${edge}: allowed by TypeScript, refused by Rust (${read.error.message})`);
        else if ((read.value as Wire)[name] !== edge) problems.push(`${name} = ${edge}: Rust reads back ${JSON.stringify((read.value as Wire)[name])}`);
      }
    }
    expect(problems).toEqual([]);
  });
});
