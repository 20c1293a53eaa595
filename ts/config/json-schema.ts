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

function valueSchema(type: ValueType, zodType: z.ZodType, classes: readonly AnyConfigClass[]): Schema {
  switch (type.kind) {
    case "config":
      return configRef(type.typeId, classes);
    case "optional":
      return valueSchema(type.inner, zodType instanceof z.ZodOptional ? (zodType.unwrap() as z.ZodType) : zodType, classes);
    case "list":
      return { type: "array", items: valueSchema(type.item, z.any(), classes) };
    case "set":
      return { type: "array", uniqueItems: true, items: valueSchema(type.item, z.any(), classes) };
    case "dict":
      return { type: "object", additionalProperties: valueSchema(type.value, z.any(), classes) };
    default:
      try {
        return z.toJSONSchema(zodType, { io: "input", unrepresentable: "any" }) as Schema;
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
