// The Node.js versions xpm-torch says it supports are true of everything `npm install` puts in a
// clone: no package of package-lock.json asks for more (npm would warn EBADENGINE), and the
// README, package.json, the platform package and `doctor` state the same range.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { nodeSupported } from "../ts/cli/doctor.js";
import { repoRoot } from "./helpers/node.js";

// semver is in the lock already (through @napi-rs/cli); npm judges engines with it.
const { satisfies } = createRequire(import.meta.url)("semver") as { satisfies(version: string, range: string): boolean };

interface LockEntry {
  engines?: { node?: string };
  optional?: boolean;
  os?: string[];
  cpu?: string[];
  libc?: string[];
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(join(repoRoot, file), "utf8")) as T;
const ENGINES = "^20.19.0 || ^22.13.0 || >=24.0.0";
// The lowest version of each supported line, and one later release of each.
const SUPPORTED = ["20.19.0", "20.20.2", "22.13.0", "22.20.0", "24.0.0", "25.1.0"];

/** Whether npm installs this entry on linux x64 glibc (optional platform packages of others are skipped). */
function installedHere(entry: LockEntry): boolean {
  const fits = (list: string[] | undefined, value: string) => list === undefined || list.includes(value);
  return fits(entry.os, "linux") && fits(entry.cpu, "x64") && fits(entry.libc, "glibc");
}

describe("supported Node.js versions", () => {
  it("package.json, the platform package, the README and doctor state one range", () => {
    expect(readJson<{ engines: { node: string } }>("package.json").engines.node).toBe(ENGINES);
    expect(readJson<{ engines: { node: string } }>("npm/linux-x64-gnu/package.json").engines.node).toBe(ENGINES);
    expect(readFileSync(join(repoRoot, "README.md"), "utf8")).toContain("Node.js 20 (≥ 20.19), 22 (≥ 22.13) or ≥ 24, with npm");
    for (const v of SUPPORTED) expect(nodeSupported(v), v).toBe(true);
    for (const v of ["20.17.0", "20.18.3", "21.7.0", "22.12.0", "23.5.0", "18.20.0"]) expect(nodeSupported(v), v).toBe(false);
    for (const v of [...SUPPORTED, "20.18.3", "22.12.0", "23.5.0", "21.7.0"]) expect(nodeSupported(v), v).toBe(satisfies(v, ENGINES));
  });

  it("no package npm installs in a clone asks for a Node.js the range allows not (no EBADENGINE)", () => {
    const lock = readJson<{ packages: Record<string, LockEntry> }>("package-lock.json");
    const unmet: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = entry.engines?.node;
      if (path === "" || range === undefined || !installedHere(entry)) continue;
      for (const v of SUPPORTED) if (!satisfies(v, range)) unmet.push(`${path.replace(/^.*node_modules\//, "")} wants node ${range} (not ${v})`);
    }
    expect(unmet).toEqual([]);
  });
});
