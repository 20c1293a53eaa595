// The Learner of the GPU suite's MiniLM benchmark, for `xpm-torch wire` (suite.sh build writes
// target/gpu/minilm/learner.json from it): the cross-encoder job of benchmarks/minilm.py (8
// triplets = 16 pairs of 128 tokens a step, pairwise cross-entropy, AdamW lr 2e-5, decay 0.01)
// in bf16-mixed on CUDA. The first epoch is the warm-up, the other five are timed (50 steps);
// the only checkpoint is the last one, after the last epoch's report.
//
// The paths are relative to the job directory, where xpm-torch-run works (--job-dir): the suite
// makes each job directory beside model/ and triplets.tsv.
import {
  AdamW,
  CrossEncoder,
  FabricConfiguration,
  HFEncoder,
  Learner,
  LossTrainer,
  PairwiseCrossEntropyLoss,
  ParameterOptimizer,
  Random,
  TextTripletFile,
  TextTripletSampler,
} from "../../dist/index.js";

export const WARMUP_STEPS = 10;
export const TIMED_EPOCHS = 5;

export default Learner.C({
  random: Random.C({ seed: 0 }),
  model: CrossEncoder.C({
    encoder: HFEncoder.C({ id: "all-MiniLM-L6-v2 (architecture)", path: "../model" }),
    max_length: 128,
  }),
  trainer: LossTrainer.C({
    sampler: TextTripletSampler.C({ triplets: TextTripletFile.C({ id: "bench/minilm", path: "../triplets.tsv" }) }),
    batch_size: 8,
    hooks: [PairwiseCrossEntropyLoss.C({})],
  }),
  max_epochs: 1 + TIMED_EPOCHS,
  steps_per_epoch: WARMUP_STEPS,
  checkpoint_interval: 1 + TIMED_EPOCHS,
  optimizers: [ParameterOptimizer.C({ optimizer: AdamW.C({ lr: 2e-5 }) })],
  listeners: [],
  fabric_config: FabricConfiguration.C({ accelerator: "cuda", precision: "bf16-mixed", devices: "1" }),
});
