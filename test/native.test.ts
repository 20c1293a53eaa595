import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { nodeEval, repoRoot, userEnv } from "./helpers/node.js";

const IMPORT_LEARN = "import('xpm-torch').then(m => console.log(typeof m.learn), e => { console.error(e.message); process.exit(3); })";

function fakeTorch(version: string): string {
  const root = join(mkdtempSync(join(tmpdir(), "xpm-fake-torch-")), "torch");
  mkdirSync(join(root, "lib"), { recursive: true });
  writeFileSync(join(root, "lib", "libtorch_cpu.so"), "");
  writeFileSync(join(root, "version.py"), `__version__ = '${version}'\n`);
  return root;
}

/**
 * A project with xpm-torch installed as npm installs it without its platform package: package.json
 * and dist/ under node_modules/xpm-torch (no local build beside them), the dependencies linked.
 */
function projectWithoutPlatformPackage(): string {
  const project = mkdtempSync(join(tmpdir(), "xpm-no-platform-"));
  const installed = join(project, "node_modules", "xpm-torch");
  mkdirSync(installed, { recursive: true });
  cpSync(join(repoRoot, "package.json"), join(installed, "package.json"));
  cpSync(join(repoRoot, "dist"), join(installed, "dist"), { recursive: true });
  for (const name of readdirSync(join(repoRoot, "node_modules"))) {
    if (name.startsWith(".") || name.startsWith("xpm-torch")) continue;
    symlinkSync(join(repoRoot, "node_modules", name), join(project, "node_modules", name));
  }
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "user", private: true, type: "module" }));
  return project;
}

describe("loading the package", () => {
  it("imports with no LD_LIBRARY_PATH and exposes learn()", () => {
    const out = nodeEval(IMPORT_LEARN, userEnv());
    expect(out.stderr).toBe("");
    expect(out.stdout.trim()).toBe("function");
    expect(out.status).toBe(0);
  });

  it("explains how to get libtorch when none is found", () => {
    const empty = mkdtempSync(join(tmpdir(), "xpm-empty-cache-"));
    const out = nodeEval(IMPORT_LEARN, userEnv({ XPM_TORCH_CACHE: empty, XPM_TORCH_PYTHON: "/nonexistent/python3" }));
    expect(out.status).toBe(3);
    expect(out.stderr).toContain("xpm-torch needs libtorch 2.11.0");
    expect(out.stderr).toContain("npx xpm-torch setup");
    expect(out.stderr).toContain(empty);
  });

  it("refuses an explicitly configured libtorch of another version, saying which", () => {
    const torch = fakeTorch("2.10.0+cpu");
    const out = nodeEval(IMPORT_LEARN, userEnv({ XPM_TORCH_LIBTORCH: torch }));
    expect(out.status).toBe(3);
    expect(out.stderr).toContain(`XPM_TORCH_LIBTORCH is set, but ${torch}: torch 2.10.0+cpu, but xpm-torch needs 2.11.0`);
  });

  it("names the missing platform package and how to install it, when it is not installed", () => {
    const project = realpathSync(projectWithoutPlatformPackage());
    const { version } = JSON.parse(readFileSync(join(repoRoot, "package.json"), "utf8")) as { version: string };
    const out = spawnSync(process.execPath, ["--input-type=module", "-e", IMPORT_LEARN], { cwd: project, env: userEnv(), encoding: "utf8", timeout: 60_000 });
    rmSync(project, { recursive: true, force: true });
    expect(out.status, out.stderr).toBe(3);
    expect(out.stderr).toContain(
      "xpm-torch cannot find its native addon: the platform package xpm-torch-linux-x64-gnu is not installed (it could not be resolved).",
    );
    expect(out.stderr).toContain(`tried xpm-torch-linux-x64-gnu: not installed (it cannot be resolved from ${join(project, "node_modules", "xpm-torch")})`);
    expect(out.stderr).toContain(`npm install <dir>/xpm-torch-${version}.tgz <dir>/xpm-torch-linux-x64-gnu-${version}.tgz`);
    expect(out.stderr).toContain("`npm run pack`");
    expect(out.stderr).not.toContain("--omit=optional");
  });
});
