// `xpm-torch learn FILE` as a user runs it: the built command (what `npx xpm-torch` starts), in
// a project of each package kind that installed xpm-torch, on each kind of module file.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { repoRoot, userEnv } from "./helpers/node.js";

type PackageKind = "none" | "commonjs" | "module";

// Each file its own seed, so that each is a job of its own that trains.
const esmSource = (seed: number) => `import { demoLearner } from "xpm-torch";
export default demoLearner({ seed: ${seed}, max_epochs: 1, steps_per_epoch: 3 });
`;
const tsSource = (seed: number) => `import { demoLearner, type LearnerConfig } from "xpm-torch";
const learner: LearnerConfig = demoLearner({ seed: ${seed}, max_epochs: 1, steps_per_epoch: 3 });
export { learner };
`;
const cjsSource = (seed: number) => `const { demoLearner } = require("xpm-torch");
module.exports = demoLearner({ seed: ${seed}, max_epochs: 1, steps_per_epoch: 3 });
`;

/** What a user of each package kind writes in each file kind. */
function sources(kind: PackageKind): Record<string, string> {
  return {
    "experiment.ts": tsSource(1),
    "experiment.mts": tsSource(2),
    "experiment.cts": tsSource(3),
    "experiment.mjs": esmSource(4),
    "experiment.cjs": cjsSource(5),
    // A .js file is CommonJS in a CommonJS package, an ES module in an ES one, and either where
    // no package.json says (Node tells them apart by their syntax).
    "experiment.js": kind === "commonjs" ? cjsSource(6) : esmSource(6),
  };
}

/** A project of `kind` with xpm-torch installed (linked, as `npm link` does). */
function project(kind: PackageKind): string {
  const dir = mkdtempSync(join(tmpdir(), `xpm-cli-${kind}-`));
  mkdirSync(join(dir, "node_modules"));
  symlinkSync(repoRoot, join(dir, "node_modules", "xpm-torch"), "dir");
  if (kind !== "none") writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "experiments", version: "1.0.0", type: kind }));
  for (const [file, text] of Object.entries(sources(kind))) writeFileSync(join(dir, file), text);
  return dir;
}

/** `npx xpm-torch learn FILE` in `dir`: the package's own bin script. */
function learn(dir: string, file: string) {
  return spawnSync(process.execPath, [join(repoRoot, "dist", "cli.js"), "learn", file, "--workspace", join(dir, "ws"), "--quiet"], {
    cwd: dir,
    env: userEnv(),
    encoding: "utf8",
    timeout: 120_000,
  });
}

describe.each<PackageKind>(["none", "commonjs", "module"])("xpm-torch learn in a project of package type %s", (kind) => {
  const dir = project(kind);

  it.each(Object.keys(sources(kind)))("trains the Learner of %s", (file) => {
    const run = learn(dir, file);
    expect(run.stderr).not.toMatch(/ERR_|Error/);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("trained 1 epochs, 3 steps");
  });

  it("runs the params.json of a job it trained, as the same job", () => {
    const typeDir = join(dir, "ws", "jobs", "xpm_torch.learner.learner");
    const job = readdirSync(typeDir)[0]!;
    const run = learn(dir, join(typeDir, job, "params.json"));
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("this job had already run");
    expect(run.stdout).toContain(job);
  });
});
