// The public types of learn(): its options, its result and the reports it passes to callbacks.
import type { ConfigOf } from "./config/class.js";
import type { Learner } from "./config/classes/learner.js";
import type { ModuleLoader } from "./config/classes/module.js";
import type { ProgressDisplay } from "./progress/display.js";
import type { EpochReport, StepProgress, ValidationProgress } from "./progress/events.js";

export type { EpochReport, RunStart, StepProgress, ValidationProgress } from "./progress/events.js";

/** A Learner configuration, as `Learner.C({...})` returns it. */
export type LearnerConfig = ConfigOf<typeof Learner>;

/** A listener's best value of a metric and the model saved then. */
export interface BestCheckpoint {
  readonly epoch: number;
  readonly value: number;
  /** The weights (safetensors) of that epoch, when kept. */
  readonly model?: string;
}

/** What a done run dropped from its kept epoch checkpoints: the state only resuming needs. */
export interface DroppedTrainingState {
  /** The epochs whose checkpoints now hold only their weights. */
  readonly epochs: readonly number[];
  /** The bytes freed. */
  readonly bytes: number;
}

/** A validation listener's part of a result: the best of each metric it watches, by metric. */
export type ListenerBests = Readonly<Record<string, BestCheckpoint>>;

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

/** A pretrained model of the Hugging Face Hub a run started from: what was asked, and the commit it got. */
export interface PretrainedModel {
  /** The Hub id, as the configuration names it. */
  readonly id: string;
  /** The revision asked for (`main` unless the configuration sets one). */
  readonly revision: string;
  /** The commit whose files the run read. */
  readonly commit: string;
}

/** What `learn()` resolves to: the Learner's output and the run's history. */
export interface LearnResult {
  readonly epochs: readonly EpochReport[];
  /**
   * Each validation listener's best of each metric, by listener id then metric:
   * `result.listeners.heldout["ndcg@10"]` is `{ epoch, value, model }`.
   */
  readonly listeners: Readonly<Record<string, ListenerBests>>;
  /** Each listener written in TypeScript (`defineListener`), by id: the `output` its last call returned. */
  readonly outputs: Readonly<Record<string, unknown>>;
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
  /**
   * What the done run dropped from its epoch checkpoints (optimizer moments, sampler positions,
   * random generators), or null: the Learner's `keep_training_state: true` keeps them.
   */
  readonly dropped_training_state: DroppedTrainingState | null;
  /** The Hub models the run started from (each encoder named by id rather than path), with their commits. */
  readonly pretrained: readonly PretrainedModel[];
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
  /** Where jobs go; default `XPM_TORCH_WORKSPACE`, else the nearest `xpm-workspace` folder in the current folder or above it, else `./xpm-workspace`. */
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
   * elsewhere. While the bar is shown, what is written to stdout and stderr (a `console.log` in
   * `onEpoch`) goes above it, one whole line at a time.
   */
  readonly quiet?: boolean;
  /**
   * Whether the progress display prints a line at each epoch's end, with its loss, metrics and
   * timings (default true): `false` when `onEpoch` prints its own.
   */
  readonly epochLines?: boolean;
  /** A display to drive instead of the default one (see `createProgressDisplay`). */
  readonly progress?: ProgressDisplay;
}
