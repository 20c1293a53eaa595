// The MiniLM cross-encoder job through xpm-torch's learn(): pairwise cross-entropy on text
// triplets, AdamW, `--pairs` (query, document) pairs per step (half positive, half negative).
// Prints one JSON line: training seconds (the training loop, from the epoch report), steps and
// the mean loss.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { learn } from "../../dist/index.js";
import { minilmLearner } from "./minilm-job.mjs";

const { values: args } = parseArgs({
  options: Object.fromEntries(["model", "triplets", "pairs", "steps", "max-length", "lr", "seed"].map((k) => [k, { type: "string" }])),
});
const steps = Number(args.steps);

const learner = minilmLearner({
  model: args.model,
  modelId: "all-MiniLM-L6-v2",
  triplets: args.triplets,
  pairs: Number(args.pairs),
  maxLength: Number(args["max-length"]),
  lr: Number(args.lr),
  seed: Number(args.seed),
  epochs: 1,
  stepsPerEpoch: steps,
  checkpointInterval: 1,
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
