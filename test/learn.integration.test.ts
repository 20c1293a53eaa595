import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import {
  ConfigError,
  HingeLoss,
  InternalError,
  InterruptedError,
  JobLockedError,
  Learner,
  LossTrainer,
  MlpScorer,
  PairwiseSampler,
  SyntheticLtrDataset,
  TorchError,
  demoLearner,
  learn,
  type LearnerConfig,
  type LearnOptions,
} from "../ts/index.js";
import { unwrapOutcome } from "../ts/learn.js";
import { loadNative } from "../ts/native.js";
import { nodeEval, userEnv } from "./helpers/node.js";

const freshWorkspace = () => mkdtempSync(join(tmpdir(), "xpm-ws-"));
// Each call in its own workspace, so that no result is served from an earlier job.
const run = (config: LearnerConfig, options: LearnOptions = {}) => learn(config, { workspace: freshWorkspace(), ...options });

const losses = (r: { epochs: readonly { loss: number }[] }) => r.epochs.map((e) => e.loss);

function withModelWidth(config: LearnerConfig, input_dim: number): LearnerConfig {
  return Learner.C({ ...config, model: MlpScorer.C({ input_dim, hidden_dims: [8] }) });
}

describe("learn() through the native binding", () => {
  it("trains the demo to at least 0.90 held-out pairwise accuracy", async () => {
    const epochs: number[] = [];
    const result = await run(demoLearner({ seed: 0 }), { onEpoch: (e) => epochs.push(e.epoch) });
    expect(result.cached).toBe(false);
    expect(existsSync(join(result.jobDir, "params.json"))).toBe(true);
    expect(existsSync(join(result.jobDir, "learner.done"))).toBe(true);
    expect(epochs).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(result.epochs).toHaveLength(8);
    const first = result.epochs[0]!;
    const last = result.epochs[7]!;
    expect(last.step).toBe(800);
    expect(last.loss).toBeLessThan(first.loss);
    expect(last.metrics["heldout/pairwise_accuracy"]).toBeGreaterThanOrEqual(0.9);
    expect(last.train["pair-hinge"]).toBeCloseTo(last.loss, 6);
  });

  it("gives identical per-epoch losses for the same seed, different ones for another", async () => {
    const config = demoLearner({ seed: 7, max_epochs: 3, steps_per_epoch: 40 });
    const [a, b] = await Promise.all([run(config), run(config)]);
    expect(losses(a)).toEqual(losses(b));
    const c = await run(demoLearner({ seed: 8, max_epochs: 3, steps_per_epoch: 40 }));
    expect(losses(c)).not.toEqual(losses(a));
  });

  it("rejects an invalid config at .C() naming the field", () => {
    const config = demoLearner();
    expect(() => Learner.C({ ...config, max_epochs: -1 })).toThrow(ConfigError);
    expect(() => Learner.C({ ...config, max_epochs: -1 })).toThrow(/^learner\.max_epochs: /);
  });

  it("turns a libtorch exception into a rejected promise", async () => {
    // The data has 16 features; a model expecting 5 makes the first matmul fail in libtorch.
    const config = withModelWidth(demoLearner({ max_epochs: 1, steps_per_epoch: 2 }), 5);
    const workspace = freshWorkspace();
    const error = await learn(config, { workspace }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TorchError);
    expect((error as TorchError).code).toBe("ERR_TORCH");
    expect((error as TorchError).message).toMatch(/cannot be multiplied/);
    expect((error as TorchError).message).not.toMatch(/Exception raised from/);
    // The failure is recorded and nothing is marked done.
    const { jobOf } = await import("../ts/workspace/job.js");
    const job = jobOf(config, workspace);
    expect(JSON.parse(readFileSync(job.failedFile, "utf8"))).toMatchObject({ code: "ERR_TORCH" });
    expect(existsSync(job.doneFile)).toBe(false);
    expect(existsSync(job.lockFile)).toBe(false);
  });

  it("turns a panic in the training thread into a rejected promise and lives on", async () => {
    const { binding } = loadNative();
    const outcome = await binding.panicInTrainingThread("boom from a test");
    expect(() => unwrapOutcome(outcome)).toThrow(InternalError);
    expect(() => unwrapOutcome(outcome)).toThrow(/boom from a test/);
    const after = await run(demoLearner({ max_epochs: 1, steps_per_epoch: 5 }));
    expect(after.epochs).toHaveLength(1);
  });

  it("reports Rust-side config rules with their path", async () => {
    const base = demoLearner({ max_epochs: 1, steps_per_epoch: 1 });
    const flat = SyntheticLtrDataset.C({ signal_seed: 1, seed: 1, num_queries: 3, docs_per_query: 1, num_features: 16 });
    const trainer = LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: flat }), hooks: [HingeLoss.C({})] });
    const error = await run(Learner.C({ ...base, trainer })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).path).toBe("learner.trainer.sampler");
  });

  it("keeps the event loop responsive while training", async () => {
    // A run far longer than the test: only timers firing on this thread while the core trains
    // can stop it. Were the loop blocked, no tick would run and the run would never end. The
    // moments are counted in ticks and steps, so the machine's speed does not matter.
    const controller = new AbortController();
    let ticksWhileTraining = 0;
    let lastStep = 0;
    const timer = setInterval(() => {
      if (lastStep === 0) return;
      ticksWhileTraining++;
      if (ticksWhileTraining === 5) controller.abort();
    }, 5);
    const outcome = await run(demoLearner({ max_epochs: 1000, steps_per_epoch: 100_000 }), {
      signal: controller.signal,
      onProgress: (p) => (lastStep = p.step),
    }).catch((e: unknown) => e);
    clearInterval(timer);
    expect(outcome).toBeInstanceOf(InterruptedError);
    expect(ticksWhileTraining).toBeGreaterThanOrEqual(5);
    expect((outcome as InterruptedError).message).toMatch(/interrupted at step \d+/);
    const stoppedAt = Number(/at step (\d+)/.exec((outcome as InterruptedError).message)![1]);
    expect(stoppedAt).toBeGreaterThan(0);
    expect(stoppedAt).toBeLessThan(1000 * 100_000);
  });

  it("rethrows what a callback threw, as it is, and stops the run at once", async () => {
    const thrown = new RangeError("listener failed");
    const epochs: number[] = [];
    const running = run(demoLearner({ max_epochs: 50, steps_per_epoch: 5 }), {
      onEpoch: (report) => {
        epochs.push(report.epoch);
        throw thrown;
      },
    });
    await expect(running).rejects.toBe(thrown);
    expect(epochs).toEqual([1]);
  });

  it("stops the run when onProgress throws, and rethrows that error", async () => {
    const thrown = new Error("progress display broke");
    const running = run(demoLearner({ max_epochs: 1000, steps_per_epoch: 100_000 }), {
      onProgress: () => {
        throw thrown;
      },
    });
    await expect(running).rejects.toBe(thrown);
  });

  it("lets node exit once learn() has resolved", () => {
    const code =
      "const m = await import('xpm-torch');" +
      `const r = await m.learn(m.demoLearner({ max_epochs: 1, steps_per_epoch: 5 }), { workspace: ${JSON.stringify(freshWorkspace())}, onProgress() {} });` +
      "console.log(r.epochs.length);";
    const out = nodeEval(code, userEnv(), 30_000);
    expect(out.signal).toBeNull();
    expect(out.stdout.trim()).toBe("1");
    expect(out.status).toBe(0);
  });
});

