// A running job's progress as experimaestro 2.7.0's own code reads it (scripts/experimaestro-progress.py):
// from status.json, as its monitors load a job, and by replaying the job's JobProgressEvents.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { learn } from "../ts/learn.js";
import { ExperimentRecords } from "../ts/workspace/xpm-records.js";
import { JobProgress } from "../ts/workspace/job-progress.js";
import { readJobStatus, writeJobStatus } from "../ts/workspace/status.js";
import { smallLearner } from "./helpers/experiments.js";
import { repoRoot } from "./helpers/node.js";
import { waitFor } from "./helpers/wait.js";

const cache = process.env.XPM_TORCH_CACHE || join(process.env.XDG_CACHE_HOME || join(process.env.HOME ?? "", ".cache"), "xpm-torch");
const python = join(cache, "experimaestro-venv", "bin", "python");

/** Why experimaestro cannot run here, or undefined once its environment is ready. */
function unavailable(): string | undefined {
  const provision = spawnSync("bash", [join(repoRoot, "scripts", "check-experimaestro.sh"), "--provision"], { encoding: "utf8", timeout: 600_000 });
  return provision.status === 0 ? undefined : `its Python environment could not be made: ${provision.stderr.trim().split("\n").slice(-2).join(" / ")}`;
}

const reason = unavailable();
if (reason) console.warn(`experimaestro-progress.test.ts skipped: ${reason}`);

interface Read {
  readonly state: string;
  readonly status_progress: { level: number; desc: string | null; progress: number }[];
  readonly events_progress: { level: number; desc: string | null; progress: number }[];
  readonly event_kinds: string[];
  readonly live_files: string[];
}

function readWithExperimaestro(jobDir: string): Read {
  const ran = spawnSync(python, [join(repoRoot, "scripts", "experimaestro-progress.py"), jobDir], { encoding: "utf8", timeout: 60_000 });
  if (ran.status !== 0) throw new Error(`experimaestro-progress.py failed: ${ran.stderr}`);
  return JSON.parse(ran.stdout) as Read;
}

/** The job's JobProgressEvents, from its event archive. */
function readProgressEvents(jobDir: string): { level: number; progress: number; desc: string | null }[] {
  const dir = join(jobDir, ".experimaestro", "events");
  return readdirSync(dir)
    .sort((a, b) => Number(a.replace(/\D/g, "")) - Number(b.replace(/\D/g, "")))
    .flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n").filter(Boolean))
    .map((l) => JSON.parse(l) as { event_type: string; level: number; progress: number; desc: string | null })
    .filter((e) => e.event_type === "JobProgressEvent");
}

const TASK = "xpm_torch.learner.learner";
const ID = "f".repeat(64);

function runningJob() {
  const ws = mkdtempSync(join(tmpdir(), "xpm-progress-"));
  const jobDir = join(ws, "jobs", TASK, ID);
  mkdirSync(jobDir, { recursive: true });
  writeFileSync(join(jobDir, "params.json"), "{}");
  const target = { jobDir, identifier: ID, taskId: TASK };
  writeJobStatus(target, { state: "running", process: { type: "local", pid: process.pid, host: "h" } });
  return target;
}

