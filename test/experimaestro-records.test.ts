import { existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { ExperimentRecords, listExperiments, markWorkspace } from "../ts/workspace/xpm-records.js";
import { readJobStatus, writeJobStatus } from "../ts/workspace/status.js";

const TASK = "xpm_torch.learner.learner";

function workspace(): string {
  return mkdtempSync(join(tmpdir(), "xpm-records-"));
}

function jobIn(ws: string, identifier: string, taskId = TASK) {
  const jobDir = join(ws, "jobs", taskId, identifier);
  mkdirSync(jobDir, { recursive: true });
  return { identifier, taskId, jobDir };
}

function json(file: string): Record<string, unknown> {
  return JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
}

function lines(file: string): Record<string, unknown>[] {
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** No temporary file of an atomic write is left anywhere under `dir`. */
function leftovers(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).filter((f) => f.endsWith(".tmp") || f.includes("/.current-") || f.startsWith(".current-"));
}

const A = "a".repeat(64);
const B = "b".repeat(64);
const C = "c".repeat(64);
const LOCAL_ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}$/;

describe("markWorkspace", () => {
  it("creates the empty marker, idempotently", () => {
    const ws = join(workspace(), "nested", "ws");
    markWorkspace(ws);
    markWorkspace(ws);
    expect(readFileSync(join(ws, ".__experimaestro__"), "utf8")).toBe("");
  });
});

