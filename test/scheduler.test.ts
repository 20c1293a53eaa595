// The scheduler against launchers kept in memory (processes of a host, a SLURM controller): every
// move of the state table is played out here, and every move outside it is refused.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, describe, expect, it } from "vitest";

import type { Backend } from "../ts/experiment/backend.js";
import { ExperimentError } from "../ts/experiment/errors.js";
import { type Experiment, type ExperimentOptions, type JobHandle, runExperiment } from "../ts/experiment/experiment.js";
import { SlurmLauncher } from "../ts/experiment/launchers.js";
import { SlurmBackend } from "../ts/experiment/slurm-backend.js";
import { IllegalTransitionError, JOB_STATES, type JobState, TRANSITIONS, checkTransition } from "../ts/workspace/job-state.js";
import { jobFiles, jobOf, markDone, prepareJobDirectory } from "../ts/workspace/job.js";
import { readJobStatus } from "../ts/workspace/status.js";
import { finetuneFrom, smallLearner } from "./helpers/experiments.js";
import { FakeLocal } from "./helpers/fake-local.js";
import { EMPTY_RESULT, FakeSlurm } from "./helpers/fake-slurm.js";
import { waitFor } from "./helpers/wait.js";

/** Every move seen, as `from -> to`, over all the plans of this file. */
const seen = new Set<string>();

function workspaceFor(): string {
  return mkdtempSync(join(tmpdir(), "xpm-scheduler-"));
}

/** Runs a plan on `backend`, noting each job's moves. */
function run(workspace: string, backend: Backend, plan: (xp: Experiment) => Promise<void> | void, options: Partial<ExperimentOptions> = {}) {
  const last = new Map<string, JobState>();
  return runExperiment(
    "plan",
    plan,
    {
      workspace,
      log: null,
      handleSignals: false,
      onJobState: (job, state) => {
        seen.add(`${last.get(job.jobDir) ?? "unscheduled"} -> ${state}`);
        last.set(job.jobDir, state);
      },
      ...options,
    },
    () => backend,
  );
}

const slurmBackend = (slurm: FakeSlurm) => new SlurmBackend(SlurmLauncher.C({}), slurm, { pollMs: 2, lostGraceMs: 100, unreachableMs: 200 });

describe("the state table", () => {
  it("refuses every move it does not list, naming the job and the moves it allows", () => {
    for (const from of JOB_STATES) {
      for (const to of JOB_STATES) {
        if (TRANSITIONS[from].includes(to)) expect(() => checkTransition(from, to, "j")).not.toThrow();
        else expect(() => checkTransition(from, to, "xpm_torch.learner.learner/abc")).toThrow(IllegalTransitionError);
      }
    }
    expect(() => checkTransition("done", "running", "xpm_torch.learner.learner/abc")).toThrow(/abc cannot go from done to running \(allowed: none\)/);
  });
});