describe("jobs", () => {
  it("returns a finished job's stored result without training", async () => {
    const workspace = freshWorkspace();
    const config = demoLearner({ max_epochs: 2, steps_per_epoch: 50 });
    const first = await learn(config, { workspace });
    let epochs = 0;
    let steps = 0;
    const files = () => readdirSync(first.jobDir, { recursive: true }).map(String).sort();
    const before = files();
    const again = await learn(config, { workspace, onEpoch: () => epochs++, onProgress: () => steps++ });
    expect(again.cached).toBe(true);
    expect(epochs).toBe(0);
    expect(steps).toBe(0);
    // Nothing was trained or written: no new event file, checkpoint or log.
    expect(files()).toEqual(before);
    expect(again.jobDir).toBe(first.jobDir);
    expect(again.epochs).toEqual(first.epochs);
  });

  it("lets one of two concurrent runs of a job train and refuses the other", async () => {
    const workspace = freshWorkspace();
    const config = demoLearner({ max_epochs: 2, steps_per_epoch: 50 });
    const outcomes = await Promise.allSettled([learn(config, { workspace }), learn(config, { workspace })]);
    const trained = outcomes.filter((o) => o.status === "fulfilled");
    const refused = outcomes.flatMap((o) => (o.status === "rejected" ? [o.reason as unknown] : []));
    expect(trained).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect(refused[0]).toBeInstanceOf(JobLockedError);
    expect((refused[0] as Error).message).toMatch(new RegExp(`already running in process ${process.pid} on `));
  });

  it("refuses a job locked by another live process, and takes over a dead one's lock", async () => {
    const workspace = freshWorkspace();
    const config = demoLearner({ max_epochs: 1, steps_per_epoch: 5 });
    const { jobOf, acquireLock } = await import("../ts/workspace/job.js");
    const job = jobOf(config, workspace);
    acquireLock(job); // creates the directory
    const other = spawn("sleep", ["30"]);
    try {
      writeFileSync(job.lockFile, JSON.stringify({ pid: other.pid, host: (await import("node:os")).hostname(), started: "then" }));
      await expect(learn(config, { workspace })).rejects.toThrow(`already running in process ${other.pid}`);
    } finally {
      other.kill();
    }
    await new Promise((resolve) => other.once("exit", resolve));
    const result = await learn(config, { workspace });
    expect(result.cached).toBe(false);
  });

  it("puts jobs in the XPM_TORCH_WORKSPACE workspace by default", () => {
    const workspace = freshWorkspace();
    const code =
      "const m = await import('xpm-torch');" +
      "const r = await m.learn(m.demoLearner({ max_epochs: 1, steps_per_epoch: 2 }), { quiet: true });" +
      "console.log(r.jobDir);";
    const out = nodeEval(code, userEnv({ XPM_TORCH_WORKSPACE: workspace }), 30_000);
    expect(out.stderr).toBe("");
    expect(out.stdout.trim()).toMatch(new RegExp(`^${workspace}/jobs/xpm_torch\\.learner\\.learner/[0-9a-f]{64}$`));
  });
});
