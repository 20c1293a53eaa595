import type { EpochReport, StepProgress } from "../learn.js";

/** What a progress display shows at one moment. */
export interface ProgressSnapshot {
  readonly epoch: number;
  readonly maxEpochs: number;
  /** Steps done in the current epoch. */
  readonly stepInEpoch: number;
  readonly stepsPerEpoch: number;
  readonly step: number;
  readonly totalSteps: number;
  /** Steps per second since this process started training (a resumed run counts from there). */
  readonly stepsPerSecond: number;
  /** Seconds left at that rate. */
  readonly etaSeconds: number;
  /** The mean loss of the current epoch so far, else that of the last epoch. */
  readonly loss: number | undefined;
  readonly elapsedSeconds: number;
}

/** The run's shape, known before it starts. */
export interface RunShape {
  readonly maxEpochs: number;
  readonly stepsPerEpoch: number;
}

/** Turns step and epoch events into snapshots; `now` is in milliseconds. */
export class ProgressState {
  private started: { at: number; step: number } | undefined;
  private latest: StepProgress | undefined;
  private loss: number | undefined;
  private readonly startedAt: number;

  constructor(
    private readonly shape: RunShape,
    private readonly now: () => number,
  ) {
    this.startedAt = now();
  }

  step(progress: StepProgress): void {
    // Rates count from the first event: setup time is not training speed, and a resumed run
    // does not start at step 0.
    this.started ??= { at: this.now(), step: progress.step };
    this.latest = progress;
    if (progress.runningLoss !== undefined) this.loss = progress.runningLoss;
  }

  epoch(report: EpochReport): void {
    this.loss = report.loss;
    this.latest = {
      epoch: report.epoch,
      step: report.step,
      totalSteps: this.latest?.totalSteps ?? this.shape.maxEpochs * this.shape.stepsPerEpoch,
    };
  }

  snapshot(): ProgressSnapshot | undefined {
    const p = this.latest;
    if (!p) return undefined;
    const t = this.now();
    const elapsed = this.started ? (t - this.started.at) / 1000 : 0;
    const rate = elapsed > 0 && this.started && p.step > this.started.step ? (p.step - this.started.step) / elapsed : Number.NaN;
    const perEpoch = this.shape.stepsPerEpoch;
    const inEpoch = p.step - (p.epoch - 1) * perEpoch;
    return {
      epoch: p.epoch,
      maxEpochs: this.shape.maxEpochs,
      stepInEpoch: Math.min(Math.max(inEpoch, 0), perEpoch),
      stepsPerEpoch: perEpoch,
      step: p.step,
      totalSteps: p.totalSteps,
      stepsPerSecond: rate,
      etaSeconds: rate > 0 ? (p.totalSteps - p.step) / rate : Number.NaN,
      loss: this.loss,
      elapsedSeconds: (t - this.startedAt) / 1000,
    };
  }
}
