import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { nodeEval, userEnv } from "./helpers/node.js";

const IMPORT_LEARN = "import('xpm-torch').then(m => console.log(typeof m.learn), e => { console.error(e.message); process.exit(3); })";

function fakeTorch(version: string): string {
  const root = join(mkdtempSync(join(tmpdir(), "xpm-fake-torch-")), "torch");
  mkdirSync(join(root, "lib"), { recursive: true });
  writeFileSync(join(root, "lib", "libtorch_cpu.so"), "");
  writeFileSync(join(root, "version.py"), `__version__ = '${version}'\n`);
  return root;
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
});