describe("the scheduler with processes of a host", () => {
  it("runs jobs as slots free up, and a dependent once its dependency is done", async () => {
    const workspace = workspaceFor();
    const local = new FakeLocal(1);
    const handles: JobHandle[] = [];
    const plan = run(workspace, local, (xp) => {
      const a = xp.submit(smallLearner(1e-2));
      handles.push(a, xp.submit(smallLearner(2e-2)), xp.submit(finetuneFrom(a.loaders.learned)));
    });
    await waitFor(() => handles.length === 3 && local.pidOf(handles[0]!.jobDir) !== undefined, "the first job to start");
    expect(handles.map((h) => h.state)).toEqual(["running", "ready", "waiting"]);
    for (const next of [0, 1, 2]) {
      await waitFor(() => local.pidOf(handles[next]!.jobDir) !== undefined, `job ${next} to start`);
      local.complete(handles[next]!.jobDir);
    }
    expect((await plan).jobs.map((j) => j.state)).toEqual(["done", "done", "done"]);
    expect(local.mostAtOnce).toBe(1);
    // Run again: nothing runs twice.
    const again = new FakeLocal(1);
    expect((await run(workspace, again, (xp) => void xp.submit(smallLearner(1e-2)))).jobs[0]!.state).toBe("done");
    expect(again.processes.size).toBe(0);
  });

  it("does not launch a job that another process finished while it waited for a slot", async () => {
    const workspace = workspaceFor();
    const local = new FakeLocal(1);
    const handles: JobHandle[] = [];
    const plan = run(workspace, local, (xp) => void handles.push(xp.submit(smallLearner(1e-2, 3)), xp.submit(smallLearner(2e-2, 3))));
    await waitFor(() => handles.length === 2 && handles[1]!.state === "ready", "the second job waiting for the slot");
    // Another plan (or a learn() call) runs it to its end meanwhile.
    markDone(jobOf(smallLearner(2e-2, 3), workspace), EMPTY_RESULT);
    local.complete(handles[0]!.jobDir);
    expect((await plan).jobs.map((j) => j.state)).toEqual(["done", "done"]);
    expect(local.startsOf(handles[1]!.jobDir)).toBe(0);
  });

  it("keeps max_jobs across a killed plan and its re-run: the processes it left take their slots first", async () => {
    const workspace = workspaceFor();
    const local = new FakeLocal(2);
    const learners = [1e-2, 2e-2, 3e-2, 4e-2].map((lr) => smallLearner(lr, 1));
    const dirs = learners.map((l) => jobOf(l, workspace).dir);
    // The killed plan had started the last two; they still run.
    for (const [i, learner] of learners.entries()) if (i >= 2) prepareJobDirectory(learner, jobOf(learner, workspace));
    local.orphan(dirs[2]!);
    local.orphan(dirs[3]!);
    const plan = run(workspace, local, (xp) => void learners.forEach((l) => xp.submit(l)));
    await new Promise((wake) => setTimeout(wake, 50));
    expect(local.mostAtOnce).toBe(2);
    expect(dirs.map((d) => local.startsOf(d))).toEqual([0, 0, 1, 1]);
    local.complete(dirs[2]!);
    await waitFor(() => local.pidOf(dirs[0]!) !== undefined, "a first new job once a slot is free");
    expect(local.pidOf(dirs[1]!)).toBeUndefined();
    local.complete(dirs[3]!);
    await waitFor(() => local.pidOf(dirs[1]!) !== undefined, "the second new job");
    local.complete(dirs[0]!);
    local.complete(dirs[1]!);
    await plan;
    expect(local.mostAtOnce).toBe(2);
  });

  it("ends a job killed by the system in error saying so, fails its dependents, and runs it again next time", async () => {
    const workspace = workspaceFor();
    const local = new FakeLocal(2);
    const handles: JobHandle[] = [];
    const plan = run(workspace, local, (xp) => {
      const a = xp.submit(smallLearner(5e-2));
      handles.push(a, xp.submit(finetuneFrom(a.loaders.learned)));
    });
    await waitFor(() => handles.length === 2 && local.pidOf(handles[0]!.jobDir) !== undefined, "the job to start");
    local.kill(handles[0]!.jobDir);
    const error = (await plan.catch((e: unknown) => e)) as ExperimentError;
    expect(error).toBeInstanceOf(ExperimentError);
    expect(error.failures.map((f) => f.reason)).toEqual(["failed", "dependency"]);
    expect(error.failures[0]!.message).toMatch(/killed \(SIGKILL: the out-of-memory killer, or kill -9\)/);
    expect(readJobStatus(handles[0]!.jobDir)).toMatchObject({ state: "error", failureReason: "failed", process: null });

    const again = run(workspace, local, (xp) => void xp.submit(smallLearner(5e-2)));
    await waitFor(() => local.pidOf(handles[0]!.jobDir) !== undefined, "the job to start again");
    local.complete(handles[0]!.jobDir);
    await again;
    expect(local.startsOf(handles[0]!.jobDir)).toBe(2);
  });

  it("follows a job another process holds (its lock), and takes its result", async () => {
    const workspace = workspaceFor();
    const learner = smallLearner(6e-2);
    const job = jobOf(learner, workspace);
    prepareJobDirectory(learner, job);
    // This very process holds it, as a learn() call would.
    writeFileSync(job.lockFile, JSON.stringify({ pid: process.pid, host: hostname(), started: new Date().toISOString() }));
    let handle: JobHandle | undefined;
    const plan = run(workspace, new FakeLocal(1), (xp) => void (handle = xp.submit(learner)));
    await waitFor(() => handle?.state === "running", "the job to be followed");
    markDone(job, EMPTY_RESULT);
    rmSync(job.lockFile);
    expect((await plan).jobs[0]!.state).toBe("done");
  });

  it("logs a re-run's jobs as cached (done before) and followed (started by the killed plan, or held by a learn() call)", async () => {
    const workspace = workspaceFor();
    const local = new FakeLocal(2);
    const done = smallLearner(1e-2, 9);
    const left = smallLearner(2e-2, 9);
    const locked = smallLearner(3e-2, 9);
    const fresh = smallLearner(4e-2, 9);
    const dir = (config: ReturnType<typeof smallLearner>) => jobOf(config, workspace).dir;
    for (const config of [done, left, locked]) prepareJobDirectory(config, jobOf(config, workspace));
    markDone(jobOf(done, workspace), EMPTY_RESULT);
    const orphan = local.orphan(dir(left)) as { pid: number; host: string };
    writeFileSync(jobOf(locked, workspace).lockFile, JSON.stringify({ pid: process.pid, host: hostname(), started: new Date().toISOString() }));
    const lines: string[] = [];
    const plan = run(workspace, local, (xp) => void [done, left, locked, fresh].forEach((c, i) => xp.submit(c, { tags: { i } })), { log: (line) => lines.push(line) });
    await waitFor(() => local.pidOf(dir(fresh)) !== undefined, "the new job to start");
    local.complete(dir(left));
    local.complete(dir(fresh));
    markDone(jobOf(locked, workspace), EMPTY_RESULT);
    rmSync(jobOf(locked, workspace).lockFile);
    await plan;
    const said = (config: ReturnType<typeof smallLearner>) =>
      lines.filter((l) => l.includes(jobOf(config, workspace).identifier.slice(0, 12))).map((l) => l.slice(l.indexOf("] ") + 2));
    expect(said(done)).toEqual(["cached"]);
    expect(said(left)).toEqual([`followed (scheduled, pid ${orphan.pid} on ${orphan.host})`, "running (followed)", "done"]);
    expect(said(locked)).toEqual(["followed (running, another process holds its lock)", "done"]);
    expect(said(fresh)).toEqual(["waiting", "ready", "scheduled", "running", "done"]);
  });

  it("names the file when a done job's result cannot be read", async () => {
    const workspace = workspaceFor();
    const learner = smallLearner(7e-2);
    const job = jobOf(learner, workspace);
    prepareJobDirectory(learner, job);
    markDone(job, EMPTY_RESULT);
    writeFileSync(jobFiles(job.dir).resultFile, "{");
    const error = (await run(workspace, new FakeLocal(1), (xp) => void xp.submit(learner)).catch((e: unknown) => e)) as ExperimentError;
    expect(error.failures[0]!.message).toContain(`${job.resultFile} is not JSON`);
    expect(error.failures[0]!.message).toContain(`remove ${job.doneFile}`);
  });
});