describe("ExperimentRecords", () => {
  it("opens a run: its folder, the current link, the lock, status.json and environment.json", () => {
    const ws = workspace();
    const now = new Date(2026, 11, 3, 14, 25, 38, 123);
    const xp = ExperimentRecords.open(ws, "demo-xp", { hostname: "node1", now });
    expect(xp.runId).toBe("20261203_142538");
    expect(xp.dir).toBe(join(ws, "experiments", "demo-xp", "20261203_142538"));
    expect(existsSync(join(ws, ".__experimaestro__"))).toBe(true);
    expect(readFileSync(join(ws, "experiments", "demo-xp", "lock"), "utf8")).toBe("");
    const current = join(ws, "experiments", "demo-xp", "current");
    expect(lstatSync(current).isSymbolicLink()).toBe(true);
    expect(readlinkSync(current)).toBe("20261203_142538");
    const status = json(join(xp.dir, "status.json"));
    expect(status).toMatchObject({
      version: 1,
      experiment_id: "demo-xp",
      run_id: "20261203_142538",
      status: "running",
      hostname: "node1",
      started_at: "2026-12-03T14:25:38.123000",
      ended_at: null,
      job_states: {},
      services: {},
      actions: {},
      run_tags: [],
    });
    expect(status).not.toHaveProperty("events_count");
    expect(readFileSync(join(xp.dir, "jobs.jsonl"), "utf8")).toBe("");
    expect(json(join(xp.dir, "environment.json")).run).toEqual({ hostname: "node1", started_at: "2026-12-03T14:25:38.123000", ended_at: null, status: null });
    expect(leftovers(ws)).toEqual([]);
  });

  it("records a job: a jobs.jsonl line, the link to its folder, an event and its state", () => {
    const ws = workspace();
    const xp = ExperimentRecords.open(ws, "demo");
    const a = jobIn(ws, A);
    const b = jobIn(ws, B);
    xp.addJob({ ...a, tags: { model: "mlp", lr: 0.1, big: true }, dependsOn: [] });
    xp.addJob({ ...b, tags: { model: "cnn" }, dependsOn: [A] });
    xp.addJob({ ...a, tags: { model: "other" }, dependsOn: [] }); // a second time: nothing

    const recorded = lines(join(xp.dir, "jobs.jsonl"));
    expect(recorded).toHaveLength(2);
    expect(Object.keys(recorded[0]!)).toEqual(["job_id", "task_id", "tags", "timestamp"]);
    expect(recorded[0]).toMatchObject({ job_id: A, task_id: TASK, tags: { model: "mlp", lr: 0.1, big: true } });
    expect(Math.abs((recorded[0]!.timestamp as number) - Date.now() / 1000)).toBeLessThan(60);

    const link = join(xp.dir, "jobs", TASK, A);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readlinkSync(link)).toBe(join("..", "..", "..", "..", "..", "jobs", TASK, A));
    expect(realpathSync(link)).toBe(realpathSync(a.jobDir));

    const status = json(join(xp.dir, "status.json"));
    expect(status.job_states).toEqual({ [A]: "waiting", [B]: "waiting" });
    expect(status.dependencies).toEqual({ [B]: [A] });
    expect(status.events_count).toBe(0);

    const live = join(ws, ".events", "experiments", "demo-0.jsonl");
    const events = lines(live);
    expect(readFileSync(join(xp.dir, "events", "event-0.jsonl"), "utf8")).toBe(readFileSync(live, "utf8"));
    expect(events).toHaveLength(2);
    expect(events[1]).toMatchObject({
      event_type: "ExperimentJobStateEvent",
      job_id: B,
      task_id: TASK,
      experiment_id: "demo",
      run_id: xp.runId,
      scheduler_state: "waiting",
      failure_reason: null,
      tags: [{ key: "model", value: "cnn" }],
      depends_on: [A],
    });
    expect(events[1]!.submitted_time).toMatch(LOCAL_ISO);
    expect(typeof events[1]!.timestamp).toBe("number");
  });

  it("refuses a job whose folder is not WS/jobs/<task>/<identifier>", () => {
    const ws = workspace();
    const xp = ExperimentRecords.open(ws, "demo");
    expect(() => xp.addJob({ identifier: A, taskId: TASK, jobDir: join(ws, "elsewhere", A), tags: {}, dependsOn: [] })).toThrow(/is not/);
    expect(() => xp.jobState(A, "running")).toThrow(/not part of run/);
  });

  it("updates the states: error with experimaestro's failure reasons", () => {
    const ws = workspace();
    const xp = ExperimentRecords.open(ws, "demo");
    for (const id of [A, B, C]) xp.addJob({ ...jobIn(ws, id), tags: {}, dependsOn: [] });
    xp.jobState(A, "scheduled");
    xp.jobState(A, "running");
    xp.jobState(A, "done");
    xp.jobState(B, "error");
    xp.jobState(C, "error", "dependency");
    expect(() => xp.jobState(A, "done", "failed")).toThrow(/error state/);
    expect(json(join(xp.dir, "status.json")).job_states).toEqual({ [A]: "done", [B]: "error:FAILED", [C]: "error:DEPENDENCY" });
    const events = lines(join(ws, ".events", "experiments", "demo-0.jsonl"));
    expect(events.map((e) => [e.job_id, e.scheduler_state, e.failure_reason])).toEqual([
      [A, "waiting", null],
      [B, "waiting", null],
      [C, "waiting", null],
      [A, "scheduled", null],
      [A, "running", null],
      [A, "done", null],
      [B, "error", "FAILED"],
      [C, "error", "DEPENDENCY"],
    ]);
    expect(events[3]).toMatchObject({ tags: [], depends_on: [], submitted_time: null });
  });

  it("finishes: final status, end time, live events archived", () => {
    const ws = workspace();
    const xp = ExperimentRecords.open(ws, "demo");
    xp.addJob({ ...jobIn(ws, A), tags: {}, dependsOn: [] });
    xp.jobState(A, "done");
    xp.finish("failed");
    const status = json(join(xp.dir, "status.json"));
    expect(status.status).toBe("failed");
    expect(status.ended_at).toMatch(LOCAL_ISO);
    expect(status).not.toHaveProperty("events_count");
    expect(readdirSync(join(ws, ".events", "experiments"))).toEqual([]);
    const archived = lines(join(xp.dir, "events", "event-0.jsonl"));
    expect(archived.at(-1)).toMatchObject({ event_type: "RunCompletedEvent", experiment_id: "demo", run_id: xp.runId, status: "failed" });
    expect(json(join(xp.dir, "environment.json")).run).toMatchObject({ status: "failed", ended_at: status.ended_at });
    expect(() => xp.jobState(A, "running")).toThrow(/is over/);
    expect(() => xp.finish("done")).toThrow(/is over/);

    const done = ExperimentRecords.open(ws, "other");
    done.finish("done");
    expect(json(join(done.dir, "status.json")).status).toBe("done");
    expect(lines(join(done.dir, "events", "event-0.jsonl"))[0]).toMatchObject({ status: "completed" });
    expect(json(join(done.dir, "environment.json")).run).toMatchObject({ status: "completed" });
  });

  it("starts a new run when the experiment runs again, and moves current", () => {
    const ws = workspace();
    const first = ExperimentRecords.open(ws, "demo", { now: new Date(2026, 0, 2, 3, 4, 5) });
    first.addJob({ ...jobIn(ws, A), tags: { run: 1 }, dependsOn: [] });
    // The first run never finishes: its live events go to its archive when the next run opens.
    const second = ExperimentRecords.open(ws, "demo", { now: new Date(2026, 0, 2, 3, 4, 5) });
    expect(second.runId).toBe("20260102_030405.1");
    const third = ExperimentRecords.open(ws, "demo", { now: new Date(2026, 0, 2, 3, 4, 5) });
    expect(third.runId).toBe("20260102_030405.2");
    expect(readlinkSync(join(ws, "experiments", "demo", "current"))).toBe("20260102_030405.2");
    expect(lines(join(first.dir, "jobs.jsonl"))).toHaveLength(1);
    expect(lines(join(first.dir, "events", "event-0.jsonl"))).toHaveLength(1);
    expect(existsSync(join(ws, ".events", "experiments", "demo-0.jsonl"))).toBe(false);
    third.addJob({ ...jobIn(ws, B), tags: { run: 3 }, dependsOn: [] });
    expect(lines(join(ws, ".events", "experiments", "demo-0.jsonl")).map((e) => e.job_id)).toEqual([B]);
    expect(() => ExperimentRecords.open(ws, "demo", { runId: "20260102_030405" })).toThrow(/already exists/);
    expect(() => ExperimentRecords.open(ws, "../up")).toThrow(TypeError);
    expect(leftovers(ws)).toEqual([]);

    const listed = listExperiments(ws);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ name: "demo", runId: third.runId, status: "running", jobs: [{ identifier: B, taskId: TASK, tags: { run: 3 }, state: "waiting" }] });
  });

  it("continues in a new event file once experimaestro has archived the live one", () => {
    const ws = workspace();
    const xp = ExperimentRecords.open(ws, "demo");
    xp.addJob({ ...jobIn(ws, A), tags: {}, dependsOn: [] });
    // What experimaestro's cleanup does when it finds the experiment unlocked.
    rmSync(join(ws, ".events", "experiments", "demo-0.jsonl"));
    xp.jobState(A, "running");
    expect(lines(join(ws, ".events", "experiments", "demo-1.jsonl"))).toHaveLength(1);
    expect(lines(join(xp.dir, "events", "event-0.jsonl"))).toHaveLength(1);
    expect(lines(join(xp.dir, "events", "event-1.jsonl"))).toHaveLength(1);
    expect(json(join(xp.dir, "status.json")).events_count).toBe(1);
  });
});

