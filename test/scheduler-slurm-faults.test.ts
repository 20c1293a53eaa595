// What clusters do to a plan, at the scheduler's level: the real scheduler and SlurmBackend over a
// SLURM controller kept in memory (test/helpers/fake-slurm.ts), so each fault is played out in
// milliseconds and always the same way. The same faults on a real one-node SLURM are in
// slurm-faults.integration.test.ts.
import { mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it, vi } from "vitest";

import { ExperimentError, JobFailedError } from "../ts/experiment/errors.js";
import { type Experiment, ExperimentInterruptedError, type ExperimentOptions, type JobHandle, runExperiment } from "../ts/experiment/experiment.js";
import type { LearnerConfig } from "../ts/learn-types.js";
import { SlurmLauncher } from "../ts/experiment/launchers.js";
import { SlurmBackend, isTransientSlurmError } from "../ts/experiment/slurm-backend.js";
import { SlurmError } from "../ts/experiment/slurm.js";
import { jobFiles, jobOf, prepareJobDirectory } from "../ts/workspace/job.js";
import { readJobStatus } from "../ts/workspace/status.js";
import { finetuneFrom, smallLearner } from "./helpers/experiments.js";
import { FakeSlurm } from "./helpers/fake-slurm.js";
import { waitFor } from "./helpers/wait.js";

vi.setConfig({ testTimeout: 20_000 });

const TIMINGS = { pollMs: 5, lostGraceMs: 200, unreachableMs: 400 };

function setup() {
  const workspace = mkdtempSync(join(tmpdir(), "xpm-fake-slurm-"));
  const slurm = new FakeSlurm();
  const lines: string[] = [];
  const run = (name: string, plan: (xp: Experiment) => Promise<void> | void, options: Partial<ExperimentOptions> = {}) =>
    runExperiment(name, plan, { workspace, log: (l) => lines.push(l), handleSignals: false, ...options }, () => new SlurmBackend(SlurmLauncher.C({}), slurm, TIMINGS));
  return { workspace, slurm, run, lines };
}

/** A plan of a Learner and a second stage started from its learned model. */
function twoStages(handles: JobHandle[]) {
  return (xp: Experiment) => {
    const first = xp.submit(smallLearner(1e-2), { tags: { stage: 1 } });
    const second = xp.submit(finetuneFrom(first.loaders.learned), { tags: { stage: 2 } });
    handles.splice(0, handles.length, first, second);
  };
}

const idOf = (slurm: FakeSlurm, handle: JobHandle, n = -1) => slurm.idsOf(handle.jobDir).at(n)!;

/** A plan of one job, once that job is queued: the plan, the job and its SLURM id. */
async function oneJobQueued(slurm: FakeSlurm, run: ReturnType<typeof setup>["run"], name: string, learner: LearnerConfig, options: Partial<ExperimentOptions> = {}) {
  let handle: JobHandle | undefined;
  const plan = run(name, (xp) => void (handle = xp.submit(learner)), options);
  await waitFor(() => handle !== undefined && slurm.idsOf(handle.jobDir).length >= 1, `job ${name} queued`);
  return { plan, handle: handle!, id: idOf(slurm, handle!) };
}

describe("a dependency that ends outside the plan", () => {
  it("marks its queued dependents dependency failed in the running plan (never waits on DependencyNeverSatisfied)", async () => {
    const { slurm, run } = setup();
    const handles: JobHandle[] = [];
    const plan = run("cancelled-dep", twoStages(handles));
    await waitFor(() => handles.length === 2 && slurm.idsOf(handles[1]!.jobDir).length === 1, "both stages queued");
    slurm.start(idOf(slurm, handles[0]!));
    // scancel by hand: the job's process is killed before it says anything.
    slurm.end(idOf(slurm, handles[0]!), "CANCELLED", 0);
    const error = await plan.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperimentError);
    const [first, second] = (error as ExperimentError).failures;
    expect(first!.message).toMatch(/CANCELLED/);
    expect(second!.reason).toBe("dependency");
    expect(slurm.stateOf(idOf(slurm, handles[1]!))).toBe("CANCELLED");
    expect(readJobStatus(handles[1]!.jobDir)).toMatchObject({ state: "error", failureReason: "dependency" });
  });

  it("on a re-run, cancels the dependent still queued behind the dependency's old run and queues it behind the new one", async () => {
    const { slurm, run } = setup();
    const handles: JobHandle[] = [];
    const abort = new AbortController();
    const first = run("rerun-dep", twoStages(handles), { signal: abort.signal });
    await waitFor(() => handles.length === 2 && slurm.idsOf(handles[1]!.jobDir).length === 1, "both stages queued");
    slurm.start(idOf(slurm, handles[0]!));
    // The plan's process goes away (its SLURM jobs stay), then the first stage is cancelled by hand.
    abort.abort();
    await expect(first).rejects.toBeInstanceOf(ExperimentInterruptedError);
    const [oldFirst, oldSecond] = [idOf(slurm, handles[0]!), idOf(slurm, handles[1]!)];
    slurm.end(oldFirst, "CANCELLED", 0);

    const second = run("rerun-dep", twoStages(handles));
    await waitFor(() => slurm.idsOf(handles[1]!.jobDir).length === 2, "the second stage queued again");
    expect(slurm.stateOf(oldSecond)).toBe("CANCELLED");
    const newFirst = idOf(slurm, handles[0]!);
    expect(newFirst).not.toBe(oldFirst);
    expect(slurm.jobs.get(idOf(slurm, handles[1]!))!.afterOk).toEqual([newFirst]);
    slurm.succeed(newFirst);
    slurm.start(idOf(slurm, handles[1]!));
    slurm.complete(idOf(slurm, handles[1]!));
    const summary = await second;
    expect(summary.jobs.map((j) => j.state)).toEqual(["done", "done"]);
  });
});

