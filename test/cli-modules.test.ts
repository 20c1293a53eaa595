// `xpm-torch learn FILE` as a user runs it: the built command (what `npx xpm-torch` starts), in
// a project of each package kind that installed xpm-torch, on each kind of module file; and the
// modules a command loads (a job's process runs `learn` on its params.json: see
// benchmarks/README.md, "Job start").
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { describe, expect, it } from "vitest";

import { demoLearner } from "../ts/demo-config.js";
import { writeParamsJson } from "../ts/workspace/params-json.js";
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

// Scripts that run their Learner themselves, as README's first example does.
const esmScript = (seed: number) => `import { demoLearner, learn } from "xpm-torch";
await learn(demoLearner({ seed: ${seed}, max_epochs: 1, steps_per_epoch: 3 }));
`;
const cjsScript = (seed: number) => `const { demoLearner, learn } = require("xpm-torch");
learn(demoLearner({ seed: ${seed}, max_epochs: 1, steps_per_epoch: 3 })).then((r) => console.log("script:", r.epochs.length));
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
    "script.mts": esmScript(7),
    "script.cjs": cjsScript(8),
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

/** The ES modules `xpm-torch ...args` loads: files of dist/ relative to it, others as resolved URLs. */
function modulesLoaded(args: readonly string[]): string[] {
  const log = join(mkdtempSync(join(tmpdir(), "xpm-modules-")), "modules.log");
  const hooks = pathToFileURL(join(repoRoot, "test", "helpers", "module-log.mjs")).href;
  const run = spawnSync(process.execPath, ["--import", hooks, join(repoRoot, "dist", "cli.js"), ...args], {
    env: userEnv({ XPM_MODULE_LOG: log }),
    encoding: "utf8",
    timeout: 120_000,
  });
  expect(run.status, run.stderr).toBe(0);
  const dist = `${pathToFileURL(join(repoRoot, "dist")).href}/`;
  return [...new Set(readFileSync(log, "utf8").trim().split("\n"))].map((url) => (url.startsWith(dist) ? url.slice(dist.length) : url));
}

// What other commands need, never a job: each one a file of dist/ (checked, so that a renamed
// module cannot make this test pass).
const NOT_FOR_A_JOB = [
  "index.js", // the package's entry, that imports every public module
  "demo.js",
  "demo-config.js",
  "report/report.js", // `report`: the event files, curves, SVG and HTML
  "report/tfevents.js",
  "report/svg.js",
  "report/html.js",
  "libtorch/provision.js", // `setup`
  "config/json-schema.js", // `schema`
  "identity/check-identifiers.js",
  "experiment/experiment.js", // the scheduler runs in the experiment's process, not the job's
];

describe("the modules a command loads", () => {
  const dir = mkdtempSync(join(tmpdir(), "xpm-cli-modules-"));
  const params = join(dir, "params.json");
  writeFileSync(params, writeParamsJson(demoLearner({ seed: 7, max_epochs: 1, steps_per_epoch: 1 }), { workspace: join(dir, "ws"), jobDir: join(dir, "job") }));

  it("learn on a job's params.json trains without the modules of other commands", () => {
    for (const file of NOT_FOR_A_JOB) expect(existsSync(join(repoRoot, "dist", file)), file).toBe(true);
    const loaded = modulesLoaded(["learn", params, "--workspace", join(dir, "ws"), "--quiet"]);
    expect(loaded).toEqual(expect.arrayContaining(["cli/load-config.js", "learn.js", "native.js"]));
    expect(loaded.filter((m) => NOT_FOR_A_JOB.includes(m))).toEqual([]);
    // A params.json needs no TypeScript loader.
    expect(loaded.filter((m) => m.includes("/node_modules/tsx/"))).toEqual([]);
  });

  it("--help loads neither zod nor a configuration or training module", () => {
    const loaded = modulesLoaded(["--help"]);
    expect(loaded).toContain("cli/main.js");
    expect(loaded.filter((m) => m.includes("/node_modules/zod/") || m.startsWith("config/") || m === "learn.js")).toEqual([]);
  });
});