describe("writeJobStatus / readJobStatus", () => {
  it("writes the job's status.json, its event and its pid file while it runs", () => {
    const ws = workspace();
    const job = jobIn(ws, A);
    const record = { type: "local", pid: 4242, host: hostname(), devices: [0] };
    writeJobStatus(job, { state: "scheduled", process: record });
    const statusFile = join(job.jobDir, ".experimaestro", "status.json");
    expect(json(statusFile)).toMatchObject({ state: "scheduled", started_time: null, events_count: 0 });
    writeJobStatus(job, { state: "running" }); // the job's own process: keeps the process
    const status = json(statusFile);
    expect(Object.keys(status)).toEqual([
      "job_id",
      "task_id",
      "path",
      "state",
      "failure_reason",
      "scheduler_state",
      "scheduler_failure_reason",
      "started_time",
      "ended_time",
      "exit_code",
      "retry_count",
      "resumable",
      "progress",
      "process",
      "events_count",
    ]);
    expect(status).toMatchObject({
      job_id: A,
      task_id: TASK,
      path: job.jobDir,
      state: "running",
      failure_reason: null,
      scheduler_state: "running",
      scheduler_failure_reason: null,
      ended_time: null,
      exit_code: null,
      retry_count: 0,
      resumable: false,
      progress: [],
      process: record,
      events_count: 0,
    });
    expect(status.started_time).toMatch(LOCAL_ISO);
    expect(json(join(job.jobDir, "learner.pid"))).toEqual(record);
    // sha256("xpm_torch.learner.learner") starts with 622a7a16
    const live = join(ws, ".events", "jobs", `622a7a16-${A}-0.jsonl`);
    const events = lines(live);
    expect(events.map((e) => e.state)).toEqual(["scheduled", "running"]);
    expect(events[1]).toMatchObject({ event_type: "JobStateChangedEvent", job_id: A, task_id: TASK, failure_reason: null, exit_code: null, retry_count: 0, progress: [] });
    expect(readFileSync(join(job.jobDir, ".experimaestro", "events", "event-0.jsonl"), "utf8")).toBe(readFileSync(live, "utf8"));

    writeJobStatus(job, { state: "done", exitCode: 0 });
    const done = json(statusFile);
    expect(done).toMatchObject({ state: "done", exit_code: 0, process: null, started_time: status.started_time });
    expect(done.ended_time).toMatch(LOCAL_ISO);
    expect(done).not.toHaveProperty("events_count");
    expect(existsSync(join(job.jobDir, "learner.pid"))).toBe(false);
    expect(readdirSync(join(ws, ".events", "jobs"))).toEqual([]);
    expect(lines(join(job.jobDir, ".experimaestro", "events", "event-0.jsonl")).map((e) => e.state)).toEqual(["scheduled", "running", "done"]);

    const back = readJobStatus(job.jobDir);
    expect(back).toMatchObject({ state: "done", failureReason: null, schedulerState: "done", exitCode: 0, retryCount: 0, process: null });
    expect(back!.endedTime! - back!.startedTime!).toBeGreaterThanOrEqual(0);
    expect(Math.abs(back!.endedTime! - Date.now())).toBeLessThan(60_000);

    // A rerun: a new event file, the old times cleared.
    writeJobStatus(job, { state: "waiting", retryCount: 1 });
    expect(json(statusFile)).toMatchObject({ state: "waiting", started_time: null, ended_time: null, retry_count: 1, events_count: 1 });
    expect(lines(join(ws, ".events", "jobs", `622a7a16-${A}-1.jsonl`)).map((e) => e.state)).toEqual(["waiting"]);
    expect(leftovers(ws)).toEqual([]);
  });

  it("records a job that never ran because a dependency failed", () => {
    const ws = workspace();
    const job = jobIn(ws, B);
    writeJobStatus(job, { state: "error", failureReason: "dependency" });
    const status = json(join(job.jobDir, ".experimaestro", "status.json"));
    expect(status).toMatchObject({ state: "error", failure_reason: "DEPENDENCY", scheduler_state: "error", scheduler_failure_reason: "DEPENDENCY", started_time: null, process: null });
    expect(readJobStatus(job.jobDir)).toMatchObject({ state: "error", failureReason: "dependency", startedTime: null });
    writeJobStatus(job, { state: "error", failureReason: "timeout", exitCode: 124 });
    expect(readJobStatus(job.jobDir)).toMatchObject({ failureReason: "timeout", exitCode: 124 });
  });

  it("records a SLURM job's id under experimaestro's pid key too", () => {
    const ws = workspace();
    const job = jobIn(ws, C);
    writeJobStatus(job, { state: "scheduled", process: { type: "slurm", id: "123456" } });
    expect(json(join(job.jobDir, "learner.pid"))).toEqual({ type: "slurm", id: "123456", pid: "123456" });
    expect(readJobStatus(job.jobDir)!.process).toEqual({ type: "slurm", id: "123456", pid: "123456" });
  });

  it("reads what experimaestro itself writes, and nothing from garbage", () => {
    const ws = workspace();
    const job = jobIn(ws, A, "__main__.hello");
    mkdirSync(join(job.jobDir, ".experimaestro"));
    const file = join(job.jobDir, ".experimaestro", "status.json");
    writeFileSync(
      file,
      JSON.stringify({
        job_id: A,
        task_id: "__main__.hello",
        state: "error",
        failure_reason: null,
        scheduler_state: "error",
        started_time: "2026-12-03T15:10:27.252734",
        ended_time: "2026-12-03T15:10:27.266018",
        exit_code: null,
        retry_count: 0,
        process: { type: "local", pid: 17512, host: "vm" },
      }),
    );
    const status = readJobStatus(job.jobDir)!;
    expect(status).toMatchObject({ state: "error", failureReason: "failed", process: { type: "local", pid: 17512 } });
    expect(status.endedTime! - status.startedTime!).toBe(14); // 27.266 - 27.252
    expect(new Date(status.startedTime!).getHours()).toBe(15); // local time
    // experimaestro's UNSCHEDULED is one of our states; a state of no one's is garbage.
    writeFileSync(file, JSON.stringify({ state: "unscheduled" }));
    expect(readJobStatus(job.jobDir)).toMatchObject({ state: "unscheduled", process: null });
    writeFileSync(file, JSON.stringify({ state: "sleeping" }));
    expect(readJobStatus(job.jobDir)).toBeUndefined();
    writeFileSync(file, "{");
    expect(readJobStatus(job.jobDir)).toBeUndefined();
    expect(readJobStatus(join(ws, "missing"))).toBeUndefined();
    // Its task hash: the live events file of a `__main__.hello` job.
    writeJobStatus(job, { state: "running" });
    expect(existsSync(join(ws, ".events", "jobs", `4324be06-${A}-0.jsonl`))).toBe(true);
    expect(() => writeJobStatus({ ...job, identifier: B }, { state: "running" })).toThrow(/is not the folder/);
  });
});

