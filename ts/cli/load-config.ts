import { existsSync, readFileSync } from "node:fs";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { configClassOf } from "../config/class.js";
import { Learner } from "../config/classes/learner.js";
import { ConfigError } from "../errors.js";
import type { LearnerConfig } from "../learn.js";
import { readParamsJson } from "../workspace/params-json.js";

const MODULE_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"]);

/** The exports that may hold the Learner, in the order they are tried. */
export const LEARNER_EXPORTS = ["default", "learner"] as const;

function asLearner(value: unknown, where: string): LearnerConfig {
  if (!Learner.is(value)) {
    const cls = typeof value === "object" && value !== null ? configClassOf(value) : undefined;
    const what = cls ? `a ${cls.typeId} configuration` : value === undefined ? "nothing" : `a ${typeof value}`;
    throw new ConfigError(where, `expected a Learner configuration (Learner.C({...})), got ${what}`);
  }
  return value as LearnerConfig;
}

/**
 * Imports a module; TypeScript through tsx, because Node 20 cannot strip types itself and
 * tsx resolves the `./x.js` → `./x.ts` imports that TypeScript's NodeNext style writes, and
 * loads the file in its own namespace without changing how the rest of the process loads.
 */
async function importModule(file: string): Promise<Record<string, unknown>> {
  if (/\.[mc]?ts$/.test(file)) {
    const { tsImport } = await import("tsx/esm/api");
    return (await tsImport(pathToFileURL(file).href, import.meta.url)) as Record<string, unknown>;
  }
  return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
}

/**
 * The Learner configuration in `file`: a module exporting it (as `default` or `learner`, or a
 * function returning it), or a params.json.
 * @throws ConfigError naming the file (and the object and field, for params.json).
 */
export async function loadLearnerConfig(file: string): Promise<LearnerConfig> {
  const path = resolve(file);
  if (!existsSync(path)) throw new ConfigError(file, "no such file");
  const ext = extname(path);
  if (ext === ".json") {
    let task: object;
    try {
      task = readParamsJson(readFileSync(path, "utf8"), file);
    } catch (error) {
      if (error instanceof SyntaxError) throw new ConfigError(file, `not valid JSON: ${error.message}`);
      throw error;
    }
    return asLearner(task, file);
  }
  if (!MODULE_EXTENSIONS.has(ext)) throw new ConfigError(file, `expected a .ts or .js module or a params.json, not ${ext || "a file without extension"}`);
  let module: Record<string, unknown>;
  try {
    module = await importModule(path);
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(`${file}: ${error.path}`, error.message.slice(error.path.length + 2));
    throw error;
  }
  // A CommonJS module (no "type": "module" nearby) arrives wrapped in `default`.
  const wrapped = module.default;
  const sources = [module, ...(typeof wrapped === "object" && wrapped !== null && !configClassOf(wrapped) ? [wrapped as Record<string, unknown>] : [])];
  for (const source of sources) {
    for (const name of LEARNER_EXPORTS) {
      let value = source[name];
      if (value === undefined) continue;
      if (typeof value === "function") value = await (value as () => unknown)();
      return asLearner(value, `${file} (export ${name})`);
    }
  }
  throw new ConfigError(file, `exports no Learner: export it as default or as \`learner\` (found: ${Object.keys(module).join(", ") || "no exports"})`);
}
