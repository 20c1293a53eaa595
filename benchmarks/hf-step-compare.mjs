#!/usr/bin/env node
// Trains the cross-encoder that scripts/fixtures/gen_hf_training.py wrote (its init/ directory,
// triplets.tsv, expected.json) with xpm-torch, one step per epoch, and compares the loss of every
// step and the final weights with the PyTorch + transformers loop's.
// Usage: node benchmarks/hf-step-compare.mjs <dir written by gen_hf_training.py> [--threads 2]
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  AdamW,
  CrossEncoder,
  FabricConfiguration,
  HFEncoder,
  Learner,
  LinearWithWarmup,
  LossTrainer,
  PairwiseCrossEntropyLoss,
  ParameterOptimizer,
  Random,
  TextTripletFile,
  TextTripletSampler,
  learn,
} from "../dist/index.js";

const dir = process.argv[2];
const threadsAt = process.argv.indexOf("--threads");
const threads = threadsAt > 0 ? Number(process.argv[threadsAt + 1]) : 2;
const expected = JSON.parse(readFileSync(join(dir, "expected.json"), "utf8"));
const learner = Learner.C({
  random: Random.C({ seed: 0 }),
  model: CrossEncoder.C({ encoder: HFEncoder.C({ id: "compare", path: join(dir, "init") }), max_length: expected.max_length }),
  trainer: LossTrainer.C({
    sampler: TextTripletSampler.C({ triplets: TextTripletFile.C({ id: "compare", path: join(dir, "triplets.tsv") }) }),
    batch_size: expected.batch,
    hooks: [PairwiseCrossEntropyLoss.C({})],
  }),
  optimizers: [
    ParameterOptimizer.C({
      optimizer: AdamW.C({ lr: expected.lr, weight_decay: expected.weight_decay }),
      scheduler: LinearWithWarmup.C({ num_warmup_steps: expected.warmup }),
    }),
  ],
  max_epochs: expected.steps,
  steps_per_epoch: 1,
  fabric_config: FabricConfiguration.C({ num_threads: threads }),
  listeners: [],
});
const result = await learn(learner, { workspace: mkdtempSync(join(tmpdir(), "xpm-compare-")), quiet: true });
const ours = result.epochs.map((e) => e.loss);
const rows = ours.map((loss, i) => ({ step: i + 1, ours: loss, reference: expected.losses[i], diff: Math.abs(loss - expected.losses[i]) }));
const mean = ours.reduce((a, b) => a + b, 0) / ours.length;
const std = Math.sqrt(ours.reduce((a, b) => a + (b - mean) ** 2, 0) / (ours.length - 1));
console.log(JSON.stringify({ lossMean: mean, lossStd: std, train: result.epochs[0].train, maxLossDiff: Math.max(...rows.map((r) => r.diff)), rows: rows.filter((r, i) => i < 5 || i % 10 === 9), learned: result.learned_model }, null, 1));
