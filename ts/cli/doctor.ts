import { existsSync, readdirSync } from "node:fs";
import { availableParallelism } from "node:os";

import { SETUP_COMMAND, locateLibtorch, notFoundMessage } from "../libtorch/locate.js";
import { TORCH_VERSION } from "../paths.js";
import type { Command } from "./command.js";

/**
 * One finding: what was checked, what was found, and the fix when it is a problem. `absent`: a
 * thing training can do without is not there (no GPU); `reason` is the detail `--verbose` shows.
 */
export interface Finding {
  readonly check: string;
  readonly status: "ok" | "absent" | "warning" | "problem";
  readonly detail: string;
  readonly fix?: string;
  readonly reason?: string;
}

/** One GPU as the CUDA library describes it. */
interface GpuInfo {
  index: number;
  name?: string;
  memoryBytes?: number;
  capability?: string;
  bf16?: boolean;
  problem?: string;
}

/** The CUDA library's report (`runtime::cuda_report` in the core). */
export interface GpuReport {
  usable: boolean;
  problem?: string | null;
  library?: string;
  driver?: string | null;
  runtime?: string | null;
  nccl?: string | null;
  devices?: GpuInfo[];
}

/** What libtorch reports about itself (the addon's `runtimeInfo`). */
interface RuntimeInfo {
  gpus?: GpuReport;
  cudaBuilt: boolean;
  cudaAvailable: boolean;
  cudaDevices: number;
  cudnnAvailable: boolean;
  threads: number;
  interopThreads: number;
  openmp: boolean;
  mkl: boolean;
  mkldnn: boolean;
  /** The CPU's native bfloat16 features (`/proc/cpuinfo` names: avx512_bf16, amx_bf16, bf16). */
  cpuBf16?: string[];
}

/**
 * Whether xpm-torch supports this Node.js version: package.json's `engines.node`,
 * `^20.19.0 || ^22.13.0 || >=24.0.0`: what its development dependencies ask (vite and rolldown
 * 20.19, @napi-rs/cli and its prompts 22.13, vitest no 23).
 */
export function nodeSupported(version: string): boolean {
  const [major = 0, minor = 0] = version.replace(/^v/, "").split(".").map(Number);
  return (major === 20 && minor >= 19) || (major === 22 && minor >= 13) || major >= 24;
}

function nodeFinding(): Finding {
  return nodeSupported(process.versions.node)
    ? { check: "Node.js", status: "ok", detail: process.versions.node }
    : {
        check: "Node.js",
        status: "problem",
        detail: `${process.versions.node}, xpm-torch needs Node.js 20 (≥ 20.19), 22 (≥ 22.13) or ≥ 24`,
        fix: "install Node.js 20.19 or newer (on 22, 22.13 or newer; or 24 and later)",
      };
}

const GIB = 1024 ** 3;

/**
 * Whether this machine shows an NVIDIA GPU to this process: a `/dev/nvidia<N>` device file or a GPU
 * the driver lists under `/proc/driver/nvidia/gpus` (a container without one passed in has neither).
 */
export function nvidiaGpuPresent(): boolean {
  const list = (dir: string) => (existsSync(dir) ? readdirSync(dir) : []);
  return list("/dev").some((name) => /^nvidia\d+$/.test(name)) || list("/proc/driver/nvidia/gpus").length > 0;
}

/**
 * The GPU lines of the report: each GPU (name, memory, compute capability, bf16), the driver,
 * CUDA runtime and NCCL versions; or, plainly, that there is none. Without an NVIDIA GPU on the
 * machine (`gpuPresent` false) that is no fault of the install: the line says so, and why CUDA did
 * not load is only the `reason`. With one, CUDA being unusable is a warning with its fix.
 */
export function gpuFindings(report: GpuReport, cudnn = false, gpuPresent = true): Finding[] {
  if (!report.usable) {
    const why = report.problem ?? "unknown reason";
    if (!gpuPresent) {
      return [{ check: "GPU", status: "absent", detail: "none: no NVIDIA GPU on this machine (no /dev/nvidia<N>); training runs on the CPU", reason: why }];
    }
    return [{ check: "GPU", status: "warning", detail: `an NVIDIA GPU is present but unusable, training runs on the CPU: ${why}` }];
  }
  const out: Finding[] = (report.devices ?? []).map((d) =>
    d.problem
      ? { check: `GPU ${d.index}`, status: "warning", detail: d.problem }
      : {
          check: `GPU ${d.index}`,
          status: "ok",
          detail: `${d.name}, ${((d.memoryBytes ?? 0) / GIB).toFixed(1)} GiB, compute capability ${d.capability}, ` +
            (d.bf16 ? "bf16 supported" : "no bf16 (use 16-mixed)"),
        },
  );
  const versions = `driver CUDA ${report.driver ?? "?"}, runtime CUDA ${report.runtime ?? "?"}${cudnn ? ", cuDNN available" : ""}`;
  out.push(report.problem ? { check: "CUDA", status: "warning", detail: `${versions}: ${report.problem}` } : { check: "CUDA", status: "ok", detail: versions });
  out.push({ check: "NCCL", status: report.nccl ? "ok" : "warning", detail: report.nccl ? `${report.nccl} (ddp on CUDA)` : "version unknown" });
  return out;
}

