import type { EpochReport, RunStart, StepProgress, ValidationProgress } from "./events.js";

/** A validation under way, as a display shows it. */
export interface ValidationSnapshot {
  readonly listener: string;
  readonly done: number;
  /** 0 while unknown (a TypeScript listener). */
  readonly total: number;
  /** What `done` counts (`queries`, `pairs`), empty while unknown. */
  readonly unit: string;
}

/** What a progress display shows at one moment. */
export interface ProgressSnapshot {
  readonly epoch: number;
  readonly maxEpochs: number;
  /** Steps done in the current epoch. */
  readonly stepInEpoch: number;
  readonly stepsPerEpoch: number;
  readonly step: number;
  readonly totalSteps: number;
  /** Training steps per second, over the time spent training only (not validating, not saving). */
  readonly stepsPerSecond: number;
  /** Seconds left: the steps at that rate, plus the validations to come. */
  readonly etaSeconds: number;
  /** True when validations are still to come and none has been timed yet: the ETA leaves them out. */
  readonly etaWithoutValidation: boolean;
  /** The mean loss of the current epoch so far, else that of the last epoch. */
  readonly loss: number | undefined;
  readonly elapsedSeconds: number;
  /** Set while the listeners validate at the end of an epoch. */
  readonly validation: ValidationSnapshot | undefined;
}

/** The run's shape, known before it starts. */
export interface RunShape {
  readonly maxEpochs: number;
  readonly stepsPerEpoch: number;
}

/** Turns start, step, validation and epoch events into snapshots; `now` is in milliseconds. */
export class ProgressState {
  /** The last step event of the current stretch of training (none after a validation or an epoch end). */
  private stretch: { at: number; step: number } | undefined;
  private trainedSeconds = 0;
  private trainedSteps = 0;
  private latest: StepProgress | undefined;
  private loss: number | undefined;
  /** The last epoch's training speed, as the core measured it. */
  private epochRate = Number.NaN;
  private intervals: readonly number[] = [];
  /** The last epoch whose end was reported (or that a resumed run starts after). */
  private epochsEnded = 0;
  private validating: { epoch: number; startedAt: number; current: ValidationSnapshot } | undefined;
  /** The duration of each epoch's validations so far. */
  private readonly validationSeconds: number[] = [];
  private readonly startedAt: number;

  constructor(
    private readonly shape: RunShape,
    private readonly now: () => number,
  ) {
    this.startedAt = now();
  }

  start(start: RunStart): void {
    this.intervals = start.listenerIntervals;
    this.epochsEnded = start.epochsDone;
    const epoch = Math.min(start.epochsDone + 1, this.shape.maxEpochs);
    this.latest = { epoch, step: start.step, totalSteps: start.totalSteps };
  }

  step(progress: StepProgress): void {
    const t = this.now();
    // Only the time between two step events of one stretch is training: the first event after
    // a start, a validation or a checkpoint counts from there, not from before.
    if (this.stretch && progress.step > this.stretch.step) {
      this.trainedSeconds += (t - this.stretch.at) / 1000;
      this.trainedSteps += progress.step - this.stretch.step;
    }
    this.stretch = { at: t, step: progress.step };
    this.validating = undefined;
    this.latest = progress;
    if (progress.runningLoss !== undefined) this.loss = progress.runningLoss;
  }

  validation(progress: ValidationProgress): void {
    this.stretch = undefined;
    if (this.validating?.epoch !== progress.epoch) this.validating = { epoch: progress.epoch, startedAt: this.now(), current: progress };
    this.validating.current = progress;
  }

  epoch(report: EpochReport): void {
    this.stretch = undefined;
    this.epochsEnded = report.epoch;
    if (this.validating) this.validationSeconds.push(report.validationSeconds);
    this.validating = undefined;
    this.loss = report.loss;
    this.epochRate = report.stepsPerSecond;
    this.latest = {
      epoch: report.epoch,
      step: report.step,
      totalSteps: this.latest?.totalSteps ?? this.shape.maxEpochs * this.shape.stepsPerEpoch,
    };
  }

  /** Whether some listener validates at the end of `epoch`. */
  private validatesAt(epoch: number): boolean {
    return this.intervals.some((every) => every > 0 && epoch % every === 0);
  }

  /** Validations of the epochs after the one validating now, or after the last that ended. */
  private validationsToCome(): number {
    let count = 0;
    const from = (this.validating?.epoch ?? this.epochsEnded) + 1;
    for (let e = from; e <= this.shape.maxEpochs; e++) if (this.validatesAt(e)) count++;
    return count;
  }

  /** Seconds of validation left, or undefined when validations are to come and none is timed. */
  private validationEta(t: number): number | undefined {
    // The first validation of a run pays for warming up (allocations, kernels chosen): once
    // another is timed, the ones to come are taken to last as those after it.
    const timed = this.validationSeconds.length > 1 ? this.validationSeconds.slice(1) : this.validationSeconds;
    let mean = timed.length > 0 ? timed.reduce((a, b) => a + b, 0) / timed.length : undefined;
    let current = 0;
    const v = this.validating;
    if (v) {
      const elapsed = (t - v.startedAt) / 1000;
      const { done, total } = v.current;
      if (total > 0 && done > 0) {
        // The listener under way, by its own pace; until one validation is timed, the next
        // ones are taken to last as long as this one.
        current = (elapsed * (total - done)) / done;
        mean ??= elapsed + current;
      } else if (mean !== undefined) current = Math.max(0, mean - elapsed);
    }
    const toCome = this.validationsToCome();
    if (toCome === 0) return current;
    return mean === undefined ? undefined : current + toCome * mean;
  }

  snapshot(): ProgressSnapshot | undefined {
    const p = this.latest;
    if (!p) return undefined;
    const t = this.now();
    // Fast epochs may report one step event each: then the core's measure of the last epoch.
    const rate = this.trainedSeconds > 0 ? this.trainedSteps / this.trainedSeconds : this.epochRate;
    const perEpoch = this.shape.stepsPerEpoch;
    const inEpoch = p.step - (p.epoch - 1) * perEpoch;
    const stepsLeft = p.totalSteps - p.step;
    const trainingEta = stepsLeft === 0 ? 0 : rate > 0 ? stepsLeft / rate : Number.NaN;
    const validationEta = this.validationEta(t);
    return {
      epoch: p.epoch,
      maxEpochs: this.shape.maxEpochs,
      stepInEpoch: Math.min(Math.max(inEpoch, 0), perEpoch),
      stepsPerEpoch: perEpoch,
      step: p.step,
      totalSteps: p.totalSteps,
      stepsPerSecond: rate,
      etaSeconds: trainingEta + (validationEta ?? 0),
      etaWithoutValidation: validationEta === undefined,
      loss: this.loss,
      elapsedSeconds: (t - this.startedAt) / 1000,
      validation: this.validating?.current,
    };
  }
}
