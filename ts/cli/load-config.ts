import { existsSync, readFileSync, realpathSync } from "node:fs";
import { Module, createRequire } from "node:module";
import { dirname, extname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { TYPE_KEY, configClassOf } from "../config/class.js";
// A params.json names its classes by type id: every built-in one must be defined before it is read.
import "../config/classes/index.js";
import { Learner } from "../config/classes/learner.js";
import { ConfigError } from "../errors.js";
import { type LearnOptions, type LearnerConfig, SCRIPT_WATCH, type ScriptWatch } from "../learn.js";
import { readParamsJson } from "../workspace/params-json.js";
import { placeInSource } from "./config-source.js";

const MODULE_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs"]);

/** The exports that may hold the Learner, in the order they are tried. */
export const LEARNER_EXPORTS = ["default", "learner"] as const;

function asLearner(value: unknown, where: string): LearnerConfig {
  if (!Learner.is(value)) {
    const cls = typeof value === "object" && value !== null ? configClassOf(value) : undefined;
    if (typeof value === "object" && value !== null && (value as Record<string, unknown>)[TYPE_KEY] === Learner.typeId) {
      throw new ConfigError(
        where,
        "this Learner was made by another copy of xpm-torch than the one running it: run the xpm-torch command " +
          "installed in the project the module imports xpm-torch from (`npx xpm-torch` there)",
      );
    }
    const what = cls ? `a ${cls.typeId} configuration` : value === undefined ? "nothing" : `a ${typeof value}`;
    throw new ConfigError(where, `expected a Learner configuration (Learner.C({...})), got ${what}`);
  }
  return value as LearnerConfig;
}

/** How Node runs a file: its extension decides, else the `type` of the nearest package.json. */
export function moduleFormat(file: string): "module" | "commonjs" {
  const ext = extname(file);
  if (ext === ".mts" || ext === ".mjs") return "module";
  if (ext === ".cts" || ext === ".cjs") return "commonjs";
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        return (JSON.parse(readFileSync(manifest, "utf8")) as { type?: unknown }).type === "module" ? "module" : "commonjs";
      } catch {
        return "commonjs";
      }
    }
    if (dirname(dir) === dir) return "commonjs";
  }
}

const TYPESCRIPT = new Set([".ts", ".mts", ".cts"]);

/**
 * Loads a module the way Node would run it: an ES module through `import()`, a CommonJS one
 * through `require()` (whose `require("xpm-torch")` loads this package's ES module). Loading a
 * CommonJS file through `import()` instead makes Node 20 re-enter its ES loader and fail.
 *
 * Node 20 cannot load TypeScript itself, so tsx's hooks are registered for TypeScript files,
 * for the whole process rather than in a namespace of their own: a namespaced import would
 * load a second copy of xpm-torch for the module, whose configurations this copy would not
 * recognise. Where TypeScript already loads (under tsx, or a Node that strips types), nothing
 * is registered, for the same reason.
 */
async function importModule(file: string): Promise<Record<string, unknown>> {
  const format = moduleFormat(file);
  if (TYPESCRIPT.has(extname(file)) && !typescriptLoads()) {
    if (format === "module") (await import("tsx/esm/api")).register();
    else (await import("tsx/cjs/api")).register();
  }
  if (format === "commonjs") {
    await shareThisCopy(file);
    return { default: createRequire(import.meta.url)(file) as unknown };
  }
  return (await import(pathToFileURL(file).href)) as Record<string, unknown>;
}

/**
 * Makes `require("xpm-torch")` in `file` return the copy of xpm-torch that is running, when it
 * resolves to the same files: tsx's CommonJS hooks would otherwise compile this package's ES
 * modules again, into a second copy whose configurations this one does not recognise.
 */
async function shareThisCopy(file: string): Promise<void> {
  const require = createRequire(file);
  let resolved: string;
  try {
    resolved = require.resolve("xpm-torch");
  } catch {
    return;
  }
  const running = fileURLToPath(new URL("../index.js", import.meta.url));
  if (!existsSync(running) || realpathSync(resolved) !== realpathSync(running)) return;
  if (require.cache[resolved]) return;
  const exports = (await import("../index.js")) as object;
  const entry = new Module(resolved);
  entry.filename = resolved;
  entry.loaded = true;
  entry.exports = exports;
  require.cache[resolved] = entry;
}

