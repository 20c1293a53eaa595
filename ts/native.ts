import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { constants } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { AddonNotFoundError, LibtorchNotFoundError } from "./errors.js";
import type * as Addon from "../binding.cjs";
import { type LibtorchInstall, locateLibtorch, notFoundMessage } from "./libtorch/locate.js";

// The addon's types are those napi-rs generates from the Rust exports (binding.d.cts, written by
// `npm run build` and checked in): declared once, they cannot part from what the addon exports.

/** The functions and classes the Rust addon exports (see crates/node-binding). */
export type NativeBinding = Omit<typeof Addon, "__napiBindingTarget">;

/** One training run of the addon; `cancel()` stops it after its current step, with a checkpoint. */
export type LearnRun = Addon.LearnRun;

/** A call from the training thread into JavaScript, answered by a Promise (see ts/run/bridge.ts). */
export type ForeignCall = Addon.ForeignCall;

/** The answer to a foreign call: `failed` when the user's code threw, else JSON and arrays. */
export type ForeignReply = Awaited<ReturnType<NonNullable<Parameters<typeof Addon.learn>[3]>>>;

/** The npm package holding the prebuilt addon for this machine (napi-rs convention). */
export const PLATFORM_PACKAGE = "xpm-torch-linux-x64-gnu";
const ADDON_FILE = "xpm-torch.linux-x64-gnu.node";

/** Where the addon was found: the platform package installed with xpm-torch, or a local build. */
export interface AddonLocation {
  readonly file: string;
  readonly source: "platform package" | "local build";
}

/**
 * Why the platform package gave no addon: it could not be resolved (not installed), it is of
 * another version than xpm-torch, it lacks the addon file, or this machine is not one it is built for.
 */
export type PlatformPackageProblem = "not installed" | "other version" | "incomplete" | "unsupported platform";

/** The addon to load, or what was tried and why the platform package did not give it. */
export type AddonSearch =
  | { readonly found: AddonLocation }
  | { readonly found?: undefined; readonly tried: readonly string[]; readonly platform: PlatformPackageProblem };

const packageRoot = dirname(dirname(fileURLToPath(import.meta.url)));

function ownVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot, "package.json"), "utf8")) as { version: string }).version;
}

/** The platform package's addon, or why it gives none (and what was seen). */
function platformAddon(): { readonly file: string } | { readonly file?: undefined; readonly problem: PlatformPackageProblem; readonly seen: string } {
  if (process.platform !== "linux" || process.arch !== "x64" || isMusl()) {
    const machine = `${process.platform} ${process.arch}${isMusl() ? " musl" : ""}`;
    return { problem: "unsupported platform", seen: `${PLATFORM_PACKAGE}: prebuilt for linux x64 glibc only (this is ${machine})` };
  }
  let manifest: string;
  try {
    manifest = createRequire(import.meta.url).resolve(`${PLATFORM_PACKAGE}/package.json`);
  } catch {
    return { problem: "not installed", seen: `${PLATFORM_PACKAGE}: not installed (it cannot be resolved from ${packageRoot})` };
  }
  const { version } = JSON.parse(readFileSync(manifest, "utf8")) as { version: string };
  const ours = ownVersion();
  const file = join(dirname(manifest), ADDON_FILE);
  if (version !== ours) {
    return { problem: "other version", seen: `${PLATFORM_PACKAGE} ${version} at ${dirname(manifest)} (xpm-torch is ${ours}; they must match)` };
  }
  if (!existsSync(file)) return { problem: "incomplete", seen: `${PLATFORM_PACKAGE} at ${dirname(manifest)}: no ${ADDON_FILE}` };
  return { file };
}

/**
 * Finds the addon: the platform package `xpm-torch-linux-x64-gnu` of the same version first
 * (what an npm install provides), then the `.node` file a clone's `npm run build` writes.
 */
export function locateAddon(): AddonSearch {
  const platform = platformAddon();
  if (platform.file !== undefined) return { found: { file: platform.file, source: "platform package" } };
  const local = join(packageRoot, ADDON_FILE);
  if (existsSync(local)) return { found: { file: local, source: "local build" } };
  return { tried: [platform.seen, `local build: no ${local}`], platform: platform.problem };
}

// musl systems carry their dynamic loader under this name; glibc ones never do.
function isMusl(): boolean {
  return existsSync("/lib/ld-musl-x86_64.so.1");
}

/** Why no addon was found, in one line, and what to run. */
export function addonProblem(platform: PlatformPackageProblem): { readonly cause: string; readonly fix: string } {
  const version = ownVersion();
  // Neither package is on the npm registry yet: the two tarballs of `npm run pack` are the way.
  const install =
    `install both tarballs \`npm run pack\` writes, together: \`npm install <dir>/xpm-torch-${version}.tgz <dir>/${PLATFORM_PACKAGE}-${version}.tgz\`` +
    ` (the packages are not on the npm registry yet; once they are, \`npm install xpm-torch\` brings both)`;
  const clone = "in a clone of the repository, `npm run build` builds the addon instead";
  switch (platform) {
    case "not installed":
      return { cause: `the platform package ${PLATFORM_PACKAGE} is not installed (it could not be resolved)`, fix: `${install}; ${clone}` };
    case "other version":
      return { cause: `the platform package ${PLATFORM_PACKAGE} installed is not version ${version}, as xpm-torch is`, fix: `${install}; ${clone}` };
    case "incomplete":
      return { cause: `the platform package ${PLATFORM_PACKAGE} installed lacks its addon file`, fix: `reinstall: ${install}; ${clone}` };
    case "unsupported platform":
      return {
        cause: "the prebuilt addon is for Linux x86_64 with glibc only",
        fix: "build it in a clone of the repository (`npm run build`, with a Rust toolchain)",
      };
  }
}

/** The explanation shown when no addon was found: the cause, what was tried, what to run. */
export function addonNotFoundMessage(search: { readonly tried: readonly string[]; readonly platform: PlatformPackageProblem }): string {
  const { cause, fix } = addonProblem(search.platform);
  return [`xpm-torch cannot find its native addon: ${cause}.`, ...search.tried.map((t) => `  tried ${t}`), `Fix: ${fix}.`].join("\n");
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
  if (!addon.found) throw new AddonNotFoundError(addonNotFoundMessage(addon));
  const require = createRequire(import.meta.url);
  const binding = require(addon.found.file) as NativeBinding;
  loaded = { binding, libtorch: search.found, addon: addon.found };
  return loaded;
}
