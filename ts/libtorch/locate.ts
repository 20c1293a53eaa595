import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

import { TORCH_VERSION, managedTorchDir } from "../paths.js";

/** A libtorch that can be loaded: the directory holding `libtorch_cpu.so` and its version. */
export interface LibtorchInstall {
  /** The `torch` package directory (holds `lib/`, `include/`, `version.py`). */
  readonly root: string;
  /** The directory of the shared libraries. */
  readonly lib: string;
  /** The full version, e.g. `2.11.0+cu130`. */
  readonly version: string;
  /** Where it was found. */
  readonly source: "XPM_TORCH_LIBTORCH" | "LIBTORCH" | "cache" | "python";
}

/** Why no candidate was usable, one line per candidate examined. */
export interface LibtorchSearch {
  readonly found?: LibtorchInstall;
  readonly tried: readonly string[];
  /** Set when an explicitly configured location is unusable: no fallback is taken. */
  readonly explicitProblem?: string;
}

export const SETUP_COMMAND = "npx xpm-torch setup";

function readVersion(root: string): string | undefined {
  const versionPy = join(root, "version.py");
  if (existsSync(versionPy)) {
    const match = /^__version__\s*=\s*['"]([^'"]+)['"]/m.exec(readFileSync(versionPy, "utf8"));
    return match?.[1];
  }
  const buildVersion = join(root, "build-version");
  if (existsSync(buildVersion)) return readFileSync(buildVersion, "utf8").trim();
  return undefined;
}

/** Checks one candidate `torch` directory; returns the install or why it is unusable. */
export function inspect(root: string, source: LibtorchInstall["source"]): LibtorchInstall | string {
  // Accept both the package dir and its lib/ dir.
  if (basename(root) === "lib" && existsSync(join(root, "libtorch_cpu.so"))) root = dirname(root);
  const lib = join(root, "lib");
  if (!existsSync(join(lib, "libtorch_cpu.so"))) return `${root}: no lib/libtorch_cpu.so`;
  const version = readVersion(root);
  if (!version) return `${root}: cannot tell the torch version (no version.py nor build-version)`;
  if (version.split("+")[0] !== TORCH_VERSION) {
    return `${root}: torch ${version}, but xpm-torch needs ${TORCH_VERSION}`;
  }
  return { root, lib, version, source };
}

function pythonTorchDir(python: string): string | undefined {
  try {
    // find_spec locates the package without importing it: fast, and fine where import fails.
    const out = execFileSync(
      python,
      ["-c", "import importlib.util as u;s=u.find_spec('torch');print(s.submodule_search_locations[0] if s else '')"],
      { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"], timeout: 10_000 },
    ).trim();
    return out || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Finds libtorch: `XPM_TORCH_LIBTORCH` or `LIBTORCH` (explicit: used or refused, never skipped),
 * then the managed cache that `xpm-torch setup` fills, then the torch of `python3` (or of
 * `XPM_TORCH_PYTHON`).
 */
export function locateLibtorch(env: NodeJS.ProcessEnv = process.env): LibtorchSearch {
  for (const name of ["XPM_TORCH_LIBTORCH", "LIBTORCH"] as const) {
    const value = env[name];
    if (!value) continue;
    const result = inspect(value, name);
    if (typeof result === "string") {
      return { tried: [`${name}=${value}`], explicitProblem: `${name} is set, but ${result}` };
    }
    return { found: result, tried: [] };
  }
  const tried: string[] = [];
  const cached = inspect(join(managedTorchDir(env), "torch"), "cache");
  if (typeof cached !== "string") return { found: cached, tried };
  tried.push(`managed cache: ${cached}`);

  const python = env.XPM_TORCH_PYTHON || "python3";
  const dir = pythonTorchDir(python);
  if (dir) {
    const viaPython = inspect(dir, "python");
    if (typeof viaPython !== "string") return { found: viaPython, tried };
    tried.push(`${python}: ${viaPython}`);
  } else {
    tried.push(`${python}: no torch package`);
  }
  return { tried };
}

/** The explanation shown when nothing usable was found. */
export function notFoundMessage(search: LibtorchSearch): string {
  const lines = [
    `xpm-torch needs libtorch ${TORCH_VERSION} (the torch==${TORCH_VERSION} Python wheel) and found none.`,
  ];
  if (search.explicitProblem) lines.push(`  ${search.explicitProblem}`);
  for (const t of search.tried) lines.push(`  tried ${t}`);
  lines.push(
    `Fix: run \`${SETUP_COMMAND}\` (downloads about 0.55 GB into the xpm-torch cache),`,
    `  or point XPM_TORCH_LIBTORCH at the torch directory of a torch ${TORCH_VERSION} install.`,
  );
  return lines.join("\n");
}
