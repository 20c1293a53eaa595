// The MiniLM cross-encoder job as a Learner, shared by the CPU benchmark's runner
// (minilm-xpm-torch.mjs) and the GPU suite's (scripts/gpu/minilm-learner.mjs): pairwise
// cross-entropy on text triplets, `pairs` (query, document) pairs a step (half positive, half
// negative), AdamW (weight decay 0.01).
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
} from "../../dist/index.js";

/**
 * @param {{ model: string, modelId: string, triplets: string, pairs: number, maxLength: number,
 *   lr: number, seed: number, epochs: number, stepsPerEpoch: number, checkpointInterval: number,
 *   fabric?: unknown }} job
 */
export function minilmLearner(job) {
  return Learner.C({
    random: Random.C({ seed: job.seed }),
    model: CrossEncoder.C({
      encoder: HFEncoder.C({ id: job.modelId, path: job.model }),
      max_length: job.maxLength,
    }),
    trainer: LossTrainer.C({
      sampler: TextTripletSampler.C({ triplets: TextTripletFile.C({ id: "bench/minilm", path: job.triplets }) }),
      // A triplet gives two pairs.
      batch_size: job.pairs / 2,
      hooks: [PairwiseCrossEntropyLoss.C({})],
    }),
    max_epochs: job.epochs,
    steps_per_epoch: job.stepsPerEpoch,
    checkpoint_interval: job.checkpointInterval,
    optimizers: [ParameterOptimizer.C({ optimizer: AdamW.C({ lr: job.lr }) })],
    listeners: [],
    ...(job.fabric === undefined ? {} : { fabric_config: job.fabric }),
  });
}
