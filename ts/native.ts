import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { constants } from "node:os";
import { join } from "node:path";

import { LibtorchNotFoundError } from "./errors.js";
import { type LibtorchInstall, locateLibtorch, notFoundMessage } from "./libtorch/locate.js";

/** The functions the Rust addon exports (see crates/node-binding). */
export interface NativeBinding {
  learn(configJson: string, onEvent?: ((event: string) => void) | null, runId?: number): Promise<string>;
  cancelLearn(runId: number): boolean;
  panicInTrainingThread(message: string): Promise<string>;
  readConfig(configJson: string): string;
  reply(replyId: number, replyJson: string): boolean;
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

let loaded: { binding: NativeBinding; libtorch: LibtorchInstall } | undefined;

/**
 * Finds libtorch, preloads it (so no LD_LIBRARY_PATH is needed) and loads the addon.
 * @throws LibtorchNotFoundError saying what is missing and the command that fixes it.
 */
export function loadNative(): { binding: NativeBinding; libtorch: LibtorchInstall } {
  if (loaded) return loaded;
  const search = locateLibtorch();
  if (!search.found) throw new LibtorchNotFoundError(notFoundMessage(search));
  preload(search.found.lib);
  const require = createRequire(import.meta.url);
  const binding = require("../binding.cjs") as NativeBinding;
  loaded = { binding, libtorch: search.found };
  return loaded;
}
