import { z } from "zod";

import type { ValueType } from "../identity/values.js";
import { TYPE_KEY, type AnyConfigClass, type StandIn, configClassOf, isSubclass, registeredClasses } from "./class.js";
import { JS_OBJECT, type Wire, toWire } from "./wire.js";

type Schema = Record<string, unknown>;
type Defs = Record<string, Schema>;
type ConfigValueType = Extract<ValueType, { kind: "config" }>;

const ref = (key: string): Schema => ({ $ref: `#/$defs/${key}` });

/**
 * How objects of `cls` written in TypeScript reach the core as stand-ins (its nearest ancestor's
 * `standIn` option), or `undefined` when they cannot be written in TypeScript.
 */
function standInOf(cls: AnyConfigClass): true | StandIn | undefined {
  for (let c: AnyConfigClass | undefined = cls; c; c = c.parent) if (c.options.standIn) return c.options.standIn;
  return undefined;
}

/**
 * The stand-in in a position that `standIns` may be written for: a plain reference when any of
 * them leaves the kind free, otherwise one that declares the kinds (the core names them).
 */
function standInRef(standIns: readonly (true | StandIn)[]): Schema {
  if (standIns.some((s) => s === true)) return ref(JS_OBJECT);
  const kinds = [...new Set(standIns.flatMap((s) => (s === true ? [] : s.kinds)))];
  return { ...ref(JS_OBJECT), properties: { kind: { enum: kinds } } };
}

/**
 * A position typed with `typeIds`: the concrete class when only one fits, otherwise a reference
 * to the position's own definition, keyed by the base class's type id (by the union's name for
 * a union of classes, `*` after a concrete base) and holding the `anyOf` of what fits there, a
 * stand-in included.
 */
function configRef(type: ConfigValueType, classes: readonly AnyConfigClass[], defs: Defs): Schema {
  const typeIds = type.classes ?? [type.typeId];
  const bases = typeIds.flatMap((id) => classes.filter((c) => c.typeId.toLowerCase() === id.toLowerCase()));
  const concrete = classes.filter((c) => !c.options.abstract && bases.some((base) => isSubclass(c, base)));
  const keys = concrete.map((c) => c.typeId);
  const standIns = concrete.flatMap((c) => standInOf(c) ?? []);
  if (standIns.length > 0) keys.push(JS_OBJECT);
  if (keys.length === 1) return ref(keys[0] as string);
  const key = type.union ?? bases.map((base) => base.typeId).join("|");
  // A concrete base has its class definition under its own type id: `*` says "and subclasses".
  const positionKey = bases.length === 1 && !bases[0]?.options.abstract ? `${key}*` : key;
  defs[positionKey] = { anyOf: keys.map((k) => (k === JS_OBJECT ? standInRef(standIns) : ref(k))) };
  return ref(positionKey);
}

/** The zod type of the items of a list or set, or of the values of a dict. */
function itemZod(zodType: z.ZodType): z.ZodType {
  if (zodType instanceof z.ZodOptional || zodType instanceof z.ZodReadonly) return itemZod(zodType.unwrap() as z.ZodType);
  if (zodType instanceof z.ZodPipe) return itemZod(zodType.in as z.ZodType);
  if (zodType instanceof z.ZodUnion) {
    const array = (zodType.options as z.ZodType[]).find((o) => o instanceof z.ZodArray);
    return array ? itemZod(array) : z.any();
  }
  if (zodType instanceof z.ZodArray) return zodType.element as z.ZodType;
  if (zodType instanceof z.ZodRecord) return zodType.valueType as z.ZodType;
  return z.any();
}

