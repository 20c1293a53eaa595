import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { gpuFindings } from "../ts/cli/doctor.js";
import { CUDA_SENTINELS, cudaRequirements, missingCudaLibraries, planCudaSetup, readTorchMetadata } from "../ts/libtorch/cuda.js";
import type { LibtorchInstall } from "../ts/libtorch/locate.js";

// The Requires-Dist lines of the torch 2.11.0 wheel's METADATA.
const TORCH_METADATA = `Metadata-Version: 2.4
Name: torch
Version: 2.11.0
Requires-Dist: filelock
Requires-Dist: typing-extensions>=4.10.0
Requires-Dist: sympy>=1.13.3
Requires-Dist: cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2; platform_system == "Linux"
Requires-Dist: cuda-bindings<14,>=13.0.3; platform_system == "Linux"
Requires-Dist: nvidia-cudnn-cu13==9.19.0.56; platform_system == "Linux"
Requires-Dist: nvidia-cusparselt-cu13==0.8.0; platform_system == "Linux"
Requires-Dist: nvidia-nccl-cu13==2.28.9; platform_system == "Linux"
Requires-Dist: nvidia-nvshmem-cu13==3.4.5; platform_system == "Linux"
Requires-Dist: triton==3.6.0; platform_system == "Linux"
Requires-Dist: optree>=0.13.0; extra == "optree"
`;

function install(root: string, source: LibtorchInstall["source"]): LibtorchInstall {
  return { root, lib: join(root, "lib"), version: "2.11.0+cu130", source };
}

describe("setup --cuda", () => {
  it("reads exactly the CUDA wheels from torch's own pins", () => {
    expect(cudaRequirements(TORCH_METADATA)).toEqual([
      "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.2",
      "nvidia-cudnn-cu13==9.19.0.56",
      "nvidia-cusparselt-cu13==0.8.0",
      "nvidia-nccl-cu13==2.28.9",
      "nvidia-nvshmem-cu13==3.4.5",
    ]);
    // Other platforms' and extras' requirements are not ours.
    expect(cudaRequirements('Requires-Dist: nvidia-foo==1; platform_system == "Windows"\nRequires-Dist: nvidia-bar==2; extra == "x"')).toEqual([]);
  });

  it("reads the pins of the torch in the cache, which npm test provisions", () => {
    const dir = mkdtempSync(join(tmpdir(), "xpm-meta-"));
    mkdirSync(join(dir, "torch"));
    mkdirSync(join(dir, "torch-2.11.0.dist-info"));
    writeFileSync(join(dir, "torch-2.11.0.dist-info", "METADATA"), TORCH_METADATA);
    expect(cudaRequirements(readTorchMetadata(join(dir, "torch")) ?? "")).toHaveLength(5);
    expect(readTorchMetadata(join(mkdtempSync(join(tmpdir(), "xpm-none-")), "torch"))).toBeUndefined();
  });

  it("checks the CUDA libraries beside torch", () => {
    const dir = mkdtempSync(join(tmpdir(), "xpm-cuda-libs-"));
    const root = join(dir, "torch");
    mkdirSync(join(root, "lib"), { recursive: true });
    expect(missingCudaLibraries(root)).toEqual(["torch/lib/libtorch_cuda.so", ...CUDA_SENTINELS]);
    writeFileSync(join(root, "lib", "libtorch_cuda.so"), "");
    for (const file of CUDA_SENTINELS.slice(1)) {
      mkdirSync(join(dir, "nvidia", file, ".."), { recursive: true });
      writeFileSync(join(dir, "nvidia", file), "");
    }
    expect(missingCudaLibraries(root)).toEqual([CUDA_SENTINELS[0]]);
  });

  it("reuses a torch with CUDA, refuses an explicit one without, installs otherwise", () => {
    const none = () => [];
    const lean = () => ["nccl/lib/libnccl.so.2"];
    const venv = install("/venv/site-packages/torch", "python");
    expect(planCudaSetup({ found: venv, tried: [] }, false, none)).toEqual({ action: "reuse", install: venv });
    expect(planCudaSetup({ found: venv, tried: [] }, false, lean)).toMatchObject({ action: "install" });
    expect(planCudaSetup({ tried: [] }, false, none)).toMatchObject({ action: "install", why: "no torch 2.11 found" });
    const cache = install("/cache/torch-2.11.0/torch", "cache");
    expect(planCudaSetup({ found: cache, tried: [] }, true, none)).toEqual({ action: "install", why: "forced" });
    const explicit = install("/opt/torch", "XPM_TORCH_LIBTORCH");
    const refused = planCudaSetup({ found: explicit, tried: [] }, false, lean);
    expect(refused.action).toBe("refuse");
    expect(refused.action === "refuse" && refused.message).toContain("XPM_TORCH_LIBTORCH points at /opt/torch, a torch without its CUDA libraries (missing: nccl/lib/libnccl.so.2)");
    // --force never reinstalls over an explicit torch that has CUDA.
    expect(planCudaSetup({ found: explicit, tried: [] }, true, none)).toEqual({ action: "reuse", install: explicit });
  });
});

describe("doctor's GPU report", () => {
  it("on a machine without an NVIDIA GPU, says plainly there is none, not ok, the loader's error only as the reason", () => {
    const problem =
      "libtorch's CUDA libraries are missing: /c/torch/lib/libtorch_cuda.so cannot be loaded (libcusparse.so.12: cannot open shared object file: No such file or directory)";
    const [line, ...rest] = gpuFindings({ usable: false, problem }, false, false);
    expect(rest).toEqual([]);
    expect(line).toEqual({
      check: "GPU",
      status: "absent",
      detail: "none: no NVIDIA GPU on this machine (no /dev/nvidia<N>); training runs on the CPU",
      reason: problem,
    });
  });

  it("with an NVIDIA GPU that CUDA cannot use, warns and says why", () => {
    const [line, ...rest] = gpuFindings({ usable: false, problem: "no CUDA GPU is usable: no driver" }, false, true);
    expect(rest).toEqual([]);
    expect(line).toEqual({
      check: "GPU",
      status: "warning",
      detail: "an NVIDIA GPU is present but unusable, training runs on the CPU: no CUDA GPU is usable: no driver",
    });
  });

  it("lists each GPU with its memory, capability and bf16, then CUDA and NCCL versions", () => {
    const findings = gpuFindings({
      usable: true,
      driver: "13.0",
      runtime: "13.0",
      nccl: "2.28.9",
      devices: [
        { index: 0, name: "NVIDIA H200", memoryBytes: 150_000_000_000, capability: "9.0", bf16: true },
        { index: 1, name: "Tesla T4", memoryBytes: 16 * 1024 ** 3, capability: "7.5", bf16: false },
      ],
    });
    expect(findings.map((f) => `${f.check}: ${f.detail}`)).toEqual([
      "GPU 0: NVIDIA H200, 139.7 GiB, compute capability 9.0, bf16 supported",
      "GPU 1: Tesla T4, 16.0 GiB, compute capability 7.5, no bf16 (use 16-mixed)",
      "CUDA: driver CUDA 13.0, runtime CUDA 13.0",
      "NCCL: 2.28.9 (ddp on CUDA)",
    ]);
  });
});
