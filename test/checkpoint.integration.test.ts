import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { describe, expect, it } from "vitest";

import { repoRoot, userEnv } from "./helpers/node.js";
import { readEventFiles } from "./helpers/tfevents.js";

const CHILD = join(repoRoot, "test", "helpers", "train-child.mjs");
const workspace = () => mkdtempSync(join(tmpdir(), "xpm-crash-"));

interface ChildResult {
  learned_model: string;
  resumed_from: string | null;
  warnings: string[];
  epochs: { loss: number }[];
}

function runToEnd(ws: string, seed = 0): ChildResult {
  const out = spawnSync(process.execPath, [CHILD, ws, String(seed)], { cwd: repoRoot, env: userEnv(), encoding: "utf8", timeout: 120_000 });
  expect(out.stderr).not.toMatch(/ERR_/);
  expect(out.status).toBe(0);
  return JSON.parse(out.stdout) as ChildResult;
}

/** How one run of the child ended. */
interface SignalledRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** The step the child signalled itself at, or null when it finished first. */
  signalledAt: number | null;
}

/** Runs the child until it sends itself `signal` at global step `step` (see train-child.mjs). */
function runUntilStep(ws: string, step: number, signal: "SIGKILL" | "SIGINT", seed = 0): SignalledRun {
  const env = userEnv({ XPM_TEST_SIGNAL_AT_STEP: String(step), XPM_TEST_SIGNAL: signal });
  const out = spawnSync(process.execPath, [CHILD, ws, String(seed)], { cwd: repoRoot, env, encoding: "utf8", timeout: 120_000 });
  const at = /signal \w+ at step (\d+)/.exec(out.stderr);
  return { code: out.status, signal: out.signal, stderr: out.stderr, signalledAt: at ? Number(at[1]) : null };
}

const TOTAL_STEPS = 12 * 60;

/** Ten distinct kill steps spread over the run, from a fixed seed so that a failure replays. */
function killSteps(seed: number, count: number): number[] {
  const steps = new Set<number>();
  let x = seed;
  while (steps.size < count) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    steps.add(1 + (x % (TOTAL_STEPS - 1)));
  }
  return [...steps].sort((a, b) => a - b);
}

describe("surviving crashes", () => {
  const reference = () => runToEnd(workspace());

  it("ends with bit-identical weights after ten SIGKILLs spread over the run", () => {
    const uninterrupted = reference();
    const ws = workspace();
    const targets = killSteps(42, 10);
    let landed = 0;
    for (const step of targets) {
      const run = runUntilStep(ws, step, "SIGKILL");
      expect(run.stderr).not.toMatch(/ERR_/);
      // Each restart resumes at an epoch boundary at or before the previous kill, so it always
      // reaches the next, later, kill step: every kill lands in the middle of training.
      if (run.signal === "SIGKILL" && run.signalledAt === step) landed++;
    }
    expect(landed).toBeGreaterThanOrEqual(8);
    const final = runToEnd(ws);
    // It did continue from what the killed processes left, rather than start over.
    expect(final.resumed_from).toMatch(/checkpoints\/epoch-\d{8}$/);
    expect(readFileSync(final.learned_model).equals(readFileSync(uninterrupted.learned_model))).toBe(true);
    expect(final.epochs.map((e) => e.loss)).toEqual(uninterrupted.epochs.map((e) => e.loss));
  });

  it("stops on SIGINT after writing a checkpoint, and resumes from it exactly", () => {
    const uninterrupted = reference();
    const ws = workspace();
    const { code, stderr, signalledAt } = runUntilStep(ws, 100, "SIGINT");
    expect(signalledAt).toBe(100);
    expect(code).toBe(3);
    expect(stderr).toMatch(/ERR_INTERRUPTED: training was interrupted at step \d+; its state is saved in .*interrupted: run the same job again to resume/);
    const resumed = runToEnd(ws);
    expect(resumed.resumed_from).toMatch(/checkpoints\/interrupted$/);
    expect(readFileSync(resumed.learned_model).equals(readFileSync(uninterrupted.learned_model))).toBe(true);
    // TensorBoard: the resumed run wrote a new event file, continuing at the checkpointed step;
    // together the files hold every epoch once.
    const runs = join(dirname(dirname(dirname(dirname(resumed.learned_model)))), "runs");
    expect(readdirSync(runs).filter((f) => f.includes("tfevents")).length).toBe(2);
    const steps = readEventFiles(runs).filter((s) => s.tag === "train/pair-hinge").map((s) => s.step);
    expect(steps).toEqual(Array.from({ length: 12 }, (_, i) => 60 * (i + 1)));
  });

  it("never resumes another configuration's checkpoints", () => {
    const ws = workspace();
    expect(runUntilStep(ws, 100, "SIGINT").code).toBe(3);
    const other = runToEnd(ws, 1);
    expect(other.resumed_from).toBeNull();
  });

  it("writes model weights that Python's safetensors layout describes", () => {
    const result = reference();
    const bytes = readFileSync(result.learned_model);
    const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString("utf8")) as Record<string, { dtype: string }>;
    expect(Object.keys(header).sort()).toEqual(["layers.0.bias", "layers.0.weight", "layers.1.bias", "layers.1.weight", "layers.2.bias", "layers.2.weight"]);
    expect(new Set(Object.values(header).map((t) => t.dtype))).toEqual(new Set(["F32"]));
  });
});

