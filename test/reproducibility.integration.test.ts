import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

import { describe, expect, it } from "vitest";

import {
  HingeLoss,
  Learner,
  LossTrainer,
  MLP,
  PairwiseSampler,
  ParameterOptimizer,
  AdamW,
  Random,
  RankingValidationListener,
  SyntheticLtrDataset,
  TorchScriptModel,
  learn,
  type LearnerConfig,
} from "../ts/index.js";
import { repoRoot, userEnv } from "./helpers/node.js";
import { readSafetensors } from "./helpers/safetensors.js";

const CHILD = join(repoRoot, "test", "helpers", "dropout-child.mjs");
const FIXTURES = resolve("crates/core/tests/fixtures/models");
const workspace = () => mkdtempSync(join(tmpdir(), "xpm-repro-"));

interface ChildResult {
  learned_model: string;
  jobDir: string;
  resumed_from: string | null;
  epochs: { loss: number }[];
}

function runToEnd(ws: string, ranks = 1): ChildResult {
  const out = spawnSync(process.execPath, [CHILD, ws, String(ranks)], { cwd: repoRoot, env: userEnv(), encoding: "utf8", timeout: 120_000 });
  expect(out.stderr).not.toMatch(/ERR_/);
  expect(out.status).toBe(0);
  return JSON.parse(out.stdout) as ChildResult;
}

interface Killed {
  /** The step the child had reported when the kill was sent (null: it finished first). */
  readonly sentAt: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly code: number | null;
}

/** Starts a training process and SIGKILLs it once it reports having done step `step`. */
function killAtStep(ws: string, step: number): Promise<Killed> {
  return new Promise((done) => {
    const child = spawn(process.execPath, [CHILD, ws], { cwd: repoRoot, env: userEnv() });
    let sentAt: number | null = null;
    let pending = "";
    child.stderr.on("data", (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const reached = /^step (\d+)$/.exec(line);
        if (sentAt === null && reached && Number(reached[1]) >= step) {
          sentAt = Number(reached[1]);
          child.kill("SIGKILL");
        }
      }
    });
    child.on("exit", (code, signal) => done({ sentAt, signal, code }));
  });
}

describe("reproducible randomness", () => {
  it("ends with the bytes of an uninterrupted run after ten SIGKILLs spread over a run with dropout", async () => {
    // 8 epochs of 25 steps. The kills are sent at steps spread over the run, four of them at an
    // epoch's last step, while the listener validates and the checkpoint is written. Each
    // restart resumes from the newest checkpoint, before the next kill's step.
    const uninterrupted = runToEnd(workspace());
    const ws = workspace();
    const steps = [7, 25, 41, 50, 68, 100, 113, 137, 150, 181];
    const kills: Killed[] = [];
    for (const step of steps) kills.push(await killAtStep(ws, step));
    // Every kill landed mid-run: sent at its step, and the process died of it.
    const midRun = kills.filter((k) => k.sentAt !== null && k.signal === "SIGKILL");
    expect(midRun.length, JSON.stringify(kills)).toBe(10);
    const final = runToEnd(ws);
    expect(final.resumed_from).toMatch(/checkpoints\/epoch-\d{8}$/);
    expect(readFileSync(final.learned_model).equals(readFileSync(uninterrupted.learned_model))).toBe(true);
    expect(final.epochs.map((e) => e.loss)).toEqual(uninterrupted.epochs.map((e) => e.loss));
  });

  it("gives each rank of a data-parallel run its own stream, saved and restored with the checkpoint", async () => {
    const whole = runToEnd(workspace(), 2);
    const ws = workspace();
    const first = runToEnd(ws, 2);
    expect(readFileSync(first.learned_model).equals(readFileSync(whole.learned_model))).toBe(true);
    // Rank 0 saved both ranks' generator states, and they differ: each rank drops other units.
    const checkpoints = join(first.learned_model, "..", "..", "..");
    const generators = readSafetensors(join(checkpoints, "epoch-00000002", "generators.safetensors"));
    expect([...generators.keys()].sort()).toEqual(["0/cpu", "1/cpu"]);
    expect(generators.get("0/cpu")!.data.equals(generators.get("1/cpu")!.data)).toBe(false);
    // As if killed before the last epoch's checkpoint: both ranks resume from epoch 2, each
    // with its own stream.
    rmSync(join(checkpoints, "epoch-00000003"), { recursive: true });
    for (const done of readdirSync(first.jobDir).filter((f) => f.endsWith(".done"))) rmSync(join(first.jobDir, done));
    const resumed = runToEnd(ws, 2);
    expect(resumed.resumed_from).toMatch(/checkpoints\/epoch-00000002$/);
    expect(readFileSync(resumed.learned_model).equals(readFileSync(whole.learned_model))).toBe(true);
  });

  it("gives two runs with one seed the same bytes when they train side by side in one process", async () => {
    const data = (seed: number, num_queries: number) =>
      SyntheticLtrDataset.C({ signal_seed: 7, seed, num_queries, docs_per_query: 10, num_features: 8 });
    const config = (model: LearnerConfig["model"]) =>
      Learner.C({
        random: Random.C({ seed: 11 }),
        model,
        trainer: LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(1, 60) }), batch_size: 32, hooks: [HingeLoss.C({})] }),
        max_epochs: 2,
        steps_per_epoch: 15,
        optimizers: [ParameterOptimizer.C({ optimizer: AdamW.C({ lr: 1e-2 }) })],
        listeners: [RankingValidationListener.C({ id: "heldout", dataset: data(2, 20), metrics: { pairwise_accuracy: true } })],
      });
    for (const model of [
      MLP.C({ input_dim: 8, hidden_dims: [16, 16], dropout: 0.3 }),
      // A scripted module's own nn.Dropout draws from libtorch's default generator.
      TorchScriptModel.C({ id: "scripted-dropout", path: join(FIXTURES, "scripted_dropout.pt"), input: "features" }),
    ]) {
      const [a, b] = await Promise.all([
        learn(config(model), { workspace: workspace(), quiet: true }),
        learn(config(model), { workspace: workspace(), quiet: true }),
      ]);
      const c = await learn(config(model), { workspace: workspace(), quiet: true });
      const bytes = (r: { learned_model: string | null }) => readFileSync(r.learned_model!);
      expect(bytes(a).equals(bytes(b))).toBe(true);
      expect(bytes(a).equals(bytes(c))).toBe(true);
    }
  });
});
