import { homedir } from "node:os";
import { join } from "node:path";

/** The libtorch release xpm-torch is built against (tch 0.24 follows it exactly). */
export const TORCH_VERSION = "2.11.0";

/** Where xpm-torch keeps what it downloads: `XPM_TORCH_CACHE`, else the XDG cache. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.XPM_TORCH_CACHE) return env.XPM_TORCH_CACHE;
  const xdg = env.XDG_CACHE_HOME || join(homedir(), ".cache");
  return join(xdg, "xpm-torch");
}

/** The managed libtorch install inside the cache (a pip `--target` tree: `torch/`, `nvidia/`). */
export function managedTorchDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), `torch-${TORCH_VERSION}`);
}