describe("the scheduler with a SLURM controller", () => {
  it("follows a job SLURM requeues (running, queued again, running) and one that ends before it is seen running", async () => {
    const workspace = workspaceFor();
    const slurm = new FakeSlurm();
    const handles: JobHandle[] = [];
    const plan = run(workspace, slurmBackend(slurm), (xp) => void handles.push(xp.submit(smallLearner(1e-2, 2)), xp.submit(smallLearner(2e-2, 2))));
    await waitFor(() => handles.length === 2 && handles.every((h) => slurm.idsOf(h.jobDir).length === 1), "both jobs queued");
    const [requeued, quick] = handles.map((h) => slurm.idsOf(h.jobDir)[0]!);
    slurm.start(requeued!);
    await waitFor(() => handles[0]!.state === "running", "the job seen running");
    slurm.jobs.get(requeued!)!.slurmState = "PENDING";
    await waitFor(() => handles[0]!.state === "scheduled", "the job seen queued again");
    slurm.start(requeued!);
    await waitFor(() => handles[0]!.state === "running", "the job seen running again");
    slurm.complete(requeued!);
    slurm.complete(quick!);
    expect((await plan).jobs.map((j) => j.state)).toEqual(["done", "done"]);
  });

  it("queues a dependent again when its dependency's old run will never succeed, and fails a job sbatch refuses", async () => {
    const workspace = workspaceFor();
    const slurm = new FakeSlurm();
    const handles: JobHandle[] = [];
    const abort = new AbortController();
    const plan = (xp: Experiment) => {
      const a = xp.submit(smallLearner(3e-2, 2));
      handles.splice(0, 2, a, xp.submit(finetuneFrom(a.loaders.learned)));
    };
    const first = run(workspace, slurmBackend(slurm), plan, { signal: abort.signal });
    await waitFor(() => handles.length === 2 && slurm.idsOf(handles[1]!.jobDir).length === 1, "both queued");
    abort.abort();
    await first.catch(() => undefined);
    slurm.end(slurm.idsOf(handles[0]!.jobDir)[0]!, "FAILED", 1);
    // The dependent is seen DependencyNeverSatisfied before its dependency runs again.
    const again = run(workspace, slurmBackend(slurm), plan);
    await waitFor(() => slurm.idsOf(handles[1]!.jobDir).length === 2 && slurm.idsOf(handles[0]!.jobDir).length === 2, "both queued again");
    for (const h of handles) {
      const id = slurm.idsOf(h.jobDir)[1]!;
      slurm.succeed(id);
    }
    expect((await again).jobs.map((j) => j.state)).toEqual(["done", "done"]);

    slurm.down = "sbatch: error: Batch job submission failed: Invalid partition name specified";
    const refused = (await run(workspace, slurmBackend(slurm), (xp) => void xp.submit(smallLearner(4e-2, 2))).catch((e: unknown) => e)) as ExperimentError;
    expect(refused.failures[0]!.message).toMatch(/Invalid partition name/);
  });
});

afterAll(() => {
  const table = Object.entries(TRANSITIONS).flatMap(([from, tos]) => tos.map((to) => `${from} -> ${to}`));
  expect(table.filter((t) => !seen.has(t))).toEqual([]);
});
