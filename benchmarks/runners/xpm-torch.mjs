// The side-by-side job through xpm-torch's learn(), as a user script would write it.
// Prints one JSON line: training seconds (the training loops of the epochs, from the epoch
// reports), the mean loss of each epoch and the held-out pairwise accuracy.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import {
  Adam,
  HingeLoss,
  Learner,
  LetorDataset,
  LossTrainer,
  MlpScorer,
  PairwiseSampler,
  ParameterOptimizer,
  Random,
  RankingValidationListener,
  learn,
} from "../../dist/index.js";

const { values: args } = parseArgs({
  options: Object.fromEntries(
    ["train", "heldout", "hidden", "features", "batch", "steps", "epochs", "lr", "seed"].map((k) => [k, { type: "string" }]),
  ),
});
const features = Number(args.features);
const epochs = Number(args.epochs);
const letor = (id, path) => LetorDataset.C({ id, path, num_features: features });

const learner = Learner.C({
  random: Random.C({ seed: Number(args.seed) }),
  model: MlpScorer.C({ input_dim: features, hidden_dims: args.hidden.split(",").map(Number) }),
  trainer: LossTrainer.C({
    sampler: PairwiseSampler.C({ dataset: letor("bench/train", args.train) }),
    batch_size: Number(args.batch),
    num_workers: 0,
    hooks: [HingeLoss.C({ margin: 1.0 })],
  }),
  max_epochs: epochs,
  steps_per_epoch: Number(args.steps) / epochs,
  checkpoint_interval: epochs,
  optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: Number(args.lr) }) })],
  listeners: [
    RankingValidationListener.C({
      id: "heldout",
      dataset: letor("bench/heldout", args.heldout),
      metrics: { pairwise_accuracy: false },
      validation_interval: epochs,
    }),
  ],
});

// A fresh workspace each run: an existing job would be returned from its stored result.
const workspace = mkdtempSync(join(tmpdir(), "xpm-torch-bench-"));
try {
  const result = await learn(learner, { workspace, handleSignals: false });
  const last = result.epochs.at(-1);
  const stepsPerEpoch = Number(args.steps) / epochs;
  const seconds = result.epochs.reduce((sum, e) => sum + stepsPerEpoch / e.stepsPerSecond, 0);
  console.log(
    JSON.stringify({
      steps: last.step,
      train_seconds: seconds,
      epoch_losses: result.epochs.map((e) => e.loss),
      heldout_pairwise_accuracy: last.metrics["heldout/pairwise_accuracy"],
    }),
  );
} finally {
  rmSync(workspace, { recursive: true, force: true });
}
