// The MiniLM cross-encoder job through xpm-torch's learn(): pairwise cross-entropy on text
// triplets, AdamW, `--pairs` (query, document) pairs per step (half positive, half negative).
// Prints one JSON line: training seconds (the training loop, from the epoch report), steps and
// the mean loss.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import {
  AdamW,
  CrossEncoder,
  HFEncoder,
  Learner,
  LossTrainer,
  PairwiseCrossEntropyLoss,
  ParameterOptimizer,
  Random,
  TextTripletFile,
  TextTripletSampler,
  learn,
} from "../../dist/index.js";

const { values: args } = parseArgs({
  options: Object.fromEntries(["model", "triplets", "pairs", "steps", "max-length", "lr", "seed"].map((k) => [k, { type: "string" }])),
});
const steps = Number(args.steps);

const learner = Learner.C({
  random: Random.C({ seed: Number(args.seed) }),
  model: CrossEncoder.C({
    encoder: HFEncoder.C({ id: "all-MiniLM-L6-v2", path: args.model }),
    max_length: Number(args["max-length"]),
  }),
  trainer: LossTrainer.C({
    sampler: TextTripletSampler.C({ triplets: TextTripletFile.C({ id: "bench/minilm", path: args.triplets }) }),
    // A triplet gives two pairs.
    batch_size: Number(args.pairs) / 2,
    hooks: [PairwiseCrossEntropyLoss.C({})],
  }),
  max_epochs: 1,
  steps_per_epoch: steps,
  checkpoint_interval: 1,
  optimizers: [ParameterOptimizer.C({ optimizer: AdamW.C({ lr: Number(args.lr) }) })],
  listeners: [],
});

// A fresh workspace each run: an existing job would be returned from its stored result.
const workspace = mkdtempSync(join(tmpdir(), "xpm-torch-bench-"));
try {
  const result = await learn(learner, { workspace, handleSignals: false });
  const epoch = result.epochs.at(-1);
  console.log(JSON.stringify({ steps: epoch.step, train_seconds: steps / epoch.stepsPerSecond, epoch_losses: [epoch.loss] }));
} finally {
  rmSync(workspace, { recursive: true, force: true });
}
