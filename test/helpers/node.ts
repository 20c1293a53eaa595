import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The environment a user has: no LD_LIBRARY_PATH, no LIBTORCH. */
export function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  delete env.LD_LIBRARY_PATH;
  delete env.LIBTORCH;
  if (!("XPM_TORCH_LIBTORCH" in extra)) delete env.XPM_TORCH_LIBTORCH;
  return env;
}

/** Runs `node -e <code>` in the repository root (where `xpm-torch` resolves to this package). */
export function nodeEval(code: string, env: NodeJS.ProcessEnv, timeoutMs = 60_000) {
  const result = spawnSync(process.execPath, ["--input-type=module", "-e", code], {
    cwd: repoRoot,
    env,
    encoding: "utf8",
    timeout: timeoutMs,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, signal: result.signal };
}
