import { existsSync, readFileSync } from "node:fs";
import { extname, resolve } from "node:path";
import { pathToFileURL } from "node:url";

import { TYPE_KEY, configClassOf } from "../config/class.js";
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
    if (typeof value === "object" && value !== null && (value as Record<string, unknown>)[TYPE_KEY] === Learner.typeId) {
      throw new ConfigError(
        where,
        "this Learner was made by another copy of xpm-torch than the one running it: load the module as ES module " +
          '(`"type": "module"` in its package.json, or a .mts/.mjs file), and import xpm-torch from the project that runs it',
      );
    }
    const what = cls ? `a ${cls.typeId} configuration` : value === undefined ? "nothing" : `a ${typeof value}`;
    throw new ConfigError(where, `expected a Learner configuration (Learner.C({...})), got ${what}`);
  }
  return value as LearnerConfig;
}

/**
 * Imports a module. Node 20 cannot load TypeScript itself: on its refusal, tsx is registered and
 * the import tried again (tsx also resolves the `./x.js` → `./x.ts` imports of TypeScript's
 * NodeNext style). It is registered for the whole process, not in a namespace of its own: a
 * namespaced import would load a second copy of xpm-torch for the module, whose configurations
 * this copy would not recognise. Where TypeScript already loads (tsx or a newer Node), nothing is
 * registered, for the same reason.
 */
async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  try {
    return (await import(url)) as Record<string, unknown>;
  } catch (error) {
    if ((error as { code?: unknown }).code !== "ERR_UNKNOWN_FILE_EXTENSION") throw error;
  }
  const { register } = await import("tsx/esm/api");
  register();
  // Node remembers the failed import of `url`: import it under another URL.
  return (await import(`${url}?typescript`)) as Record<string, unknown>;
}

/** The error's config path, when it is a ConfigError (of this copy of xpm-torch or another). */
function configErrorPath(error: unknown): string | undefined {
  const e = error as { code?: unknown; path?: unknown } | null;
  return typeof e === "object" && e !== null && e.code === "ERR_CONFIG" && typeof e.path === "string" ? e.path : undefined;
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
      const at = configErrorPath(error);
      // Errors of the Learner's own validation name the parameter, not the file.
      if (at !== undefined && !at.startsWith(file)) throw new ConfigError(`${file}: ${at}`, (error as Error).message.slice(at.length + 2));
      throw error;
    }
    return asLearner(task, file);
  }
  if (!MODULE_EXTENSIONS.has(ext)) throw new ConfigError(file, `expected a .ts or .js module or a params.json, not ${ext || "a file without extension"}`);
  let module: Record<string, unknown>;
  try {
    module = await importModule(path);
  } catch (error) {
    const at = configErrorPath(error);
    if (at !== undefined) throw new ConfigError(`${file}: ${at}`, (error as Error).message.slice(at.length + 2));
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
