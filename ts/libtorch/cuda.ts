import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";

import type { LibtorchInstall, LibtorchSearch } from "./locate.js";

/**
 * Files that must sit in the `nvidia/` directory beside `torch/` for `libtorch_cuda.so` to load
 * (it finds them through its own rpath): one per wheel it needs, the rest come with them.
 */
export const CUDA_SENTINELS = [
  "cu13/lib/libcudart.so.13",
  "cu13/lib/libcublas.so.13",
  "cu13/lib/libcusparse.so.12",
  "cu13/lib/libcufft.so.12",
  "cu13/lib/libcurand.so.10",
  "cu13/lib/libnvJitLink.so.13",
  "cu13/lib/libcufile.so.0",
  "cudnn/lib/libcudnn.so.9",
  "nccl/lib/libnccl.so.2",
  "cusparselt/lib/libcusparseLt.so.0",
  "nvshmem/lib/libnvshmem_host.so.3",
];

/** The CUDA libraries missing beside the torch directory `root` (empty: CUDA can load). */
export function missingCudaLibraries(root: string, exists: (path: string) => boolean = existsSync): string[] {
  const nvidia = join(dirname(root), "nvidia");
  const missing = CUDA_SENTINELS.filter((file) => !exists(join(nvidia, file)));
  return exists(join(root, "lib", "libtorch_cuda.so")) ? missing : ["torch/lib/libtorch_cuda.so", ...missing];
}

/**
 * The Linux requirements of torch's METADATA that bring its CUDA libraries: `cuda-toolkit[...]`
 * and the `nvidia-*` wheels, pins as written. Python-only ones (triton, cuda-bindings) and the
 * rest are left out: libtorch does not load them.
 */
export function cudaRequirements(metadata: string): string[] {
  const out: string[] = [];
  for (const line of metadata.split("\n")) {
    const m = /^Requires-Dist:\s*([^;]+?)\s*(?:;\s*(.*))?$/.exec(line.trim());
    if (!m) continue;
    const [, requirement = "", marker = ""] = m;
    if (/extra\s*==/.test(marker)) continue;
    if (marker && !/platform_system\s*==\s*"Linux"/.test(marker)) continue;
    if (/^(cuda-toolkit|nvidia-)/i.test(requirement)) out.push(requirement.replace(/\s+/g, ""));
  }
  return out;
}

/** The METADATA of the torch whose `torch/` directory is `root`, if its dist-info is beside it. */
export function readTorchMetadata(root: string): string | undefined {
  const site = dirname(root);
  const info = readdirSync(site).find((name) => /^torch-[0-9][^/]*\.dist-info$/.test(name));
  if (!info) return undefined;
  const file = join(site, info, "METADATA");
  return existsSync(file) ? readFileSync(file, "utf8") : undefined;
}

/** What `setup --cuda` does. */
export type CudaPlan =
  | { readonly action: "reuse"; readonly install: LibtorchInstall }
  | { readonly action: "install"; readonly why: string }
  | { readonly action: "refuse"; readonly message: string };

/**
 * Decides `setup --cuda` from what {@link locateLibtorch} found: a torch with its CUDA libraries
 * is reused (a virtualenv's, through XPM_TORCH_PYTHON or XPM_TORCH_LIBTORCH); one set explicitly
 * without them is refused (installing elsewhere would not be used); otherwise the CUDA set is
 * installed into the managed cache.
 */
export function planCudaSetup(
  search: LibtorchSearch,
  force: boolean,
  missing: (root: string) => string[] = missingCudaLibraries,
): CudaPlan {
  const found = search.found;
  if (!found) return { action: "install", why: "no torch 2.11 found" };
  const absent = missing(found.root);
  if (absent.length === 0 && !force) return { action: "reuse", install: found };
  if (found.source === "XPM_TORCH_LIBTORCH" || found.source === "LIBTORCH") {
    if (absent.length === 0) return { action: "reuse", install: found };
    return {
      action: "refuse",
      message:
        `${found.source} points at ${found.root}, a torch without its CUDA libraries ` +
        `(missing: ${absent.join(", ")}). Install torch==2.11.0 with CUDA there ` +
        `(pip install torch==2.11.0), or unset ${found.source} so that setup --cuda installs into the cache.`,
    };
  }
  return { action: "install", why: absent.length ? `the ${found.source} torch lacks ${absent.join(", ")}` : "forced" };
}
