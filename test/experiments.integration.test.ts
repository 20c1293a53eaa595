import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
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
import { runCli } from "../ts/cli/main.js";
import { plannedLoaders } from "../ts/experiment/outputs.js";
import { listJobs } from "../ts/report/job.js";
import { jobOf, readLockHolder } from "../ts/workspace/job.js";
import { readJobStatus } from "../ts/workspace/status.js";
import { errLength, finetuneFrom, launchesOf, smallLearner, trainingStarted } from "./helpers/experiments.js";
import { packageIndexUrl } from "./helpers/cli.js";
import { repoRoot, userEnv } from "./helpers/node.js";
import { waitFor } from "./helpers/wait.js";

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

    // `xpm-torch jobs` shows the experiment and tags, and filters by them.
    const listed = await cli(["jobs", workspace, "--tag", "lr=0.01"]);
    expect(listed.code).toBe(0);
    expect(listed.out).toHaveLength(3); // the workspace, the header, the job
    expect(listed.out[2]).toMatch(new RegExp(`${a!.identifier.slice(0, 12)}\\s+done\\s+2\\s.*sweep\\s+lr=0\\.01`));
    expect((await cli(["jobs", workspace, "--state", "done", "--experiment", "sweep"])).out).toHaveLength(5);
    expect((await cli(["jobs", workspace, "--state", "running"])).out.join("\n")).toMatch(/no jobs .* that pass the filters/);

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
    const states = new Map<string, string[]>();
    const attempt = () =>
      experiment("broken", (xp) => {
        const first = xp.submit(broken);
        failedJobDir = first.jobDir;
        xp.submit(finetuneFrom(first.loaders.learned));
        xp.submit(smallLearner(2e-2));
      }, { workspace, ...quiet, onJobState: (job, state) => states.set(job.jobDir, [...(states.get(job.jobDir) ?? []), state]) });
    const error = await attempt().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperimentError);
    const failures = (error as ExperimentError).failures;
    expect(failures.map((f) => f.reason)).toEqual(["failed", "dependency"]);
    expect(failures[0]).toBeInstanceOf(JobFailedError);
    expect(failures[0]!.message).toContain("no-such-file.txt");
    expect(failures[0]!.stderrTail).toContain("no-such-file.txt");
    expect(launchesOf(failures[1]!.jobDir)).toHaveLength(0);
    expect(states.get(failedJobDir)).toEqual(["waiting", "ready", "scheduled", "running", "error"]);
    expect(states.get(failures[1]!.jobDir)).toEqual(["waiting", "error"]);
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
    await expect(twice).rejects.toThrow(/already submitted with another launcher, LocalLauncher\(\); now with LocalLauncher\(max_jobs=2\)/);
    for (const config of [upstream, other]) expect(launchesOf(jobOf(config, workspace).dir)).toHaveLength(0);
    // Refused before anything ran: nothing was written, no job folder, no run of the experiment.
    expect(readdirSync(workspace)).toEqual([]);
  });

  it("after the plan's process is killed, a second run re-attaches to running jobs, runs none twice and keeps max_jobs", async () => {
    const workspace = freshWorkspace();
    const planFile = join(workspace, "plan.mts");
    writeFileSync(planFile, planModule(workspace));
    const first = startPlan(planFile);
    // Killed as soon as two jobs run: none has ended yet, or one has.
    await first.waitFor(/ running/, 2);
    first.child.kill("SIGKILL");
    await first.exit;
    const second = await startPlan(planFile).exit;
    expect(second.code, second.stderr).toBe(0);
    const dirs = JSON.parse(second.stdout.trim().split("\n").pop()!) as string[];
    expect(dirs).toHaveLength(4);
    for (const dir of dirs) {
      expect(existsSync(join(dir, "learner.done"))).toBe(true);
      expect(launchesOf(dir), dir).toHaveLength(1);
    }
    // The jobs the killed plan left took the re-run's slots: never more than max_jobs (2) at once.
    expect(mostAtOnce(dirs)).toBeLessThanOrEqual(2);
  });

  it("two plans started at once, sharing their jobs, run each job once: the other plan follows it", async () => {
    const workspace = freshWorkspace();
    const files = ["one", "two"].map((name) => {
      const file = join(workspace, `${name}.mts`);
      writeFileSync(file, planModule(workspace, name));
      return file;
    });
    const ends = await Promise.all(files.map((file) => startPlan(file).exit));
    for (const end of ends) expect(end.code, end.stderr).toBe(0);
    const dirs = JSON.parse(ends[0]!.stdout.trim().split("\n").pop()!) as string[];
    expect(JSON.parse(ends[1]!.stdout.trim().split("\n").pop()!)).toEqual(dirs);
    for (const dir of dirs) expect(launchesOf(dir), dir).toHaveLength(1);
  });

  it("ends a job whose process is killed (SIGKILL) in error saying so; running the plan again resumes it from its checkpoint", async () => {
    const workspace = freshWorkspace();
    const planFile = join(workspace, "plan.mts");
    writeFileSync(planFile, planModule(workspace, "sigkill", "xp.submit(smallLearner(4e-3, 0, 2, 3000))"));
    const jobDir = join(workspace, "jobs", "xpm_torch.learner.learner", identifierOf(smallLearner(4e-3, 0, 2, 3000)));
    const plan = startPlan(planFile);
    // Once the first epoch's checkpoint is written, as the out-of-memory killer would.
    await waitForFile(join(jobDir, "checkpoints", "last"));
    process.kill(readLockHolder(join(jobDir, "learner.lock"))!.pid, "SIGKILL");
    const killed = await plan.exit;
    expect(killed.code).toBe(1);
    expect(killed.stderr).toMatch(/killed \(SIGKILL: the out-of-memory killer, or kill -9\)/);
    const again = await startPlan(planFile).exit;
    expect(again.code, again.stderr).toBe(0);
    const result = JSON.parse(readFileSync(join(jobDir, ".experimaestro", "result.json"), "utf8")) as { resumed_from: string | null };
    expect(result.resumed_from).toMatch(/checkpoints\/(last|epoch-)/);
  });

  it("stops a job with `jobs kill` and on Ctrl-C; running the plan again resumes it from its checkpoint", async () => {
    const workspace = freshWorkspace();
    const planFile = join(workspace, "plan.mts");
    writeFileSync(planFile, planModule(workspace, "long", "[5e-3].map((lr) => xp.submit(smallLearner(lr, 0, 2, 4000), { tags: { lr } }))"));
    const jobDir = join(workspace, "jobs", "xpm_torch.learner.learner", identifierOf(smallLearner(5e-3, 0, 2, 4000)));
    const killedBy = async (stop: (child: ReturnType<typeof startPlan>) => Promise<void>) => {
      const before = errLength(jobDir);
      const plan = startPlan(planFile);
      await trainingStarted(jobDir, before);
      await stop(plan);
      return plan.exit;
    };
    const killed = await killedBy(async () => {
      const job = listJobs(workspace).find((j) => j.state === "running")!;
      const r = await cli(["jobs", "kill", job.identifier.slice(0, 10), "--workspace", workspace]);
      expect(r.out.join("\n")).toMatch(/sent SIGTERM to process \d+/);
    });
    expect(killed.code).toBe(1);
    expect(killed.stderr).toMatch(/ExperimentError|did not finish/);
    const job = listJobs(workspace)[0]!;
    expect(job).toMatchObject({ state: "error", failureReason: "cancelled" });
    const interrupted = await killedBy(async (plan) => void plan.child.kill("SIGINT"));
    expect(interrupted.stderr).toMatch(/stopping the experiment/);
    expect(interrupted.code).not.toBe(0);
    // The third run finishes it from where the second stopped, a third launch in all.
    const last = startPlan(planFile);
    const end = await last.exit;
    expect(end.code, end.stderr).toBe(0);
    expect(launchesOf(job.dir)).toHaveLength(3);
    const result = JSON.parse(readFileSync(join(job.dir, ".experimaestro", "result.json"), "utf8")) as { resumed_from: string | null };
    expect(result.resumed_from).toMatch(/checkpoints/);
  });

  it("refuses launchers' bad values with the parameter's name", () => {
    expect(() => LocalLauncher.C({ max_jobs: 0 })).toThrow(/max_jobs/);
    expect(() => LocalLauncher.C({ devices: [0, 0] })).toThrow(/devices: lists a GPU twice/);
    expect(() => SlurmLauncher.C({ time: "soon" })).toThrow(/time/);
    expect(() => SlurmLauncher.C({ mem: "lots" })).toThrow(/mem/);
  });
});