describe("listExperiments", () => {
  it("lists each experiment's current run with its jobs, tags and states", () => {
    const ws = workspace();
    expect(listExperiments(ws)).toEqual([]);
    const one = ExperimentRecords.open(ws, "one", { hostname: "h1" });
    one.addJob({ ...jobIn(ws, A), tags: { model: "mlp", seed: 1 }, dependsOn: [] });
    one.addJob({ ...jobIn(ws, B), tags: {}, dependsOn: [A] });
    one.jobState(A, "error");
    one.jobState(B, "error", "dependency");
    one.finish("failed");
    const two = ExperimentRecords.open(ws, "two", { hostname: "h2" });
    two.addJob({ ...jobIn(ws, A), tags: { model: "mlp" }, dependsOn: [] }, "done");
    expect(listExperiments(ws)).toEqual([
      {
        name: "one",
        runId: one.runId,
        status: "failed",
        hostname: "h1",
        jobs: [
          { identifier: A, taskId: TASK, jobDir: join(ws, "jobs", TASK, A), tags: { model: "mlp", seed: 1 }, state: "error", failureReason: "failed" },
          { identifier: B, taskId: TASK, jobDir: join(ws, "jobs", TASK, B), tags: {}, state: "error", failureReason: "dependency" },
        ],
      },
      { name: "two", runId: two.runId, status: "running", hostname: "h2", jobs: [{ identifier: A, taskId: TASK, jobDir: join(ws, "jobs", TASK, A), tags: { model: "mlp" }, state: "done" }] },
    ]);
  });
});
