import { availableParallelism } from "node:os";

import { SETUP_COMMAND, locateLibtorch, notFoundMessage } from "../libtorch/locate.js";
import { TORCH_VERSION } from "../paths.js";
import type { Command } from "./command.js";

/** One finding: what was checked, what was found, and the fix when it is a problem. */
export interface Finding {
  readonly check: string;
  readonly status: "ok" | "warning" | "problem";
  readonly detail: string;
  readonly fix?: string;
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
}

function nodeFinding(): Finding {
  const [major = 0, minor = 0] = process.versions.node.split(".").map(Number);
  const ok = major > 20 || (major === 20 && minor >= 17);
  return ok
    ? { check: "Node.js", status: "ok", detail: process.versions.node }
    : { check: "Node.js", status: "problem", detail: `${process.versions.node}, xpm-torch needs ≥ 20.17`, fix: "install Node.js 20.17 or newer" };
}

const GIB = 1024 ** 3;

/**
 * The GPU lines of the report: each GPU (name, memory, compute capability, bf16), the driver,
 * CUDA runtime and NCCL versions; or, plainly, that there is none and why.
 */
export function gpuFindings(report: GpuReport, cudnn = false): Finding[] {
  if (!report.usable) {
    const why = report.problem ?? "unknown reason";
    return [{ check: "GPU", status: "ok", detail: `none usable: training runs on the CPU (${why})` }];
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

  const { addonNotFoundMessage, loadNative, locateAddon } = await import("../native.js");
  const addon = locateAddon();
  if (!addon.found) {
    findings.push({ check: "addon", status: "problem", detail: addonNotFoundMessage(addon.tried).split("\n").slice(0, -2).join("\n"), fix: addonNotFoundMessage([]).split("\n").slice(1).join(" ").replace(/^Fix: /, "") });
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

  findings.push(...gpuFindings(info.gpus ?? { usable: false, problem: "this addon does not report GPUs" }, info.cudnnAvailable));
  const cores = availableParallelism();
  const threads = `${info.threads} intra-op, ${info.interopThreads} inter-op; ${cores} CPU(s) available`;
  findings.push(
    info.threads > cores
      ? { check: "threads", status: "warning", detail: threads, fix: `set OMP_NUM_THREADS=${cores}: more threads than CPUs slows training down` }
      : { check: "threads", status: "ok", detail: threads },
  );
  const backends = [info.openmp && "OpenMP", info.mkl && "MKL", info.mkldnn && "oneDNN"].filter(Boolean).join(", ");
  findings.push({ check: "CPU back-ends", status: "ok", detail: backends || "none" });
  return findings;
}

const MARK = { ok: "ok  ", warning: "warn", problem: "FAIL" } as const;

export const doctorCommand: Command = {
  name: "doctor",
  summary: "check libtorch (found? version?), the addon, CUDA, devices and threads; say how to fix problems",
  help: `usage: xpm-torch doctor

Checks what training needs, in order: Node.js, libtorch ${TORCH_VERSION} (where it was found and
its version), the native addon, that both load, CUDA and its devices, thread pools and CPU
back-ends. Prints the fix for each problem; exits 1 when there is one.`,
  run: async (_args, io) => {
    const findings = await diagnose();
    for (const f of findings) {
      const [first, ...more] = f.detail.split("\n");
      io.out(`[${MARK[f.status]}] ${f.check.padEnd(13)} ${first}`);
      more.forEach((l) => io.out(`       ${" ".repeat(13)} ${l.trim()}`));
      if (f.fix) io.out(`       ${" ".repeat(13)} fix: ${f.fix}`);
    }
    return findings.some((f) => f.status === "problem") ? 1 : 0;
  },
};
