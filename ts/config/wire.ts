import { TYPE_KEY, configClassOf } from "./class.js";
import type { GeneratedPaths } from "./identity.js";

/** The type ids under which the core runs listeners and hooks written in TypeScript. */
export const JS_LISTENER = "xpm_torch.listeners.JsListener";
export const JS_HOOK = "xpm_torch.hooks.JsHook";
export const JS_SAMPLER = "xpm_torch.samplers.JsSampler";
export const JS_DATASET = "xpm_torch.data.JsDataset";

export type Wire = null | boolean | number | string | Wire[] | { [key: string]: Wire };

/**
 * The JSON document the Rust core reads (its serde mirrors): every configuration as an object
 * whose first key is its type id, sets as arrays, unset optional values left out, the generated
 * paths of the job filled in, and what its class derives for the core (`ClassOptions.wire`).
 */
export function toWire(config: object, paths?: GeneratedPaths, standIn: (config: object) => Wire | undefined = () => undefined): Wire {
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
    // What is written in JavaScript goes to the core as a stand-in the core runs by asking back.
    const replacement = standIn(config);
    if (replacement !== undefined) {
      seen.delete(config);
      return replacement;
    }
    const out: { [key: string]: Wire } = { [TYPE_KEY]: cls?.typeId ?? "" };
    const record = config as Record<string, unknown>;
    for (const [name, { spec }] of Object.entries(cls?.params ?? {})) {
      const v = spec.kind === "generated" ? paths?.get(config)?.get(name) : value(record[name]);
      if (v !== undefined) out[name] = v;
    }
    Object.assign(out, cls?.options.wire?.(config as never));
    seen.delete(config);
    return out;
  };
  return object(config);
}
