import { spawnSync } from "node:child_process";
import { existsSync, renameSync, rmSync, statSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { LibtorchNotFoundError } from "../errors.js";
import { TORCH_VERSION, managedTorchDir } from "../paths.js";
import { type LibtorchInstall, inspect, locateLibtorch, notFoundMessage } from "./locate.js";

/**
 * The CUDA runtime pieces `libtorch_cpu.so` links against (libcudart, libcupti), pinned as
 * torch 2.11.0's `cuda-toolkit==13.0.2` extras pin them. With them libtorch loads on any
 * machine; the rest of the CUDA stack only matters on a GPU (`--cuda`).
 */
const LEAN_EXTRAS = ["nvidia-cuda-runtime==13.0.96.*", "nvidia-cuda-cupti==13.0.85.*"];

export interface ProvisionOptions {
  /** Install torch with its whole CUDA dependency set (~3 GB) instead of the lean CPU set. */
  readonly cuda?: boolean;
  /** Reinstall even when a usable libtorch is found. */
  readonly force?: boolean;
  readonly env?: NodeJS.ProcessEnv;
  readonly log?: (line: string) => void;
}

function sizeOf(path: string): number {
  const st = statSync(path, { throwIfNoEntry: false });
  if (!st) return 0;
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((sum, name) => sum + sizeOf(join(path, name)), 0);
}

/**
 * Makes libtorch 2.11 available: reuses one that {@link locateLibtorch} finds, else installs the
 * `torch==2.11.0` wheel from the Python package index into the xpm-torch cache with pip.
 * Idempotent; an interrupted install never leaves a half-written cache behind.
 */
export function provisionLibtorch(options: ProvisionOptions = {}): LibtorchInstall {
  const env = options.env ?? process.env;
  const log = options.log ?? ((line: string) => console.log(line));
  const search = locateLibtorch(env);
  if (search.explicitProblem) throw new LibtorchNotFoundError(notFoundMessage(search));
  if (search.found && !options.force && !(options.cuda && search.found.source === "cache")) {
    log(`libtorch ${search.found.version} ready at ${search.found.lib} (from ${search.found.source})`);
    return search.found;
  }

  const target = managedTorchDir(env);
  const partial = `${target}.partial-${process.pid}`;
  const python = env.XPM_TORCH_PYTHON || "python3";
  const packages = options.cuda ? [`torch==${TORCH_VERSION}`] : [`torch==${TORCH_VERSION}`, ...LEAN_EXTRAS];
  const args = [
    "-m", "pip", "install", "--disable-pip-version-check", "--no-cache-dir", "--only-binary=:all:",
    ...(options.cuda ? [] : ["--no-deps"]),
    "--target", partial, ...packages,
  ];
  log(`installing torch ${TORCH_VERSION} (${options.cuda ? "with its CUDA libraries, ~3 GB" : "lean CPU set, ~0.55 GB"}) into ${target}`);
  log(`$ ${python} ${args.join(" ")}`);
  const started = Date.now();
  rmSync(partial, { recursive: true, force: true });
  const pip = spawnSync(python, args, { stdio: ["ignore", "inherit", "inherit"], env });
  if (pip.error || pip.status !== 0) {
    rmSync(partial, { recursive: true, force: true });
    const why = pip.error ? pip.error.message : `pip exited with ${pip.status}`;
    throw new LibtorchNotFoundError(
      `installing torch==${TORCH_VERSION} failed (${why}). xpm-torch setup needs Python 3 with pip ` +
        `(set XPM_TORCH_PYTHON to choose the interpreter) and access to the Python package index.`,
    );
  }
  const installed = inspect(join(partial, "torch"), "cache");
  if (typeof installed === "string") {
    rmSync(partial, { recursive: true, force: true });
    throw new LibtorchNotFoundError(`pip finished but the install is unusable: ${installed}`);
  }
  if (existsSync(target)) rmSync(target, { recursive: true, force: true });
  renameSync(partial, target);
  const result = inspect(join(target, "torch"), "cache");
  if (typeof result === "string") throw new LibtorchNotFoundError(result);
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  const gb = (sizeOf(target) / 1e9).toFixed(2);
  log(`libtorch ${result.version} installed at ${result.lib} (${gb} GB on disk, ${seconds} s)`);
  return result;
}
