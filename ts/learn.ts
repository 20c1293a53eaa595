import type { Learner } from "./config/classes.js";
import type { ConfigOf } from "./config/base.js";
import { type NativeErrorPayload, XpmTorchError, fromNative } from "./errors.js";
import { loadNative } from "./native.js";

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
  /** Mean of each (unweighted) loss by its name, e.g. `pair-hinge`. */
  readonly losses: Readonly<Record<string, number>>;
  /** Listener metrics, e.g. `heldout/accuracy`. */
  readonly metrics: Readonly<Record<string, number>>;
  /** Optimizer steps per second during the epoch. */
  readonly stepsPerSecond: number;
}

/** Progress inside the run. */
export interface StepProgress {
  readonly epoch: number;
  readonly step: number;
  readonly totalSteps: number;
}

/** What `learn()` resolves to. */
export interface LearnResult {
  readonly epochs: readonly EpochReport[];
}

export interface LearnOptions {
  /** Called after every epoch. */
  readonly onEpoch?: (report: EpochReport) => void;
  /** Called as steps complete (at most every 100 ms). */
  readonly onProgress?: (progress: StepProgress) => void;
}

type NativeEvent = { kind: "step"; progress: StepProgress } | { kind: "epoch"; report: EpochReport };

/** Parses an outcome the binding resolved with, throwing the typed error of a failed job. */
export function unwrapOutcome<T>(json: string): T {
  const outcome = JSON.parse(json) as { ok: true; output: T } | { ok: false; error: NativeErrorPayload };
  if (!outcome.ok) throw fromNative(outcome.error);
  return outcome.output;
}

/**
 * Trains the model a Learner describes. The loop runs on a thread of its own in the Rust core;
 * the Node event loop stays free meanwhile.
 * @throws ConfigError, TorchError, InternalError (all {@link XpmTorchError}).
 */
export async function learn(config: LearnerConfig, options: LearnOptions = {}): Promise<LearnResult> {
  const { binding } = loadNative();
  // A throwing callback must not become an uncaught exception that kills the process: keep the
  // first error and raise it from learn() itself.
  let callbackError: unknown;
  const onEvent = (text: string): void => {
    try {
      const event = JSON.parse(text) as NativeEvent;
      if (event.kind === "epoch") options.onEpoch?.(event.report);
      else options.onProgress?.(event.progress);
    } catch (error) {
      callbackError ??= error;
    }
  };
  const wantsEvents = options.onEpoch !== undefined || options.onProgress !== undefined;
  const outcome = await binding.learn(JSON.stringify(config), wantsEvents ? onEvent : undefined);
  const result = unwrapOutcome<LearnResult>(outcome);
  if (callbackError !== undefined) throw callbackError;
  return result;
}

export { XpmTorchError };
