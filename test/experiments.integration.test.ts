import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import {
  ConfigError,
  ExperimentError,
  JobFailedError,
  LetorDataset,
  LocalLauncher,
  PairwiseSampler,
  LossTrainer,
  HingeLoss,
  Learner,
  SlurmLauncher,
  experiment,
  identifierOf,
} from "../ts/index.js";
import { plannedLoaders } from "../ts/experiment/outputs.js";
import { jobOf } from "../ts/workspace/job.js";
import { finetuneFrom, launchesOf, smallLearner } from "./helpers/experiments.js";
import { packageIndexUrl } from "./helpers/cli.js";
import { repoRoot, userEnv } from "./helpers/node.js";

const freshWorkspace = () => mkdtempSync(join(tmpdir(), "xpm-xp-"));
const quiet = { log: null, handleSignals: false } as const;

describe("experiment() with the LocalLauncher", () => {
  it("runs a sweep and a second stage from the best run, each job in its own process, once", async () => {
    const workspace = freshWorkspace();
    const launcher = LocalLauncher.C({ max_jobs: 2 });
    const plan = async (xp: Parameters<Parameters<typeof experiment>[1]>[0]) => {
      const runs = [1e-2, 3e-3].map((lr) => xp.submit(smallLearner(lr), { tags: { lr } }));
      const best = runs[0]!.loaders.best("val", "ndcg@10");
      const stage2 = xp.submit(finetuneFrom(best), { tags: { stage: 2 } });
      return { runs, stage2, best };
    };
    let handles!: Awaited<ReturnType<typeof plan>>;
    const summary = await experiment("sweep", async (xp) => void (handles = await plan(xp)), { workspace, launcher, ...quiet });
    expect(summary.jobs.map((j) => j.state)).toEqual(["done", "done", "done"]);
    const [a, b] = await Promise.all(handles.runs.map((r) => r.result()));
    const second = await handles.stage2.result();
    expect(a!.cached).toBe(false);
    // Its own process: a launch recorded with a pid that is not ours, output in its files.
    for (const handle of [...handles.runs, handles.stage2]) {
      const launches = launchesOf(handle.jobDir);
      expect(launches).toHaveLength(1);
      expect(launches[0]!.pid).not.toBe(process.pid);
      expect(readFileSync(join(handle.jobDir, "learner.out"), "utf8")).toMatch(/trained 2 epochs|trained 1 epochs/);
    }
    // The loader planned before the run is the one the run produced.
    const produced = a!.loaders.listeners.val!["ndcg@10"]!;
    expect(produced.path).toBe(handles.best.path);
    expect(identifierOf(produced)).toBe(identifierOf(handles.best));
    expect(existsSync(handles.best.path)).toBe(true);
    // The second stage started after the first ended.
    expect(statSync(join(handles.stage2.jobDir, "params.json")).mtimeMs).toBeGreaterThanOrEqual(statSync(join(a!.jobDir, "learner.done")).mtimeMs);
    expect(second.epochs).toHaveLength(1);
    expect(b!.identifier).not.toBe(a!.identifier);

    // Again: nothing runs, the stored results come back.
    const again = await experiment("sweep", async (xp) => {
      const h = await plan(xp);
      expect((await h.stage2.result()).cached).toBe(true);
    }, { workspace, launcher, ...quiet });
    expect(again.jobs.map((j) => j.state)).toEqual(["done", "done", "done"]);
    for (const handle of [...handles.runs, handles.stage2]) expect(launchesOf(handle.jobDir)).toHaveLength(1);
  });

  it("marks a failed job error with its stderr, its dependents dependency failed, and runs it again next time", async () => {
    const workspace = freshWorkspace();
    const missing = join(workspace, "no-such-file.txt");
    const broken = Learner.C({
      ...smallLearner(1e-2),
      trainer: LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: LetorDataset.C({ id: "missing", path: missing }) }), batch_size: 8, hooks: [HingeLoss.C({ margin: 1 })] }),
    });
    let failedJobDir = "";
    const attempt = () =>
      experiment("broken", (xp) => {
        const first = xp.submit(broken);
        failedJobDir = first.jobDir;
        xp.submit(finetuneFrom(first.loaders.learned));
        xp.submit(smallLearner(2e-2));
      }, { workspace, ...quiet });
    const error = await attempt().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperimentError);
    const failures = (error as ExperimentError).failures;
    expect(failures.map((f) => f.state)).toEqual(["error", "dependency failed"]);
    expect(failures[0]).toBeInstanceOf(JobFailedError);
    expect(failures[0]!.message).toContain("no-such-file.txt");
    expect(failures[0]!.stderrTail).toContain("no-such-file.txt");
    expect(launchesOf(failures[1]!.jobDir)).toHaveLength(0);
    // The error is kept: a second run runs the failed job again.
    await attempt().catch(() => undefined);
    expect(launchesOf(failedJobDir)).toHaveLength(2);
  });

  it("refuses a missing dependency and two launchers for one job before any job runs", async () => {
    const workspace = freshWorkspace();
    const upstream = smallLearner(5e-3);
    const other = smallLearner(4e-3);
    const notSubmitted = plannedLoaders(upstream, jobOf(upstream, workspace)).learned;
    const missing = experiment("refusals", (xp) => {
      xp.submit(other);
      xp.submit(finetuneFrom(notSubmitted));
    }, { workspace, ...quiet });
    await expect(missing).rejects.toThrow(ConfigError);
    await expect(missing).rejects.toThrow(/neither submitted in this experiment nor done/);
    const twice = experiment("refusals", (xp) => {
      xp.submit(upstream, { launcher: LocalLauncher.C({ max_jobs: 1 }) });
      xp.submit(upstream, { launcher: LocalLauncher.C({ max_jobs: 2 }) });
    }, { workspace, ...quiet });
    await expect(twice).rejects.toThrow(/already submitted with another launcher/);
    for (const config of [upstream, other]) expect(launchesOf(jobOf(config, workspace).dir)).toHaveLength(0);
  });

  it("after the plan's process is killed, a second run re-attaches to running jobs and runs none twice", async () => {
    const workspace = freshWorkspace();
    const planFile = join(workspace, "plan.mts");
    writeFileSync(planFile, planModule(workspace));
    const start = () => spawn(process.execPath, ["--import", "tsx", planFile], { cwd: repoRoot, env: userEnv(), stdio: ["ignore", "pipe", "pipe"] });
    const first = start();
    let err = "";
    first.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    // Killed as soon as the second job runs: the first may be done or running.
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the plan never started two jobs:\n${err}`)), 100_000);
      first.stderr!.on("data", () => {
        if ((err.match(/ running/g) ?? []).length >= 2) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    first.kill("SIGKILL");
    const second = start();
    let out = "";
    second.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    second.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((resolve) => second.once("exit", resolve));
    expect(code, err).toBe(0);
    const dirs = JSON.parse(out.trim().split("\n").pop()!) as string[];
    expect(dirs).toHaveLength(4);
    for (const dir of dirs) {
      expect(existsSync(join(dir, "learner.done"))).toBe(true);
      expect(launchesOf(dir), dir).toHaveLength(1);
    }
  });

  it("refuses launchers' bad values with the parameter's name", () => {
    expect(() => LocalLauncher.C({ max_jobs: 0 })).toThrow(/max_jobs/);
    expect(() => LocalLauncher.C({ devices: [0, 0] })).toThrow(/devices: lists a GPU twice/);
    expect(() => SlurmLauncher.C({ time: "soon" })).toThrow(/time/);
    expect(() => SlurmLauncher.C({ mem: "lots" })).toThrow(/mem/);
  });
});

function planModule(workspace: string): string {
  return `import { LocalLauncher, experiment } from ${JSON.stringify(packageIndexUrl)};
import { finetuneFrom, smallLearner } from ${JSON.stringify(join(repoRoot, "test", "helpers", "experiments.ts"))};

const summary = await experiment("killed", (xp) => {
  const runs = [1e-2, 2e-2, 3e-2].map((lr) => xp.submit(smallLearner(lr, 0, 3, 40), { tags: { lr } }));
  xp.submit(finetuneFrom(runs[0].loaders.best("val", "ndcg@10")));
}, { workspace: ${JSON.stringify(workspace)}, launcher: LocalLauncher.C({ max_jobs: 2 }) });
console.log(JSON.stringify(summary.jobs.map((j) => j.jobDir)));
`;
}