/** Resolves once `file` exists; fails after a minute naming it. */
function waitForFile(file: string): Promise<void> {
  return waitFor(() => existsSync(file), file, 60_000, 50);
}

/** The most jobs that ran at once: each from its launch to the end its status.json records. */
function mostAtOnce(dirs: readonly string[]): number {
  const events = dirs.flatMap((dir) => {
    const launched = Date.parse((JSON.parse(readFileSync(join(dir, ".experimaestro", "launches.jsonl"), "utf8").split("\n")[0]!) as { time: string }).time);
    const ended = readJobStatus(dir)!.endedTime!;
    return [
      { at: launched, step: 1 },
      { at: ended, step: -1 },
    ];
  });
  let now = 0;
  let most = 0;
  // At equal times an end comes first: a slot freed and taken in the same millisecond.
  for (const e of events.sort((a, b) => a.at - b.at || a.step - b.step)) most = Math.max(most, (now += e.step));
  return most;
}

function planModule(workspace: string, name = "killed", submits = DEFAULT_SUBMITS): string {
  return `import { LocalLauncher, experiment } from ${JSON.stringify(packageIndexUrl)};
import { finetuneFrom, smallLearner } from ${JSON.stringify(join(repoRoot, "test", "helpers", "experiments.ts"))};

const summary = await experiment(${JSON.stringify(name)}, (xp) => {
  ${submits};
}, { workspace: ${JSON.stringify(workspace)}, launcher: LocalLauncher.C({ max_jobs: 2 }) });
console.log(JSON.stringify(summary.jobs.map((j) => j.jobDir)));
`;
}