/** Loads modules for their side effects (the configuration classes they define), in order. */
export async function importModules(files: readonly string[]): Promise<void> {
  for (const file of files) {
    const path = resolve(file);
    if (!existsSync(path)) throw new ConfigError(`--import ${file}`, "no such file");
    await importModule(path);
  }
}

/** Whether this process already runs TypeScript files (tsx's hooks, or Node's type stripping). */
function typescriptLoads(): boolean {
  const features = process.features as { typescript?: unknown };
  return Boolean(features.typescript) || process.execArgv.some((a) => /\btsx\b/.test(a));
}

/**
 * The object that holds a module's exports: a CommonJS module's `module.exports` arrives as
 * `default`, and one compiled from `export` syntax (TypeScript in a CommonJS package) keeps its
 * own `default` and `learner` inside it.
 */
function exportsOf(module: Record<string, unknown>): Record<string, unknown> {
  const inner = module.default;
  if (typeof inner === "object" && inner !== null && !configClassOf(inner) && !Learner.is(inner)) return inner as Record<string, unknown>;
  return module;
}

/** This package's own code (compiled, and its sources where source maps point), whose stack frames are not the user's. */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const OWN_CODE = ["dist", "ts"].map((d) => join(PACKAGE_ROOT, d) + "/");

/** A stack frame of the user's code: the file as written and as shown, its line and column (1-based). */
export interface UserFrame {
  readonly file: string;
  readonly shown: string;
  readonly line: number;
  readonly column: number;
}

/**
 * The frame of the user's code that raised `error` (the `.C()` call of a module), from its
 * stack: the first frame outside this package, Node and node_modules. Undefined without one.
 */
export function userFrame(error: unknown, own: readonly string[] = OWN_CODE): UserFrame | undefined {
  const stack = error instanceof Error ? error.stack ?? "" : "";
  for (const line of stack.split("\n").slice(1)) {
    const m = /\(?((?:file:\/\/)?\/[^()]*?):(\d+):(\d+)\)?$/.exec(line.trim());
    if (!m) continue;
    const file = m[1]!.startsWith("file://") ? fileURLToPath(m[1]!) : m[1]!;
    if (own.some((dir) => file.startsWith(dir)) || file.includes("/node_modules/")) continue;
    const shown = relative(process.cwd(), file);
    return { file, shown: shown.startsWith("..") ? file : shown, line: Number(m[2]), column: Number(m[3]) };
  }
  return undefined;
}

/**
 * A ConfigError raised while a module was loaded, placed in the user's code: at the key it
 * names where the text of the `.C()` call that raised it shows it (`config.ts:10:3`), else at
 * that call (`config.ts:6`), else in `file`; with the path from the outermost configuration the
 * text builds around that call. Undefined for other errors.
 */
function placedConfigError(error: unknown, file: string): ConfigError | undefined {
  const at = configErrorPath(error);
  if (at === undefined) return undefined;
  const message = (error as Error).message.slice(at.length + 2);
  const details = detailsOf(error);
  const frame = userFrame(error);
  if (!frame) return new ConfigError(`${file}: ${at}`, message, details);
  let text: string | undefined;
  try {
    text = readFileSync(frame.file, "utf8");
  } catch {
    text = undefined;
  }
  const place = text === undefined ? undefined : placeInSource(text, frame, at);
  if (!place) return new ConfigError(`${frame.shown}:${frame.line}: ${at}`, message, details);
  return new ConfigError(`${frame.shown}:${place.line}:${place.column}: ${place.path}`, message, details);
}

/** The optional fields of a ConfigError (of this copy of xpm-torch or another), to keep when it is placed. */
function detailsOf(error: unknown): { readonly suggestion?: string } {
  const suggestion = (error as { suggestion?: unknown } | null)?.suggestion;
  return typeof suggestion === "string" ? { suggestion } : {};
}

/** The error's config path, when it is a ConfigError (of this copy of xpm-torch or another). */
function configErrorPath(error: unknown): string | undefined {
  const e = error as { code?: unknown; path?: unknown } | null;
  return typeof e === "object" && e !== null && e.code === "ERR_CONFIG" && typeof e.path === "string" ? e.path : undefined;
}

