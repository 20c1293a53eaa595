import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { AddonNotFoundError, LibtorchNotFoundError } from "./errors.js";
import { type LibtorchInstall, locateLibtorch, notFoundMessage } from "./libtorch/locate.js";

/** A call from the training thread into JavaScript, answered by a Promise (see ts/bridge.ts). */
export interface ForeignCall {
  /** `epoch`, `listener`, `hook` or `data`. */
  readonly kind: string;
  /** The request as JSON. */
  readonly json: string;
  /** Arrays handed over (records for a dims provider), by name. */
  readonly floats?: Record<string, Float32Array>;
  readonly ints?: Record<string, Int32Array>;
}

/** The answer to a foreign call: `failed` when the user's code threw, else JSON and arrays. */
export interface ForeignReply {
  readonly failed?: string;
  readonly json?: string;
  readonly floats?: Readonly<Record<string, Float32Array>>;
  readonly ints?: Readonly<Record<string, Int32Array>>;
}

/** One training run of the addon; `cancel()` stops it after its current step, with a checkpoint. */
export interface LearnRun {
  cancel(): void;
}

/** The functions the Rust addon exports (see crates/node-binding). */
export interface NativeBinding {
  LearnRun: new () => LearnRun;
  learn(
    configJson: string,
    run: LearnRun,
    reporter?: ((event: string) => void) | null,
    foreign?: ((call: ForeignCall) => Promise<ForeignReply>) | null,
  ): Promise<string>;
  scoreDuringRun(run: LearnRun, request: { features?: Float32Array; rows?: number; tokenPairsJson?: string }): Promise<string>;
  panicInTrainingThread(message: string): Promise<string>;
  errorSamples(): string[];
  readConfig(configJson: string): string;
  runtimeInfo(): string;
  bindRendezvousSocket(host: string): { fd: number; port: number };
}

/** The npm package holding the prebuilt addon for this machine (napi-rs convention). */
export const PLATFORM_PACKAGE = "xpm-torch-linux-x64-gnu";
const ADDON_FILE = "xpm-torch.linux-x64-gnu.node";

/** Where the addon was found: the platform package installed with xpm-torch, or a local build. */
export interface AddonLocation {
  readonly file: string;
  readonly source: "platform package" | "local build";
}

/** The addon to load, or what was tried. */
export type AddonSearch = { readonly found: AddonLocation } | { readonly found?: undefined; readonly tried: readonly string[] };

const packageRoot = dirname(dirname(fileURLToPath(import.meta.url)));

/**
 * Finds the addon: the platform package `xpm-torch-linux-x64-gnu` of the same version first
 * (what an npm install provides), then the `.node` file a clone's `npm run build` writes.
 */
export function locateAddon(): AddonSearch {
  const tried: string[] = [];
  const supported = process.platform === "linux" && process.arch === "x64" && !isMusl();
  if (supported) {
    const require = createRequire(import.meta.url);
    try {
      const manifest = require.resolve(`${PLATFORM_PACKAGE}/package.json`);
      const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
      const ours = (JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")) as { version: string }).version;
      const file = join(dirname(manifest), ADDON_FILE);
      if (version !== ours) tried.push(`${PLATFORM_PACKAGE} ${version} (xpm-torch is ${ours}; reinstall so that they match)`);
      else if (!existsSync(file)) tried.push(`${PLATFORM_PACKAGE}: no ${ADDON_FILE}`);
      else return { found: { file, source: "platform package" } };
    } catch {
      tried.push(`${PLATFORM_PACKAGE}: not installed`);
    }
  } else {
    tried.push(`${PLATFORM_PACKAGE}: prebuilt for linux x64 glibc only (this is ${process.platform} ${process.arch})`);
  }
  const local = join(packageRoot, ADDON_FILE);
  if (existsSync(local)) return { found: { file: local, source: "local build" } };
  tried.push(`local build: no ${local}`);
  return { tried };
}

// musl systems carry their dynamic loader under this name; glibc ones never do.
function isMusl(): boolean {
  return existsSync("/lib/ld-musl-x86_64.so.1");
}

/** The explanation shown when no addon was found. */
export function addonNotFoundMessage(tried: readonly string[]): string {
  return [
    "xpm-torch cannot find its native addon.",
    ...tried.map((t) => `  tried ${t}`),
    `Fix: install xpm-torch with its optional dependencies (npm installs ${PLATFORM_PACKAGE} on Linux x64;`,
    "  do not pass --omit=optional), or, in a clone of the repository, run `npm run build`.",
  ].join("\n");
}

// glibc's value; Node does not export it. Keeps the preloaded libraries mapped after
// process.dlopen closes its handle on them (they are not addons and fail to self-register).
const RTLD_NODELETE = 0x1000;

/** Libraries in dependency order; the CUDA ones load only where their own dependencies exist. */
const PRELOAD = ["libc10.so", "libtorch_cpu.so", "libc10_cuda.so", "libtorch_cuda.so", "libtorch.so"];
const REQUIRED = new Set(["libc10.so", "libtorch_cpu.so"]);

function preload(lib: string): void {
  const flags = constants.dlopen.RTLD_NOW | constants.dlopen.RTLD_GLOBAL | RTLD_NODELETE;
  for (const name of PRELOAD) {
    const file = join(lib, name);
    if (!existsSync(file)) continue;
    try {
      process.dlopen({ exports: {} }, file, flags);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (/self-register/.test(message)) continue;
      if (REQUIRED.has(name)) {
        throw new LibtorchNotFoundError(`cannot load ${file}: ${message}`);
      }
      // A lean (CPU) install lacks libtorch_cuda's dependencies: run on the CPU.
    }
  }
}

let loaded: { binding: NativeBinding; libtorch: LibtorchInstall; addon: AddonLocation } | undefined;

/**
 * Finds libtorch, preloads it (so no LD_LIBRARY_PATH is needed) and loads the addon.
 * @throws LibtorchNotFoundError saying what is missing and the command that fixes it.
 */
export function loadNative(): { binding: NativeBinding; libtorch: LibtorchInstall; addon: AddonLocation } {
  if (loaded) return loaded;
  const search = locateLibtorch();
  if (!search.found) throw new LibtorchNotFoundError(notFoundMessage(search));
  preload(search.found.lib);
  const addon = locateAddon();
  if (!addon.found) throw new AddonNotFoundError(addonNotFoundMessage(addon.tried));
  const require = createRequire(import.meta.url);
  const binding = require(addon.found.file) as NativeBinding;
  loaded = { binding, libtorch: search.found, addon: addon.found };
  return loaded;
}
