import { TYPE_KEY, type Wire, configClassOf } from "./class.js";
import type { GeneratedPaths } from "./identifiers.js";

export type { Wire } from "./class.js";

/** The type id of the stand-in of every object written in TypeScript (see ts/extensions.ts). */
export const JS_OBJECT = "xpm_torch.js.JsObject";

/**
 * The JSON document the Rust core reads (its types generated from the schema): every configuration as an object
 * whose first key is its type id, sets as arrays, unset optional values left out, the generated
 * paths of the job filled in, and what its class derives for the core (`ClassOptions.wire`).
 */
export function toWire(
  config: object,
  paths?: GeneratedPaths,
  standIn: (config: object, params: () => { [key: string]: Wire }) => Wire | undefined = () => undefined,
): Wire {
  const seen = new Set<object>();
  const value = (v: unknown): Wire | undefined => {
    if (v === undefined) return undefined;
    if (v === null || typeof v !== "object") return v as Wire;
    if (configClassOf(v)) return object(v);
    if (v instanceof Set || Array.isArray(v)) return [...v].map((x) => value(x) ?? null);
    return Object.fromEntries(Object.entries(v).flatMap(([k, x]) => (x === undefined ? [] : [[k, value(x) as Wire]])));
  };
  const object = (config: object): Wire => {
    if (seen.has(config)) throw new TypeError("a configuration that contains itself cannot be sent to the core");
    seen.add(config);
    const cls = configClassOf(config);
    const params = (): { [key: string]: Wire } => {
      const out: { [key: string]: Wire } = {};
      const record = config as Record<string, unknown>;
      for (const [name, { spec }] of Object.entries(cls?.params ?? {})) {
        const v = spec.kind === "generated" ? paths?.get(config)?.get(name) : value(record[name]);
        if (v !== undefined) out[name] = v;
      }
      return out;
    };
    // What is written in JavaScript goes to the core as a stand-in the core runs by asking back.
    const standingIn = standIn(config, params);
    if (standingIn !== undefined) {
      seen.delete(config);
      return standingIn;
    }
    const out: { [key: string]: Wire } = { [TYPE_KEY]: cls?.typeId ?? "", ...params() };
    Object.assign(out, cls?.options.wire?.(config as never));
    seen.delete(config);
    return out;
  };
  return object(config);
}