describe("a SLURM job that vanishes", () => {
  it("waits a bounded time for the job's files, then ends in error saying SLURM lost it; a re-run runs it again", async () => {
    const { slurm, run } = setup();
    const { plan, handle, id } = await oneJobQueued(slurm, run, "vanish", smallLearner(2e-2));
    slurm.start(id);
    slurm.forget(id);
    const error = await plan.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperimentError);
    expect((error as ExperimentError).failures[0]!.message).toMatch(/no longer known to SLURM/);

    const again = run("vanish", (xp) => void xp.submit(smallLearner(2e-2)));
    await waitFor(() => slurm.submissionsOf(handle.jobDir) === 2, "the job queued again");
    slurm.succeed(idOf(slurm, handle));
    expect((await again).jobs[0]!.state).toBe("done");
  });

  it("takes the job's own word when its files say it ended during the wait", async () => {
    const { slurm, run } = setup();
    const { plan, handle, id } = await oneJobQueued(slurm, run, "vanish-done", smallLearner(3e-2));
    slurm.start(id);
    slurm.forget(id);
    // Its result reaches the shared file system once the plan has seen SLURM forget the job.
    const asked = slurm.calls.length;
    await waitFor(() => slurm.calls.slice(asked).some((c) => c.startsWith("squeue")), "the plan to ask SLURM again");
    slurm.jobs.set(id, { id, jobDir: handle.jobDir, afterOk: [], slurmState: "RUNNING", reason: undefined, exitCode: undefined });
    slurm.complete(id);
    slurm.forget(id);
    expect((await plan).jobs[0]!.state).toBe("done");
  });
});

describe("the controller unreachable", () => {
  it("retries sbatch and squeue until it is back, and the plan goes on", async () => {
    const { slurm, run } = setup();
    slurm.down = "Unable to contact slurm controller (connect failure)";
    let handle: JobHandle | undefined;
    const plan = run("down-then-up", (xp) => void (handle = xp.submit(smallLearner(4e-2))));
    await new Promise((wake) => setTimeout(wake, 50));
    slurm.down = undefined;
    await waitFor(() => handle !== undefined && slurm.idsOf(handle.jobDir).length === 1, "the job queued once SLURM is back");
    const id = idOf(slurm, handle!);
    slurm.start(id);
    slurm.down = "Socket timed out on send/recv operation";
    await new Promise((wake) => setTimeout(wake, 50));
    slurm.down = undefined;
    slurm.complete(id);
    expect((await plan).jobs[0]!.state).toBe("done");
  });

  it("ends the job in error naming the command and SLURM's message once the bound is past", async () => {
    const { slurm, run } = setup();
    slurm.down = "Unable to contact slurm controller (connect failure)";
    const error = await run("down", (xp) => void xp.submit(smallLearner(5e-2))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperimentError);
    const message = (error as ExperimentError).failures[0]!.message;
    expect(message).toMatch(/sbatch/);
    expect(message).toMatch(/Unable to contact slurm controller/);
  });
});

describe("which SLURM failures are tried again", () => {
  it("a controller that cannot be reached, and a query that did not answer; never an sbatch that did not answer (it may have queued the job)", () => {
    const unreachable = new SlurmError("SlurmLauncher: sbatch failed", { command: "sbatch", stderr: "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)" });
    const timedOut = new SlurmError("SlurmLauncher: sbatch did not answer within 120 s; is slurmctld reachable (scontrol ping)?", { command: "sbatch" });
    const refused = new SlurmError("SlurmLauncher: sbatch refused x.sh: Invalid account or account/partition combination specified", { command: "sbatch" });
    expect([unreachable, timedOut, refused].map((e) => isTransientSlurmError(e, false))).toEqual([true, false, false]);
    expect([unreachable, timedOut, refused].map((e) => isTransientSlurmError(e, true))).toEqual([true, true, false]);
    expect(isTransientSlurmError(new Error("Unable to contact slurm controller"), true)).toBe(false);
  });
});

