// The public types of learn(): its options, its result and the reports it passes to callbacks.
import type { ConfigOf } from "./config/class.js";
import type { Learner } from "./config/classes/learner.js";
import type { ModuleLoader } from "./config/classes/module.js";
import type { ProgressDisplay } from "./progress/display.js";

/** A Learner configuration, as `Learner.C({...})` returns it. */
export type LearnerConfig = ConfigOf<typeof Learner>;

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
  /** What `done` counts (`batches`); empty while unknown. */
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

/** A listener's best value of a metric and the model saved then. */
export interface BestCheckpoint {
  readonly epoch: number;
  readonly value: number;
  /** The weights (safetensors) of that epoch, when kept. */
  readonly model?: string;
}

/** A loader of a saved model, marked as an output of the Learner that trained it. */
export type ModuleLoaderConfig = ConfigOf<typeof ModuleLoader>;

/** Loaders of every model the run kept (each file exists on disk). */
export interface LearnerLoaders {
  readonly learned_model: ModuleLoaderConfig | null;
  /** By epoch. */
  readonly checkpoints: Readonly<Record<string, ModuleLoaderConfig>>;
  /** By listener id, then metric. */
  readonly listeners: Readonly<Record<string, Readonly<Record<string, ModuleLoaderConfig>>>>;
}

/** What `learn()` resolves to: the Learner's output and the run's history. */
export interface LearnResult {
  readonly epochs: readonly EpochReport[];
  /** Each listener's result by id: for validation listeners, the best of each metric. */
  readonly listeners: Readonly<Record<string, unknown>>;
  /** The final model's weights (safetensors). */
  readonly learned_model: string | null;
  /** The model weights of each checkpointed epoch. */
  readonly checkpoints: Readonly<Record<string, string>>;
  /** Why training ended before `max_epochs`, if it did. */
  readonly stopped: string | null;
  /** The checkpoint this run continued from, when it resumed an interrupted job. */
  readonly resumed_from: string | null;
  /** What went wrong without stopping the run (damaged checkpoints that were skipped, ...). */
  readonly warnings: readonly string[];
  /** The validation listeners' metrics before the first step, when the Learner's `validate_at_start` is true. */
  readonly start_metrics: Readonly<Record<string, number>> | null;
  /** The job directory (holds params.json, logs, checkpoints). */
  readonly jobDir: string;
  /** The task's identifier. */
  readonly identifier: string;
  /** True when the job had already finished and its stored result was returned. */
  readonly cached: boolean;
  /** Loaders of the kept models, as configurations (for evaluation tasks, exports, ...). */
  readonly loaders: LearnerLoaders;
}

export interface LearnOptions {
  /** Where jobs go; default `XPM_TORCH_WORKSPACE`, else `./xpm-workspace`. */
  readonly workspace?: string;
  /** Called after every epoch. */
  readonly onEpoch?: (report: EpochReport) => void;
  /** Called as steps complete (at most every 100 ms). */
  readonly onProgress?: (progress: StepProgress) => void;
  /** Called as the listeners validate at the end of an epoch: when each starts, then at most every 100 ms. */
  readonly onValidation?: (progress: ValidationProgress) => void;
  /** Called for problems that do not stop the run; by default they are printed to stderr. */
  readonly onWarning?: (message: string) => void;
  /** Stops the run after its current step, writing a checkpoint first (InterruptedError). */
  readonly signal?: AbortSignal;
  /**
   * While training, SIGINT and SIGTERM stop the run the same way instead of killing the
   * process (default true); a second signal exits at once.
   */
  readonly handleSignals?: boolean;
  /**
   * No progress display. By default `learn()` shows one on stderr: a bar with epoch, step,
   * steps/s, ETA and running loss on a terminal, a plain line every 10 s (and a last one)
   * elsewhere.
   */
  readonly quiet?: boolean;
  /** A display to drive instead of the default one (see `createProgressDisplay`). */
  readonly progress?: ProgressDisplay;
}
