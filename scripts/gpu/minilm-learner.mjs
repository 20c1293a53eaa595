// The Learner of the GPU suite's MiniLM benchmark, for `xpm-torch wire` (suite.sh build writes
// target/gpu/minilm/learner.json from it): the cross-encoder job of benchmarks/minilm.py (8
// triplets = 16 pairs of 128 tokens a step, pairwise cross-entropy, AdamW lr 2e-5, decay 0.01)
// in bf16-mixed on CUDA. The first epoch is the warm-up, the other five are timed (50 steps);
// the only checkpoint is the last one, after the last epoch's report.
//
// The paths are relative to the job directory, where xpm-torch-run works (--job-dir): the suite
// makes each job directory beside model/ and triplets.tsv.
import { FabricConfiguration } from "../../dist/index.js";
import { minilmLearner } from "../../benchmarks/runners/minilm-job.mjs";

export const WARMUP_STEPS = 10;
export const TIMED_EPOCHS = 5;

export default minilmLearner({
  model: "../model",
  modelId: "all-MiniLM-L6-v2 (architecture)",
  triplets: "../triplets.tsv",
  pairs: 16,
  maxLength: 128,
  lr: 2e-5,
  seed: 0,
  epochs: 1 + TIMED_EPOCHS,
  stepsPerEpoch: WARMUP_STEPS,
  checkpointInterval: 1 + TIMED_EPOCHS,
  fabric: FabricConfiguration.C({ accelerator: "cuda", precision: "bf16-mixed", devices: "1" }),
});