describe.skipIf(reason !== undefined)("a job's progress, read by experimaestro", () => {
  it("shows the epoch at level 0 and the epoch's part at level 1, from status.json and from the events", () => {
    const target = runningJob();
    const progress = new JobProgress(target);
    progress.set(0, 0, "epoch 1/4");
    progress.set(1, 0.5, "training");
    progress.set(0, 0.375, "epoch 2/4");
    progress.set(1, 0.5, "validation heldout");
    const read = readWithExperimaestro(target.jobDir);
    const expected = [
      { level: 0, desc: "epoch 2/4", progress: 0.375 },
      { level: 1, desc: "validation heldout", progress: 0.5 },
    ];
    // A new level 0 drops level 1 until it is set again, as experimaestro's progress() does.
    expect(read.status_progress).toEqual(expected);
    expect(read.events_progress).toEqual(expected);
    expect(read.state).toBe("JobStateRunning()");
    expect(read.event_kinds.filter((k) => k === "JobProgressEvent")).toHaveLength(4);
    expect(read.live_files).toHaveLength(1);
  });

  it("writes a level again only once it moved by more than 1 % or its description changed, and at its end", () => {
    const target = runningJob();
    const progress = new JobProgress(target);
    for (let step = 0; step <= 1000; step++) progress.set(0, step / 1000, "epoch 1/1");
    const read = readWithExperimaestro(target.jobDir);
    const written = read.event_kinds.filter((k) => k === "JobProgressEvent").length;
    expect(written).toBeGreaterThanOrEqual(50);
    expect(written).toBeLessThanOrEqual(101);
    expect(read.status_progress).toEqual([{ level: 0, desc: "epoch 1/1", progress: 1 }]);
  });

  it("keeps the progress through the scheduler's notes and the job's end, and starts a new launch from none", () => {
    const target = runningJob();
    new JobProgress(target).set(0, 0.5, "epoch 1/2");
    writeJobStatus(target, { state: "done" });
    expect(readJobStatus(target.jobDir)!.progress).toEqual([{ level: 0, desc: "epoch 1/2", progress: 0.5 }]);
    expect(readWithExperimaestro(target.jobDir).status_progress).toEqual([{ level: 0, desc: "epoch 1/2", progress: 0.5 }]);
    writeJobStatus(target, { state: "scheduled", process: { type: "slurm", id: "7" } });
    expect(readJobStatus(target.jobDir)!.progress).toEqual([]);
  });

  it("is written by a real run: each epoch at level 0, training and validation at level 1, the run's end at 100 %", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-progress-run-"));
    const result = await learn(smallLearner(3e-3, 0, 3, 30), { workspace, quiet: true, handleSignals: false });
    const read = readWithExperimaestro(result.jobDir);
    expect(read.state).toBe("JobStateDone()");
    expect(read.status_progress[0]).toEqual({ level: 0, desc: "epoch 3/3", progress: 1 });
    const events = readProgressEvents(result.jobDir);
    const epochs = events.filter((e) => e.level === 0).map((e) => e.desc);
    expect(new Set(epochs)).toEqual(new Set(["epoch 1/3", "epoch 2/3", "epoch 3/3"]));
    const levelZero = events.filter((e) => e.level === 0).map((e) => e.progress);
    expect(levelZero).toEqual([...levelZero].sort((a, b) => a - b));
    expect(events.some((e) => e.level === 1 && e.desc === "training")).toBe(true);
    expect(events.some((e) => e.level === 1 && e.desc === "validation val")).toBe(true);
  });

  it("reaches experimaestro's own monitor live (its events viewer, the feed of its web and console views)", async () => {
    const target = runningJob();
    const workspace = join(target.jobDir, "..", "..", "..");
    const records = ExperimentRecords.open(workspace, "watched");
    records.addJob({ identifier: ID, taskId: TASK, jobDir: target.jobDir, tags: {}, dependsOn: [] });
    records.jobState(ID, "running");
    const monitor = spawn(join(cache, "experimaestro-venv", "bin", "experimaestro"), ["experiments", "--workdir", workspace, "monitor", "--events-viewer", "--events-format", "json"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let seen = "";
    monitor.stdout!.on("data", (d: Buffer) => (seen += d.toString()));
    try {
      const progress = new JobProgress(target);
      let step = 0;
      // Written until the monitor, once started, streams one back.
      await waitFor(() => {
        progress.set(0, (++step % 100) / 100, `epoch ${step}/1000`);
        return /"event_type":\s*"JobProgressEvent"/.test(seen);
      }, "experimaestro's monitor to stream a JobProgressEvent of ours", 60_000, 200);
      const event = JSON.parse(seen.split("\n").find((l) => l.includes("JobProgressEvent"))!) as Record<string, unknown>;
      expect(event).toMatchObject({ job_id: ID, task_id: TASK, level: 0 });
      expect(event.desc).toMatch(/^epoch \d+\/1000$/);
    } finally {
      monitor.kill("SIGKILL");
    }
  });
});
