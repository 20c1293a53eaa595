import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { LibtorchNotFoundError } from "../ts/errors.js";
import { inspect, locateLibtorch } from "../ts/libtorch/locate.js";
import { provisionLibtorch } from "../ts/libtorch/provision.js";

function fakeTorchAt(root: string, version: string): string {
  mkdirSync(join(root, "lib"), { recursive: true });
  writeFileSync(join(root, "lib", "libtorch_cpu.so"), "");
  writeFileSync(join(root, "version.py"), `__version__ = '${version}'\n`);
  return root;
}

function fakePython(dir: string, torchDir: string | undefined, exitCode = 0): string {
  const script = join(dir, "python3");
  const body = torchDir ? `echo ${torchDir}` : "echo";
  writeFileSync(script, `#!/bin/sh\n${body}\nexit ${exitCode}\n`);
  chmodSync(script, 0o755);
  return script;
}

const tmp = () => mkdtempSync(join(tmpdir(), "xpm-locate-"));

describe("locating libtorch", () => {
  it("accepts a torch directory or its lib/ and reads the version", () => {
    const root = fakeTorchAt(join(tmp(), "torch"), "2.11.0+cu130");
    for (const candidate of [root, join(root, "lib")]) {
      const found = inspect(candidate, "LIBTORCH");
      expect(found).toMatchObject({ root, lib: join(root, "lib"), version: "2.11.0+cu130" });
    }
  });

  it("prefers the managed cache, then the Python torch", () => {
    const cache = tmp();
    const pyTorch = fakeTorchAt(join(tmp(), "torch"), "2.11.0");
    const python = fakePython(tmp(), pyTorch);
    const env = { XPM_TORCH_CACHE: cache, XPM_TORCH_PYTHON: python };
    expect(locateLibtorch(env).found).toMatchObject({ source: "python", root: pyTorch });

    fakeTorchAt(join(cache, "torch-2.11.0", "torch"), "2.11.0+cu130");
    expect(locateLibtorch(env).found).toMatchObject({ source: "cache" });
  });

  it("skips a Python torch of the wrong version and says so", () => {
    const python = fakePython(tmp(), fakeTorchAt(join(tmp(), "torch"), "2.13.0"));
    const search = locateLibtorch({ XPM_TORCH_CACHE: tmp(), XPM_TORCH_PYTHON: python });
    expect(search.found).toBeUndefined();
    expect(search.tried.join("\n")).toContain("torch 2.13.0, but xpm-torch needs 2.11.0");
  });

  it("never falls back when an explicit location is wrong", () => {
    const cache = tmp();
    fakeTorchAt(join(cache, "torch-2.11.0", "torch"), "2.11.0");
    const search = locateLibtorch({ XPM_TORCH_CACHE: cache, LIBTORCH: "/nonexistent/torch" });
    expect(search.found).toBeUndefined();
    expect(search.explicitProblem).toBe("LIBTORCH is set, but /nonexistent/torch: no lib/libtorch_cpu.so");
  });
});

describe("provisioning libtorch", () => {
  it("reuses what it finds without running pip", () => {
    const cache = tmp();
    fakeTorchAt(join(cache, "torch-2.11.0", "torch"), "2.11.0+cu130");
    const lines: string[] = [];
    const found = provisionLibtorch({
      env: { XPM_TORCH_CACHE: cache, XPM_TORCH_PYTHON: "/nonexistent/python3" },
      log: (l) => lines.push(l),
    });
    expect(found.source).toBe("cache");
    expect(lines.join("\n")).toMatch(/libtorch 2\.11\.0\+cu130 ready at .* \(from cache\)/);
  });

  it("leaves no partial install behind when pip fails", () => {
    const cache = tmp();
    const python = fakePython(tmp(), undefined, 1);
    const run = () =>
      provisionLibtorch({ env: { XPM_TORCH_CACHE: cache, XPM_TORCH_PYTHON: python }, log: () => {} });
    expect(run).toThrow(LibtorchNotFoundError);
    expect(run).toThrow(/installing torch==2\.11\.0 failed \(pip exited with 1\)/);
    expect(readdirSync(cache)).toEqual([]);
    expect(existsSync(join(cache, "torch-2.11.0"))).toBe(false);
  });
});