/**
 * Whether the CPU computes bfloat16 natively (`features`: those of AVX512-BF16, AMX-BF16 or
 * Arm's BF16 it has). Without them libtorch emulates bfloat16, and `bf16-mixed` on the CPU runs
 * slower than `32-true`.
 */
export function cpuBf16Finding(features: readonly string[]): Finding {
  return features.length > 0
    ? { check: "CPU bf16", status: "ok", detail: `native (${features.join(", ")}): bf16-mixed speeds up CPU training and scoring` }
    : {
        check: "CPU bf16",
        status: "absent",
        detail: "no native bfloat16 instructions (avx512_bf16, amx_bf16 or bf16): on this CPU bf16-mixed runs slower than 32-true",
      };
}

/** Runs every check; stops at the first one the next ones depend on. */
export async function diagnose(): Promise<Finding[]> {
  const findings: Finding[] = [nodeFinding()];
  const search = locateLibtorch();
  if (!search.found) {
    findings.push({
      check: "libtorch",
      status: "problem",
      detail: notFoundMessage(search).split("\n").slice(0, -2).join("\n"),
      fix: `run \`${SETUP_COMMAND}\` (or point XPM_TORCH_LIBTORCH at a torch ${TORCH_VERSION} directory)`,
    });
    return findings;
  }
  findings.push({ check: "libtorch", status: "ok", detail: `${search.found.version} from ${search.found.source}: ${search.found.root}` });

  const { addonProblem, loadNative, locateAddon } = await import("../native.js");
  const addon = locateAddon();
  if (!addon.found) {
    const { cause, fix } = addonProblem(addon.platform);
    findings.push({ check: "addon", status: "problem", detail: [cause, ...addon.tried.map((t) => `tried ${t}`)].join("\n"), fix });
    return findings;
  }
  findings.push({ check: "addon", status: "ok", detail: `${addon.found.source}: ${addon.found.file}` });

  let info: RuntimeInfo;
  try {
    info = JSON.parse(loadNative().binding.runtimeInfo()) as RuntimeInfo;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    findings.push({ check: "loading", status: "problem", detail: message, fix: `run \`${SETUP_COMMAND} --force\` to reinstall libtorch` });
    return findings;
  }
  findings.push({ check: "loading", status: "ok", detail: "libtorch and the addon load" });

  findings.push(...gpuFindings(info.gpus ?? { usable: false, problem: "this addon does not report GPUs" }, info.cudnnAvailable, nvidiaGpuPresent()));
  const cores = availableParallelism();
  const threads = `${info.threads} intra-op, ${info.interopThreads} inter-op; ${cores} CPU(s) available`;
  findings.push(
    info.threads > cores
      ? { check: "threads", status: "warning", detail: threads, fix: `set OMP_NUM_THREADS=${cores}: more threads than CPUs slows training down` }
      : { check: "threads", status: "ok", detail: threads },
  );
  const backends = [info.openmp && "OpenMP", info.mkl && "MKL", info.mkldnn && "oneDNN"].filter(Boolean).join(", ");
  findings.push({ check: "CPU back-ends", status: "ok", detail: backends || "none" });
  findings.push(cpuBf16Finding(info.cpuBf16 ?? []));
  return findings;
}

const MARK = { ok: "ok  ", absent: " -- ", warning: "warn", problem: "FAIL" } as const;

export const doctorCommand: Command = {
  name: "doctor",
  summary: "check libtorch (found? version?), the addon, CUDA, devices and threads; say how to fix problems",
  help: `usage: xpm-torch doctor [--verbose]

Checks what training needs, in order: Node.js, libtorch ${TORCH_VERSION} (where it was found and
its version), the native addon, that both load, CUDA and its devices, thread pools, CPU
back-ends, and whether the CPU has native bfloat16 (bf16-mixed is faster only with it). Prints
the fix for each problem; exits 1 when there is one. A machine without an NVIDIA GPU gets a
"[ -- ] GPU none" line: training runs on the CPU.

  --verbose   also print why a missing part is missing (for no GPU: why CUDA did not load)`,
  options: { verbose: { type: "boolean", short: "v" } },
  run: async (args, io) => {
    const findings = await diagnose();
    const verbose = args.values.verbose === true;
    for (const f of findings) {
      const [first, ...more] = f.detail.split("\n");
      io.out(`[${MARK[f.status]}] ${f.check.padEnd(13)} ${first}`);
      more.forEach((l) => io.out(`       ${" ".repeat(13)} ${l.trim()}`));
      if (f.fix) io.out(`       ${" ".repeat(13)} fix: ${f.fix}`);
      if (f.reason && verbose) io.out(`       ${" ".repeat(13)} why: ${f.reason}`);
    }
    return findings.some((f) => f.status === "problem") ? 1 : 0;
  },
};
