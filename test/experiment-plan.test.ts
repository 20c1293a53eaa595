// What a plan's submissions depend on, found without running anything.
import { lstatSync, mkdtempSync, readFileSync, readdirSync, readlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

import { describe, expect, it } from "vitest";

import { ModuleLoader } from "../ts/config/classes/module.js";
import { markAsOutputOf, setInitTasks } from "../ts/config/identifier-marks.js";
import { ConfigError } from "../ts/errors.js";
import { cycleThrough, dependenciesOf } from "../ts/experiment/dependencies.js";
import { experiment } from "../ts/experiment/experiment.js";
import { LocalLauncher, SlurmLauncher } from "../ts/experiment/launchers.js";
import { listJobs } from "../ts/report/job.js";
import { jobOf, prepareJobDirectory } from "../ts/workspace/job.js";
import { listExperiments } from "../ts/workspace/xpm-records.js";
import { finetuneFrom, smallLearner } from "./helpers/experiments.js";

const outputOf = (task: ReturnType<typeof smallLearner>) => markAsOutputOf(ModuleLoader.C({ value: task.model, path: "/m.safetensors" }), task);

describe("a plan's dependencies", () => {
  it("are the producers of the outputs a task uses, in its init tasks or its parameters", () => {
    const a = smallLearner(1e-2);
    const b = smallLearner(2e-2);
    expect(dependenciesOf(a)).toEqual([]);
    const stage2 = finetuneFrom(outputOf(a));
    expect(dependenciesOf(stage2)).toEqual([a]);
    // Twice the same producer counts once; a producer's own inputs are not the task's.
    const both = setInitTasks(smallLearner(3e-3), [outputOf(a), outputOf(b), outputOf(a)]);
    expect(dependenciesOf(both)).toEqual([a, b]);
    expect(dependenciesOf(finetuneFrom(outputOf(stage2)))).toEqual([stage2]);
  });

  it("finds a cycle made by hand, and submit() refuses it before anything runs", async () => {
    const a = smallLearner(1e-2);
    const b = setInitTasks(smallLearner(2e-2), [outputOf(a)]);
    expect(cycleThrough(b)).toBeUndefined();
    setInitTasks(a, [outputOf(b)]);
    expect(cycleThrough(b)).toEqual([b, a, b]);
    const workspace = mkdtempSync(join(tmpdir(), "xpm-plan-"));
    const run = experiment("cycle", (xp) => void xp.submit(b), { workspace, log: null, handleSignals: false });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow(/a cycle of dependencies/);
  });
});

/** Every file, folder and link under `root`, with the files' bytes and the links' targets. */
function snapshot(root: string): Record<string, string> {
  const entries: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name);
      const stat = lstatSync(path);
      const key = relative(root, path);
      if (stat.isSymbolicLink()) entries[key] = `-> ${readlinkSync(path)}`;
      else if (stat.isDirectory()) {
        entries[key] = "dir";
        walk(path);
      } else entries[key] = readFileSync(path, "latin1");
    }
  };
  walk(root);
  return entries;
}

describe("a plan refused before anything runs", () => {
  const quiet = { log: null, handleSignals: false } as const;

  it("leaves the workspace as it was, and names the jobs by class, tags and experiment, the launchers by their settings", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-refused-"));
    // What an earlier plan left: a job folder of another configuration.
    const earlier = smallLearner(7e-3);
    prepareJobDirectory(earlier, jobOf(earlier, workspace));
    const before = snapshot(workspace);
    const upstream = smallLearner(5e-3);
    const twice = experiment("refusals", (xp) => {
      xp.submit(smallLearner(6e-3), { tags: { lr: 0.006 } });
      xp.submit(upstream, { tags: { lr: 0.005, seed: 0 }, launcher: LocalLauncher.C({ max_jobs: 2 }) });
      xp.submit(upstream, { launcher: SlurmLauncher.C({ partition: "gpu", time: "4:00:00" }) });
    }, { workspace, ...quiet });
    const error = (await twice.catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(ConfigError);
    expect(error.message).toContain('experiment "refusals"');
    expect(error.message).toContain(`Learner ${jobOf(upstream, workspace).identifier.slice(0, 12)} [lr=0.005 seed=0]`);
    expect(error.message).toContain("LocalLauncher(max_jobs=2)");
    expect(error.message).toContain("SlurmLauncher(partition=gpu, time=4:00:00)");
    expect(error.message).not.toContain("__xpmtype__");
    expect(snapshot(workspace)).toEqual(before);
    expect(listJobs(workspace).map((j) => j.dir)).toEqual([jobOf(earlier, workspace).dir]);
    expect(listExperiments(workspace)).toEqual([]);

    // A dependency neither submitted nor done, and a cycle: refused, nothing written either.
    const missing = experiment("refusals", (xp) => {
      xp.submit(smallLearner(6e-3));
      xp.submit(finetuneFrom(outputOf(upstream)), { tags: { stage: 2 } });
    }, { workspace, ...quiet });
    await expect(missing).rejects.toThrow(/experiment "refusals": job Learner [0-9a-f]{12} \[stage=2\] uses the outputs of the Learner [0-9a-f]{12}, which is neither submitted/);
    const a = smallLearner(1e-2);
    const b = setInitTasks(smallLearner(2e-2), [outputOf(a)]);
    setInitTasks(a, [outputOf(b)]);
    await expect(experiment("refusals", (xp) => void xp.submit(b, { tags: { stage: "b" } }), { workspace, ...quiet })).rejects.toThrow(
      /experiment "refusals": job Learner [0-9a-f]{12} \[stage=b\] is part of a cycle of dependencies: Learner [0-9a-f]{12} -> Learner/,
    );
    expect(snapshot(workspace)).toEqual(before);
  });

  it("leaves no workspace where there was none", async () => {
    const workspace = join(mkdtempSync(join(tmpdir(), "xpm-refused-")), "xpm-workspace");
    const upstream = smallLearner(5e-3);
    const twice = experiment("refusals", (xp) => {
      xp.submit(upstream, { launcher: LocalLauncher.C({ max_jobs: 2 }) });
      xp.submit(upstream, { launcher: LocalLauncher.C({ max_jobs: 3 }) });
    }, { workspace, ...quiet });
    await expect(twice).rejects.toThrow(/LocalLauncher\(max_jobs=2\).*LocalLauncher\(max_jobs=3\)/);
    expect(readdirSync(join(workspace, ".."))).toEqual([]);
  });
});