describe("checkpoint retention", () => {
  it("keeps the newest checkpoint_keep epochs and each listener's best, and lists only those", async () => {
    const { HingeLoss, Learner, LossTrainer, PairwiseSampler, SyntheticLtrDataset, TrainerValidationLoss, demoLearner, learn } =
      await import("../ts/index.js");
    const { existsSync, readdirSync: list } = await import("node:fs");
    const data = (seed: number, signal_seed: number) =>
      SyntheticLtrDataset.C({ signal_seed, seed, num_queries: 60, docs_per_query: 10, num_features: 16 });
    const base = demoLearner({ max_epochs: 8, steps_per_epoch: 20 });
    const trainer = LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(1, 2026) }), batch_size: 64, hooks: [HingeLoss.C({})] });
    const validation = TrainerValidationLoss.C({ id: "val", data: data(2, 7), batch_size: 100, trainer });
    const config = Learner.C({ ...base, trainer, listeners: [validation], checkpoint_keep: 2 });
    const result = await learn(config, { workspace: workspace() });
    const best = (result.listeners.val as { loss: { epoch: number } }).loss.epoch;
    const kept = [...new Set([7, 8, best])].sort((a, b) => a - b);
    expect(Object.keys(result.checkpoints).map(Number).sort((a, b) => a - b)).toEqual(kept);
    for (const path of Object.values(result.checkpoints)) expect(existsSync(path)).toBe(true);
    const dirs = list(join(result.jobDir, "checkpoints")).filter((d) => d.startsWith("epoch-"));
    expect(dirs.map((d) => Number(d.slice(6))).sort((a, b) => a - b)).toEqual(kept);

    // The output as loaders: one per kept model, each file on disk, each its own identity,
    // and all depending on the Learner that trained them.
    const { identifierOf } = await import("../ts/index.js");
    const loaders = [
      result.loaders.learned_model!,
      ...Object.values(result.loaders.checkpoints),
      ...Object.values(result.loaders.listeners.val ?? {}),
    ];
    expect(loaders).toHaveLength(1 + kept.length + 1);
    for (const loader of loaders) expect(existsSync(loader.path)).toBe(true);
    expect(new Set(loaders.map(identifierOf)).size).toBe(loaders.length);
    const other = await learn(Learner.C({ ...config, max_epochs: 9 }), { workspace: workspace() });
    expect(identifierOf(other.loaders.checkpoints["8"]!)).not.toBe(identifierOf(result.loaders.checkpoints["8"]!));
  });
});