const DEFAULT_SUBMITS = `const runs = [1e-2, 2e-2, 3e-2].map((lr) => xp.submit(smallLearner(lr, 0, 3, 40), { tags: { lr } }));
  xp.submit(finetuneFrom(runs[0].loaders.best("val", "ndcg@10")))`;

/** A plan module run as its own process, with its output kept. */
function startPlan(file: string) {
  const child = spawn(process.execPath, ["--import", "tsx", file], { cwd: repoRoot, env: userEnv(), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
  // "close", not "exit": the output streams are read to their end.
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
  /** Resolves once stderr holds `count` matches of `pattern`; rejects if the plan ends first, or after two minutes. */
  const waitFor = (pattern: RegExp, count = 1, timeoutMs = 120_000) =>
    new Promise<void>((resolve, reject) => {
      const deadline = Date.now() + timeoutMs;
      const timer = setInterval(() => {
        if ((stderr.match(new RegExp(pattern, "g")) ?? []).length >= count) {
          clearInterval(timer);
          resolve();
        } else if (Date.now() > deadline) {
          clearInterval(timer);
          reject(new Error(`waited ${timeoutMs / 1000} s for ${count} × ${String(pattern)} from the plan:\n${stderr}`));
        }
      }, 50);
      void exit.then(() => {
        clearInterval(timer);
        reject(new Error(`the plan ended before ${String(pattern)}:\n${stderr}`));
      });
    });
  return { child, exit, waitFor };
}

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}