function valueSchema(type: ValueType, zodType: z.ZodType, classes: readonly AnyConfigClass[], defs: Defs): Schema {
  switch (type.kind) {
    case "config":
      return configRef(type, classes, defs);
    case "optional":
      return valueSchema(type.inner, zodType instanceof z.ZodOptional ? (zodType.unwrap() as z.ZodType) : zodType, classes, defs);
    case "list":
      return { ...lengthRules(zodType), type: "array", items: valueSchema(type.item, itemZod(zodType), classes, defs) };
    case "set":
      return { type: "array", uniqueItems: true, items: valueSchema(type.item, itemZod(zodType), classes, defs) };
    case "dict":
      return { type: "object", additionalProperties: valueSchema(type.value, itemZod(zodType), classes, defs) };
    default:
      try {
        // The value rules (bounds, enums, patterns) travel in these keywords: the core checks
        // configurations against them (crates/core/src/config/rules.rs).
        const { $schema: _, ...schema } = z.toJSONSchema(zodType, { io: "input", unrepresentable: "any" }) as Schema;
        return schema;
      } catch {
        return {};
      }
  }
}

/** The `minItems`/`maxItems` of a list (e.g. `.length(2)`), which the core reads as a tuple. */
function lengthRules(zodType: z.ZodType): Schema {
  try {
    const { minItems, maxItems } = z.toJSONSchema(zodType, { io: "input", unrepresentable: "any" }) as Schema;
    return { ...(minItems === undefined ? {} : { minItems }), ...(maxItems === undefined ? {} : { maxItems }) };
  } catch {
    return {};
  }
}

/** A default as the core receives it (configurations in the wire format, sets as arrays). */
function plain(value: unknown): Wire {
  if (value === null || typeof value !== "object") return (value ?? null) as Wire;
  if (configClassOf(value)) return toWire(value);
  if (value instanceof Set || Array.isArray(value)) return [...value].map(plain);
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
}

/** The stand-in of an object written in TypeScript (ts/run/bridge.ts), as the core reads it. */
const JS_OBJECT_SCHEMA: Schema = {
  type: "object",
  properties: {
    [TYPE_KEY]: { const: JS_OBJECT },
    key: { type: "string", description: "The key the JavaScript side knows it by" },
    class: { type: "string", description: "Its own type id (for messages)" },
    kind: { type: "string", description: "What the core must know of its behaviour to build it" },
    params: { type: "object", description: "Its parameters, as any configuration's" },
  },
  required: [TYPE_KEY, "key", "class", "kind", "params"],
  additionalProperties: false,
};

function classSchema(cls: AnyConfigClass, classes: readonly AnyConfigClass[], defs: Defs): Schema {
  const properties: Record<string, Schema> = { [TYPE_KEY]: { const: cls.typeId } };
  const required: string[] = [TYPE_KEY];
  for (const [name, { spec }] of Object.entries(cls.params)) {
    // Generated paths are filled in by the run (readOnly); constants are fixed (const).
    const schema: Schema =
      spec.kind === "generated"
        ? { type: "string", readOnly: true }
        : spec.kind === "constant"
          ? { const: spec.makeDefault?.() }
          : valueSchema(spec.value.type, spec.value.zod, classes, defs);
    if (spec.help) schema.description = spec.help;
    // Every value reaches the core, defaults included: only optional ones may be absent there.
    if (spec.makeDefault && spec.kind !== "constant") schema.default = plain(spec.makeDefault());
    properties[name] = schema;
    if (!spec.makeDefault && !spec.optional) required.push(name);
  }
  const wire = cls.options.wireSchema;
  if (wire) {
    Object.assign(properties, wire.properties);
    required.push(...(wire.required ?? []));
    Object.assign(defs, wire.defs);
  }
  return { type: "object", properties, required, additionalProperties: false };
}

/**
 * A JSON Schema (draft 2020-12) of every configuration class, for editors and for the core (its
 * value rules and its Rust types are read from it): one definition per class under `$defs`, named
 * by type id. A position that several classes fit refers to its own definition, named by the
 * class it is typed with, listing them.
 */
export function configJsonSchema(): Schema {
  const classes = registeredClasses();
  const defs: Defs = {};
  for (const cls of classes) {
    if (!cls.options.abstract) defs[cls.typeId] = classSchema(cls, classes, defs);
  }
  defs[JS_OBJECT] = JS_OBJECT_SCHEMA;
  return { $schema: "https://json-schema.org/draft/2020-12/schema", title: "xpm-torch configurations", $defs: defs };
}
