// The LocalLauncher's sharing rules, on stand-in job processes (no training, no GPU needed).
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { FabricConfiguration } from "../ts/config/classes/configuration.js";
import { Learner } from "../ts/config/classes/learner.js";
import { ConfigError } from "../ts/errors.js";
import { LocalLauncher } from "../ts/experiment/launchers.js";
import { LocalBackend, gpusWanted } from "../ts/experiment/local.js";
import { jobOf } from "../ts/workspace/job.js";
import { smallLearner } from "./helpers/experiments.js";

// Devices are Meta: the learning rate tells the jobs apart.
const withDevices = (devices: string, accelerator: "cuda" | "cpu" | "auto" = "cuda", lr = 1e-3) =>
  Learner.C({ ...smallLearner(lr), fabric_config: FabricConfiguration.C({ devices, accelerator }) });

/** A stand-in job that writes the environment it got to its stdout file, then waits a little. */
function standIn(ms: number): string[] {
  return [process.execPath, "-e", `console.log(JSON.stringify({ gpus: process.env.CUDA_VISIBLE_DEVICES ?? null, threads: process.env.OMP_NUM_THREADS })); setTimeout(() => {}, ${ms});`];
}

describe("the LocalLauncher", () => {
  it("counts the GPUs a job asks for", () => {
    expect(gpusWanted(withDevices("2"))).toBe(2);
    expect(gpusWanted(withDevices("[1, 3]"))).toBe(2);
    expect(gpusWanted(withDevices("auto"))).toBe(1);
    expect(gpusWanted(withDevices("4", "cpu"))).toBe(0);
    expect(gpusWanted(withDevices("auto", "auto"))).toBe(0);
  });

  it("runs at most max_jobs at once, hands GPUs out exclusively and shares the CPU threads", async () => {
    const backend = new LocalBackend(LocalLauncher.C({ max_jobs: 2, devices: [0, 1, 2] }));
    const workspace = mkdtempSync(join(tmpdir(), "xpm-local-"));
    const configs = [withDevices("2", "cuda", 1), withDevices("1", "cuda", 2), withDevices("1", "cuda", 3)];
    const jobs = configs.map((c) => jobOf(c, workspace));
    jobs.forEach((j) => mkdirSync(j.dir, { recursive: true }));
    expect(backend.canStart(configs[0]!)).toBe(true);
    const first = await backend.start({ job: jobs[0]!, config: configs[0]!, command: standIn(300), afterOk: [] });
    // Two GPUs taken: a job wanting one still fits, one wanting two would not.
    expect(backend.canStart(withDevices("2"))).toBe(false);
    expect(backend.canStart(configs[1]!)).toBe(true);
    const second = await backend.start({ job: jobs[1]!, config: configs[1]!, command: standIn(0), afterOk: [] });
    expect(backend.canStart(configs[2]!)).toBe(false); // max_jobs
    const exits = await Promise.all([first, second].map((r) => backend.follow(r, undefined as never, { onRunning: () => undefined })));
    expect(exits.map((e) => e.code)).toEqual([0, 0]);
    expect(backend.canStart(withDevices("3"))).toBe(true);
    const seen = jobs.slice(0, 2).map((j) => JSON.parse(readFileSync(join(j.dir, "learner.out"), "utf8")) as { gpus: string; threads: string });
    expect(seen.map((s) => s.gpus)).toEqual(["0,1", "2"]);
    expect(seen.map((s) => s.threads)).toEqual(Array(2).fill(String(Math.max(1, Math.floor(availableParallelism() / 2)))));
  });

  it("refuses a job that wants more GPUs than the launcher has", () => {
    const backend = new LocalBackend(LocalLauncher.C({ devices: [0] }));
    expect(() => backend.check(withDevices("2"), "learner")).toThrow(ConfigError);
    expect(() => backend.check(withDevices("2"), "learner")).toThrow(/needs 2 GPUs, and the LocalLauncher has 1/);
    // Without a devices list, GPUs are not managed: the job sees the plan's.
    expect(() => new LocalBackend(LocalLauncher.C({})).check(withDevices("8"), "learner")).not.toThrow();
  });

  it("warns when a job's own thread count times max_jobs is more than the CPUs", () => {
    const cpus = availableParallelism();
    const threaded = (num_threads: number) => Learner.C({ ...smallLearner(1e-3), fabric_config: FabricConfiguration.C({ num_threads }) });
    const backend = new LocalBackend(LocalLauncher.C({ max_jobs: 2 }));
    expect(backend.check(threaded(cpus), "learner")).toEqual([expect.stringMatching(/num_threads \d+ × max_jobs 2 is more threads than the \d+ CPUs/)]);
    expect(backend.check(smallLearner(1e-3), "learner")).toEqual([]);
    expect(new LocalBackend(LocalLauncher.C({ max_jobs: 1 })).check(threaded(cpus), "learner")).toEqual([]);
  });
});
