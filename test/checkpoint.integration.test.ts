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
  /** The step the child signalled itself at, or null when it did not. */
  signalledAt: number | null;
  /** The stage of a checkpoint save the core killed the process in, or null. */
  killedInSave: string | null;
}

/** Where a run is stopped: at a training step (see train-child.mjs), or inside a save. */
type Moment = { step: number } | { save: string };

function runUntil(ws: string, moment: Moment, signal: "SIGKILL" | "SIGINT" = "SIGKILL", seed = 0): SignalledRun {
  // The core's crash-test kill point: SIGKILL at the first time a save reaches that stage.
  const env = userEnv("step" in moment ? { XPM_TEST_SIGNAL_AT_STEP: String(moment.step), XPM_TEST_SIGNAL: signal } : { XPM_TORCH_KILL_DURING_SAVE: moment.save });
  const out = spawnSync(process.execPath, [CHILD, ws, String(seed)], { cwd: repoRoot, env, encoding: "utf8", timeout: 120_000 });
  const at = /signal \w+ at step (\d+)/.exec(out.stderr);
  const save = /killed during a checkpoint save, at stage (\w+) of /.exec(out.stderr);
  return { code: out.status, signal: out.signal, stderr: out.stderr, signalledAt: at ? Number(at[1]) : null, killedInSave: save ? save[1]! : null };
}

const runUntilStep = (ws: string, step: number, signal: "SIGKILL" | "SIGINT", seed = 0) => runUntil(ws, { step }, signal, seed);

const TOTAL_STEPS = 12 * 60;

/** Distinct kill steps spread over the run, from a fixed seed so that a failure replays. */
function killSteps(seed: number, count: number): number[] {
  const steps = new Set<number>();
  let x = seed;
  while (steps.size < count) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    steps.add(1 + (x % (TOTAL_STEPS - 1)));
  }
  return [...steps].sort((a, b) => a - b);
}

/** Every stage of a save a run can die in (the child keeps every checkpoint: no pruning). */
const SAVE_STAGES = ["files", "manifest", "commit", "swap", "cleanup"];

describe("surviving crashes", () => {
  const reference = () => runToEnd(workspace());

  it("ends with bit-identical weights after ten SIGKILLs, in training steps and in checkpoint saves", () => {
    const uninterrupted = reference();
    const ws = workspace();
    // Five kills at training steps, each followed by one inside a save at another stage.
    const steps = killSteps(42, 5);
    const moments: Moment[] = steps.flatMap((step, i) => [{ step }, { save: SAVE_STAGES[i]! }]);
    let landed = 0;
    const savesKilled: string[] = [];
    for (const moment of moments) {
      const run = runUntil(ws, moment);
      expect(run.stderr).not.toMatch(/ERR_/);
      if (run.signal !== "SIGKILL") continue;
      // Each restart resumes at an epoch boundary at or before the previous kill, so a step
      // kill always comes before the end of the run.
      if (run.signalledAt !== null && run.signalledAt < TOTAL_STEPS) landed++;
      if (run.killedInSave !== null) {
        landed++;
        savesKilled.push(run.killedInSave);
      }
    }
    expect(landed).toBe(10);
    expect(savesKilled).toEqual(SAVE_STAGES);
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

  it("finishes reducing a done job's checkpoints to their models after a SIGKILL in the middle of it", () => {
    const uninterrupted = reference();
    const ws = workspace();
    const killed = runUntil(ws, { save: "drop" });
    expect([killed.signal, killed.killedInSave]).toEqual(["SIGKILL", "drop"]);
    const final = runToEnd(ws);
    expect(final.resumed_from).toMatch(/checkpoints\/epoch-00000012$/);
    expect(readFileSync(final.learned_model).equals(readFileSync(uninterrupted.learned_model))).toBe(true);
    expect(final.epochs.map((e) => e.loss)).toEqual(uninterrupted.epochs.map((e) => e.loss));
    const root = dirname(dirname(dirname(final.learned_model)));
    for (const dir of readdirSync(root).filter((d) => d.startsWith("epoch-"))) {
      expect(readdirSync(join(root, dir)).sort()).toEqual(["MANIFEST.json", "final-state.json", "info.json", "model"]);
    }
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
    const best = result.listeners.val!.loss!.epoch;
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
