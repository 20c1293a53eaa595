// What a run reports as it goes, to the progress display and to learn()'s callbacks (its public
// types, re-exported by ts/learn-types.ts): apart from learn() so that a display needs no more.

/** What one epoch produced. */
export interface EpochReport {
  /** Epoch number, from 1. */
  readonly epoch: number;
  /** Global step count at the end of the epoch. */
  readonly step: number;
  /** Mean over the epoch's records of the weighted sum of losses. */
  readonly loss: number;
  /**
   * Every training metric of the epoch, as logged under `train/` in TensorBoard: each loss by
   * its name (`pair-hinge`), `accuracy`, `gradient/scheduler/<optimizer>/<group>`,
   * `iter_per_seconds`.
   */
  readonly train: Readonly<Record<string, number>>;
  /** Listener metrics by tag, e.g. `heldout/ndcg@10`. */
  readonly metrics: Readonly<Record<string, number>>;
  /** Optimizer steps per second during the epoch. */
  readonly stepsPerSecond: number;
  /** Seconds the listeners took at the end of the epoch (validation, TypeScript listeners). */
  readonly validationSeconds: number;
  /** The training loss of each of the epoch's steps, when the Learner's `step_losses` is true. */
  readonly stepLosses?: readonly number[];
}

/** Where a run starts, reported once before its first step. */
export interface RunStart {
  /** Epochs already completed (by the interrupted run this one resumes). */
  readonly epochsDone: number;
  /** The global step the run starts from. */
  readonly step: number;
  readonly totalSteps: number;
  /** Every how many epochs each listener runs. */
  readonly listenerIntervals: readonly number[];
  /** The checkpoint directory the run resumes from. */
  readonly resumedFrom: string | null;
  /**
   * The model's parameters drawn new from the run's seed rather than read from its pretrained
   * files: a CrossEncoder over an encoder saved without a one-label classification head draws
   * its head (`classifier.weight`, `classifier.bias`). Empty when resuming.
   */
  readonly newWeights: readonly string[];
}

/** A listener validating at the end of an epoch. */
export interface ValidationProgress {
  /** The epoch that just ended. */
  readonly epoch: number;
  /** The listener's id. */
  readonly listener: string;
  /** Units scored so far. */
  readonly done: number;
  /** Units to score; 0 while unknown (a TypeScript listener). */
  readonly total: number;
  /**
   * What `done` counts, units that move within one large batch: `queries` (a ranking
   * validation on features), `pairs` (query-document pairs re-ranked, or preference pairs of a
   * validation loss); empty while unknown.
   */
  readonly unit: string;
}

/** Progress inside the run. */
export interface StepProgress {
  readonly epoch: number;
  readonly step: number;
  readonly totalSteps: number;
  /** The mean loss of the epoch's steps so far (absent on some events). */
  readonly runningLoss?: number;
}
