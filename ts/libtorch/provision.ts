import { spawnSync } from "node:child_process";
import { existsSync, renameSync, rmSync, statSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { LibtorchNotFoundError } from "../errors.js";
import { TORCH_VERSION, managedTorchDir } from "../paths.js";
import { cudaRequirements, missingCudaLibraries, planCudaSetup, readTorchMetadata } from "./cuda.js";
import { type LibtorchInstall, inspect, locateLibtorch, notFoundMessage } from "./locate.js";

/**
 * The CUDA runtime pieces `libtorch_cpu.so` links against (libcudart, libcupti), pinned as
 * torch 2.11.0's `cuda-toolkit==13.0.2` extras pin them. With them libtorch loads on any
 * machine; the rest of the CUDA stack only matters on a GPU (`--cuda`).
 */
const LEAN_EXTRAS = ["nvidia-cuda-runtime==13.0.96.*", "nvidia-cuda-cupti==13.0.85.*"];

export interface ProvisionOptions {
  /**
   * Make libtorch's CUDA libraries available: reuse a torch 2.11 that has them, else install
   * torch with exactly the CUDA wheels its METADATA pins (~2.5 GB) into the cache.
   */
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
  if (options.cuda) return provisionCuda(options, env, log);
  if (search.found && !options.force) {
    log(`libtorch ${search.found.version} ready at ${search.found.lib} (from ${search.found.source})`);
    return search.found;
  }
  const args = ["--no-deps", `torch==${TORCH_VERSION}`, ...LEAN_EXTRAS];
  log(`installing torch ${TORCH_VERSION} (lean CPU set, ~0.55 GB) into ${managedTorchDir(env)}`);
  return installIntoCache(env, log, [args]);
}

function provisionCuda(options: ProvisionOptions, env: NodeJS.ProcessEnv, log: (line: string) => void): LibtorchInstall {
  const plan = planCudaSetup(locateLibtorch(env), options.force === true);
  if (plan.action === "reuse") {
    log(`libtorch ${plan.install.version} with its CUDA libraries ready at ${plan.install.lib} (from ${plan.install.source})`);
    return plan.install;
  }
  if (plan.action === "refuse") throw new LibtorchNotFoundError(plan.message);
  // The pins come from torch's own METADATA: the lean install's, made first when absent.
  const base = locateLibtorch(env).found ?? provisionLibtorch({ ...options, cuda: false });
  const metadata = readTorchMetadata(base.root);
  if (!metadata) throw new LibtorchNotFoundError(`no torch METADATA beside ${base.root}: cannot read its CUDA pins`);
  const pins = cudaRequirements(metadata);
  if (pins.length === 0) throw new LibtorchNotFoundError(`torch's METADATA beside ${base.root} pins no CUDA libraries (a CPU-only torch?)`);
  log(`installing torch ${TORCH_VERSION} with its CUDA libraries (${plan.why}; ~2.5 GB) into ${managedTorchDir(env)}`);
  log(`  pins from torch's METADATA: ${pins.join(" ")}`);
  // All nvidia wheels in one pip run (a second run into the same --target skips nvidia/), then
  // torch alone, without the Python-only dependencies (triton, sympy, ...).
  return installIntoCache(env, log, [pins, ["--no-deps", `torch==${TORCH_VERSION}`]], true);
}

/**
 * Runs pip once per argument list into a scratch directory, checks the result and moves it to
 * the managed cache: an interrupted install never leaves a half-written cache behind.
 */
function installIntoCache(env: NodeJS.ProcessEnv, log: (line: string) => void, runs: string[][], cuda = false): LibtorchInstall {
  const target = managedTorchDir(env);
  const partial = `${target}.partial-${process.pid}`;
  const python = env.XPM_TORCH_PYTHON || "python3";
  const started = Date.now();
  rmSync(partial, { recursive: true, force: true });
  for (const packages of runs) {
    const args = ["-m", "pip", "install", "--disable-pip-version-check", "--no-cache-dir", "--only-binary=:all:", "--target", partial, ...packages];
    log(`$ ${python} ${args.join(" ")}`);
    const pip = spawnSync(python, args, { stdio: ["ignore", "inherit", "inherit"], env });
    if (pip.error || pip.status !== 0) {
      rmSync(partial, { recursive: true, force: true });
      const why = pip.error ? pip.error.message : `pip exited with ${pip.status}`;
      throw new LibtorchNotFoundError(
        `installing torch==${TORCH_VERSION} failed (${why}). xpm-torch setup needs Python 3 with pip ` +
          `(set XPM_TORCH_PYTHON to choose the interpreter) and access to the Python package index.`,
      );
    }
  }
  const installed = inspect(join(partial, "torch"), "cache");
  const missing = typeof installed === "string" || !cuda ? [] : missingCudaLibraries(installed.root);
  if (typeof installed === "string" || missing.length > 0) {
    rmSync(partial, { recursive: true, force: true });
    const why = typeof installed === "string" ? installed : `CUDA libraries missing: ${missing.join(", ")}`;
    throw new LibtorchNotFoundError(`pip finished but the install is unusable: ${why}`);
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
