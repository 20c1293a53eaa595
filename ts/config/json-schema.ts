import { z } from "zod";

import type { ValueType } from "../identity/values.js";
import { TYPE_KEY, type AnyConfigClass, isSubclass, registeredClasses } from "./class.js";

type Schema = Record<string, unknown>;

function defName(cls: AnyConfigClass): string {
  return cls.typeId;
}

function configRef(typeId: string, classes: readonly AnyConfigClass[]): Schema {
  const base = classes.find((c) => c.typeId.toLowerCase() === typeId);
  const concrete = base ? classes.filter((c) => !c.options.abstract && isSubclass(c, base)) : [];
  const refs = concrete.map((c) => ({ $ref: `#/$defs/${defName(c)}` }));
  return refs.length === 1 ? (refs[0] as Schema) : { anyOf: refs };
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

function valueSchema(type: ValueType, zodType: z.ZodType, classes: readonly AnyConfigClass[]): Schema {
  switch (type.kind) {
    case "config":
      return configRef(type.typeId, classes);
    case "optional":
      return valueSchema(type.inner, zodType instanceof z.ZodOptional ? (zodType.unwrap() as z.ZodType) : zodType, classes);
    case "list":
      return { type: "array", items: valueSchema(type.item, itemZod(zodType), classes) };
    case "set":
      return { type: "array", uniqueItems: true, items: valueSchema(type.item, itemZod(zodType), classes) };
    case "dict":
      return { type: "object", additionalProperties: valueSchema(type.value, itemZod(zodType), classes) };
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

/**
 * A JSON Schema (draft 2020-12) of every configuration class, for editors: one definition per
 * class under `$defs`, named by type id. Nested configurations refer to the concrete classes
 * that may stand in their place.
 */
export function configJsonSchema(): Schema {
  const classes = registeredClasses();
  const defs: Record<string, Schema> = {};
  for (const cls of classes) {
    if (cls.options.abstract) continue;
    const properties: Record<string, Schema> = { [TYPE_KEY]: { const: cls.typeId } };
    const required: string[] = [TYPE_KEY];
    for (const [name, { spec }] of Object.entries(cls.params)) {
      if (spec.kind === "generated" || spec.kind === "constant") continue;
      const schema = valueSchema(spec.value.type, spec.value.zod, classes);
      if (spec.help) schema.description = spec.help;
      properties[name] = schema;
      if (!spec.makeDefault && !spec.optional) required.push(name);
    }
    defs[defName(cls)] = { type: "object", properties, required, additionalProperties: false };
  }
  return { $schema: "https://json-schema.org/draft/2020-12/schema", title: "xpm-torch configurations", $defs: defs };
}