/** What `xpm-torch learn FILE` runs: the Learner FILE holds, or FILE itself, a script whose evaluation called learn(). */
export type LearnTarget = { readonly learner: LearnerConfig } | { readonly script: Pick<ScriptWatch, "calls" | "plans"> };

/** How the learn() calls made while a module is imported are treated (see {@link ScriptWatch}). */
type ScriptCalls = Omit<ScriptWatch, "calls" | "plans">;

/**
 * The Learner configuration in `file`: a module exporting it (as `default` or `learner`, or a
 * function returning it), or a params.json. A module that calls learn() itself while it is
 * imported is refused, before that call trains (this reads the configuration, runs nothing).
 * @throws ConfigError naming the file (and the object and field, for params.json).
 */
export async function loadLearnerConfig(file: string): Promise<LearnerConfig> {
  const refuse = "the module runs its Learner itself: export the configuration instead (`export default Learner.C({...})`)";
  const target = await loadTarget(file, { defaults: {}, refuse });
  if ("learner" in target) return target.learner;
  throw new ConfigError(file, refuse);
}

/**
 * What `xpm-torch learn FILE` runs: a params.json's Learner; for a module, FILE itself when its
 * evaluation called learn() (a script: those calls, made with `defaults` under their own
 * options, are what it ran), else the Learner it exports (as `default` or `learner`, or a
 * function returning it).
 * @throws ConfigError naming the file (and the object and field, for params.json).
 */
export async function loadLearnTarget(file: string, defaults: LearnOptions): Promise<LearnTarget> {
  return loadTarget(file, { defaults });
}

async function loadTarget(file: string, calls: ScriptCalls): Promise<LearnTarget> {
  const path = resolve(file);
  if (!existsSync(path)) throw new ConfigError(file, "no such file");
  const ext = extname(path);
  if (ext === ".json") return { learner: loadParamsJson(path, file) };
  if (!MODULE_EXTENSIONS.has(ext)) throw new ConfigError(file, `expected a .ts or .js module or a params.json, not ${ext || "a file without extension"}`);
  const { module, made } = await importWatched(path, file, calls);
  if (made.calls.length + made.plans.length > 0) return { script: made };
  return { learner: await exportedLearner(exportsOf(module), file) };
}

function loadParamsJson(path: string, file: string): LearnerConfig {
  let task: object;
  try {
    task = readParamsJson(readFileSync(path, "utf8"), file);
  } catch (error) {
    if (error instanceof SyntaxError) throw new ConfigError(file, `not valid JSON: ${error.message}`);
    const at = configErrorPath(error);
    // Errors of the Learner's own validation name the parameter, not the file.
    if (at !== undefined && !at.startsWith(file)) throw new ConfigError(`${file}: ${at}`, (error as Error).message.slice(at.length + 2), detailsOf(error));
    throw error;
  }
  return asLearner(task, file);
}

/** Imports the module at `path`, with the learn() calls its evaluation makes treated as `calls` says. */
async function importWatched(
  path: string,
  file: string,
  calls: ScriptCalls,
): Promise<{ readonly module: Record<string, unknown>; readonly made: ScriptWatch }> {
  const global = globalThis as { [SCRIPT_WATCH]?: ScriptWatch };
  const outer = global[SCRIPT_WATCH];
  const watch: ScriptWatch = { ...calls, calls: [], plans: [] };
  global[SCRIPT_WATCH] = watch;
  try {
    return { module: await importModule(path), made: watch };
  } catch (error) {
    // Where the `.C()` that refused was given the value, in the module or a file it imports.
    throw placedConfigError(error, file) ?? error;
  } finally {
    if (outer) global[SCRIPT_WATCH] = outer;
    else delete global[SCRIPT_WATCH];
  }
}

/** The Learner a module's exports hold. */
async function exportedLearner(source: Record<string, unknown>, file: string): Promise<LearnerConfig> {
  for (const name of LEARNER_EXPORTS) {
    let value = source[name];
    if (value === undefined) continue;
    if (typeof value === "function") {
      try {
        value = await (value as () => unknown)();
      } catch (error) {
        throw placedConfigError(error, file) ?? error;
      }
    }
    return asLearner(value, `${file} (export ${name})`);
  }
  const found = Object.keys(source).filter((k) => k !== "__esModule");
  throw new ConfigError(file, `exports no Learner: export it as default or as \`learner\` (found: ${found.join(", ") || "no exports"})`);
}
