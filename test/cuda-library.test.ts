import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
// Built beside the addon by `npm run build` (npm test builds first).
const library = join(root, "libxpm_torch_cuda.so");
const addon = join(root, "xpm-torch.linux-x64-gnu.node");

function tool(command: string, args: string[]): string {
  const r = spawnSync(command, args, { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`${command} ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
}

const needed = (file: string) => [...tool("readelf", ["-d", file]).matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1] ?? "");

describe("the CUDA library", () => {
  it("links against libtorch's CUDA part, the CUDA runtime and nothing of NCCL directly", () => {
    const deps = needed(library);
    expect(deps).toEqual(expect.arrayContaining(["libtorch_cuda.so", "libc10_cuda.so", "libtorch_cpu.so", "libc10.so", "libcudart.so.13"]));
    expect(deps.filter((d) => /nccl/.test(d))).toEqual([]);
  });

  it("exports every entry point the core binds", () => {
    // The names runtime/cuda.rs looks up, read from its source so that the two cannot drift.
    const source = readFileSync(join(root, "crates", "core", "src", "runtime", "cuda.rs"), "utf8");
    const bound = [...source.matchAll(/symbol\(library, "(xpm_cuda_\w+)"\)/g)].map((m) => m[1] ?? "");
    expect(bound.length).toBeGreaterThanOrEqual(10);
    const exported = new Set(tool("nm", ["-D", "--defined-only", library]).split("\n").map((l) => l.split(" ").pop()));
    expect(bound.filter((name) => !exported.has(name))).toEqual([]);
  });

  it("stays out of the addon, which loads on machines without CUDA", () => {
    const deps = needed(addon);
    expect(deps).toEqual(expect.arrayContaining(["libtorch_cpu.so", "libc10.so"]));
    expect(deps.filter((d) => /cuda|libtorch\.so|xpm_torch_cuda/.test(d))).toEqual([]);
  });
});

describe("scripts/gpu/suite.sh", () => {
  // A stand-in for the python of a torch virtualenv: `probe` asks it one line.
  function fakePython(answer: string, status = 0): string {
    const file = join(mkdtempSync(join(tmpdir(), "xpm-fake-python-")), "python");
    writeFileSync(file, `#!/bin/sh\necho "${answer}"\nexit ${status}\n`);
    chmodSync(file, 0o755);
    return file;
  }

  const suite = (python: string) =>
    spawnSync("bash", [join(root, "scripts", "gpu", "suite.sh"), "run"], { encoding: "utf8", env: { ...process.env, PYTHON: python } });

  it("without a CUDA GPU says so and exits 3, never reporting a pass", () => {
    const r = suite(fakePython("2.11.0+cu130 /nowhere/torch/lib 0"));
    expect(r.status).toBe(3);
    expect(r.stdout).toContain("no CUDA GPU on this machine (torch 2.11.0+cu130 sees none): the GPU suite did not run");
    expect(r.stdout + r.stderr).not.toMatch(/passed/);
  });

  it("refuses another torch version with exit 4", () => {
    const r = suite(fakePython("2.9.1 /nowhere/torch/lib 1"));
    expect(r.status).toBe(4);
    expect(r.stderr).toContain("has torch 2.9.1, the suite needs 2.11");
  });

  it("without torch and without nvidia-smi GPUs, this machine, exits 3", () => {
    const r = suite(fakePython("", 1));
    const hasGpu = spawnSync("nvidia-smi", ["-L"], { encoding: "utf8" }).stdout?.startsWith("GPU ");
    expect(r.status).toBe(hasGpu ? 4 : 3);
  });
});