describe("a plan stopped while it waits on SLURM jobs", () => {
  it("ends at once with ExperimentInterruptedError, even while the plan awaits a result, and leaves the jobs queued", async () => {
    const { slurm, run } = setup();
    const handles: JobHandle[] = [];
    const abort = new AbortController();
    const plan = run("stop-waiting", async (xp) => {
      twoStages(handles)(xp);
      await handles[1]!.result();
    }, { signal: abort.signal });
    await waitFor(() => handles.length === 2 && slurm.idsOf(handles[1]!.jobDir).length === 1, "both stages queued");
    abort.abort();
    await expect(plan).rejects.toBeInstanceOf(ExperimentInterruptedError);
    expect(handles.map((h) => slurm.stateOf(idOf(slurm, h)))).toEqual(["PENDING", "PENDING"]);
  });
});

describe("the job's own word on how it ended", () => {
  it("stands in status.json and in the error: the scheduler does not replace `memory` by `failed`", async () => {
    const { slurm, run } = setup();
    const { plan, handle, id } = await oneJobQueued(slurm, run, "oom", smallLearner(6e-2));
    slurm.start(id);
    slurm.fail(id, "memory", "out of memory: the batch did not fit");
    const error = (await plan.catch((e: unknown) => e)) as ExperimentError;
    expect(error.failures[0]!.reason).toBe("memory");
    expect(readJobStatus(handle.jobDir)).toMatchObject({ state: "error", failureReason: "memory", exitCode: 1 });
  });
});

describe("two plans started at once, sharing a job", () => {
  it("launch it once: the other plan follows the SLURM job the first one queued", async () => {
    const { slurm, run } = setup();
    const handles: JobHandle[] = [];
    const plans = ["one", "two"].map((name) => run(name, (xp) => void handles.push(xp.submit(smallLearner(9e-2)))));
    await waitFor(() => handles.length === 2 && handles.every((h) => h.state === "scheduled"), "both plans to follow the job");
    expect(slurm.submissionsOf(handles[0]!.jobDir)).toBe(1);
    const id = idOf(slurm, handles[0]!);
    slurm.succeed(id);
    const summaries = await Promise.all(plans);
    expect(summaries.map((s) => s.jobs[0]!.state)).toEqual(["done", "done"]);
  });
});

describe("a job's files damaged (a crash mid-write, a full disk)", () => {
  it("takes over a launch claim torn by a crash once it is older than a write", async () => {
    const { slurm, workspace, run } = setup();
    const learner = smallLearner(9.5e-2);
    const job = jobOf(learner, workspace);
    prepareJobDirectory(learner, job);
    writeFileSync(job.claimFile, "{\"host\": \"h");
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(job.claimFile, minuteAgo, minuteAgo);
    const { plan, handle, id } = await oneJobQueued(slurm, run, "torn-claim", learner);
    slurm.succeed(id);
    expect((await plan).jobs[0]!.state).toBe("done");
  });

  it("recovers a queued job's SLURM id from its launch log when status.json is not JSON, and follows it", async () => {
    const { slurm, run } = setup();
    const abort = new AbortController();
    const { plan: first, handle } = await oneJobQueued(slurm, run, "torn-status", smallLearner(7e-2), { signal: abort.signal });
    abort.abort();
    await expect(first).rejects.toBeInstanceOf(ExperimentInterruptedError);
    const status = jobFiles(handle.jobDir).statusFile;
    writeFileSync(status, readFileSync(status, "utf8").slice(0, 40));

    const lines: string[] = [];
    const again = runExperiment("torn-status", (xp) => void xp.submit(smallLearner(7e-2)), { workspace: handle.jobDir.split("/jobs/")[0]!, log: (l) => lines.push(l), handleSignals: false }, () => new SlurmBackend(SlurmLauncher.C({}), slurm, TIMINGS));
    await waitFor(() => lines.some((l) => /scheduled/.test(l)), "the job followed");
    slurm.succeed(idOf(slurm, handle));
    expect((await again).jobs[0]!.state).toBe("done");
    expect(slurm.submissionsOf(handle.jobDir)).toBe(1);
    expect(lines.join("\n")).toMatch(/status\.json is not JSON/);
  });

  it("repairs a truncated params.json, and refuses a done job whose result.json is not JSON, naming the file", async () => {
    const { slurm, run, workspace } = setup();
    const { plan, handle, id } = await oneJobQueued(slurm, run, "torn-result", smallLearner(8e-2));
    slurm.succeed(id);
    await plan;
    const files = jobFiles(handle.jobDir);
    writeFileSync(files.resultFile, "{\"epochs\": [");
    writeFileSync(files.paramsFile, "{\"objects\"");
    const error = await run("torn-result", (xp) => void xp.submit(smallLearner(8e-2))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperimentError);
    const failure = (error as ExperimentError).failures[0]!;
    expect(failure).toBeInstanceOf(JobFailedError);
    expect(failure.message).toContain(files.resultFile);
    expect(JSON.parse(readFileSync(files.paramsFile, "utf8"))).toHaveProperty("objects");
    expect(workspace).toBeTruthy();
  });
});
