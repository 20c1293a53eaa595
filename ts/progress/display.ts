import type { EpochReport, RunStart, StepProgress, ValidationProgress } from "./events.js";
import { formatDuration, formatLoss, formatRate } from "./format.js";
import { ProgressState, type ProgressSnapshot, type RunShape } from "./state.js";

/** Where progress goes: a writable stream, possibly a terminal. */
export interface ProgressStream {
  write(text: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
}

export interface ProgressDisplayOptions {
  /** `bar` redraws one line (terminals); `lines` prints a line now and then (CI, files). Default: by `stream.isTTY`. */
  readonly mode?: "bar" | "lines";
  /** In `lines` mode, the least time between two lines, in ms (default 10 s). */
  readonly intervalMs?: number;
  /** Prints each epoch's loss, metrics and timings when it ends (default true). */
  readonly epochLines?: boolean;
  /** Milliseconds clock, for tests. */
  readonly now?: () => number;
}

/** What `learn()` drives: start, step, validation and epoch events in, a display out. */
export interface ProgressDisplay {
  /** Once, before the first step: where the run starts (a resume says so) and when listeners run. */
  start(start: RunStart): void;
  step(progress: StepProgress): void;
  validation(progress: ValidationProgress): void;
  epoch(report: EpochReport): void;
  /** Prints `line` above the bar (or as is), so that other output does not tear it. */
  log(line: string): void;
  /** Ends the display: the bar's final state stays on its own line; `lines` prints a last line. */
  finish(): void;
}

/** `step 40/100`, or `validating dev 12/40 batches` while the listeners run. */
function phase(s: ProgressSnapshot): string {
  const v = s.validation;
  if (!v) return `step ${s.stepInEpoch}/${s.stepsPerEpoch}`;
  return v.total > 0 ? `validating ${v.listener} ${v.done}/${v.total} ${v.unit}` : `validating ${v.listener}`;
}

function counts(s: ProgressSnapshot): string {
  return `epoch ${s.epoch}/${s.maxEpochs} ${phase(s)}`;
}

/** `ETA 1:40`, or `ETA >1:40` when validations to come are not timed yet. */
function eta(s: ProgressSnapshot): string {
  return `ETA ${s.etaWithoutValidation ? ">" : ""}${formatDuration(s.etaSeconds)}`;
}

/** One plain line: `epoch 3/8 step 40/100 (240/800, 30%) 1520 steps/s ETA 0:03 loss 0.4123`. */
export function progressLine(s: ProgressSnapshot): string {
  const percent = s.totalSteps > 0 ? Math.floor((100 * s.step) / s.totalSteps) : 0;
  return (
    `${counts(s)} (${s.step}/${s.totalSteps}, ${percent}%) ${formatRate(s.stepsPerSecond)} steps/s ` +
    `${eta(s)} loss ${formatLoss(s.loss)}`
  );
}

/** The bar line, fitted to `width` columns. */
export function barLine(s: ProgressSnapshot, width: number): string {
  const info = ` ${counts(s)} | ${formatRate(s.stepsPerSecond)} steps/s | ${eta(s)} | loss ${formatLoss(s.loss)}`;
  const barWidth = Math.max(10, Math.min(40, width - info.length - 3));
  const fraction = s.totalSteps > 0 ? Math.min(1, s.step / s.totalSteps) : 0;
  const filled = Math.round(fraction * barWidth);
  const bar = `[${"#".repeat(filled)}${"-".repeat(barWidth - filled)}]`;
  return `${bar}${info}`.slice(0, Math.max(1, width - 1));
}

/** A metric value with four significant digits (`0.8123`, `12.35`). */
function formatMetric(value: number): string {
  return Number.isFinite(value) ? value.toPrecision(4) : String(value);
}

/** `epoch 2/3: loss 0.6512, dev/RR@10 0.8123 (training 0:14 at 0.70 steps/s, validation 1:22)`. */
export function epochLine(report: EpochReport, maxEpochs: number): string {
  const metrics = Object.entries(report.metrics)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([tag, value]) => `, ${tag} ${formatMetric(value)}`)
    .join("");
  const validation = report.validationSeconds > 0 ? `, validation ${formatDuration(report.validationSeconds)}` : "";
  return `epoch ${report.epoch}/${maxEpochs}: loss ${formatLoss(report.loss)}${metrics} (${formatRate(report.stepsPerSecond)} steps/s${validation})`;
}

/** `resumed at step 15 (epoch 2, 5/10 steps done) from checkpoint …`, or undefined for a fresh run. */
export function resumeLine(start: RunStart, shape: RunShape): string | undefined {
  if (start.resumedFrom === null) return undefined;
  const inEpoch = start.step - start.epochsDone * shape.stepsPerEpoch;
  const where =
    inEpoch > 0
      ? `epoch ${start.epochsDone + 1}, ${inEpoch}/${shape.stepsPerEpoch} steps done`
      : `after epoch ${start.epochsDone} of ${shape.maxEpochs}`;
  return `resumed at step ${start.step} (${where}) from checkpoint ${start.resumedFrom}`;
}

/** Shows training progress on `stream` as a bar or as periodic lines. */
export function createProgressDisplay(stream: ProgressStream, shape: RunShape, options: ProgressDisplayOptions = {}): ProgressDisplay {
  const now = options.now ?? (() => performance.now());
  const state = new ProgressState(shape, now);
  const mode = options.mode ?? (stream.isTTY ? "bar" : "lines");
  const epochLines = options.epochLines ?? true;
  const startLine = (start: RunStart): string | undefined => {
    state.start(start);
    const line = resumeLine(start, shape);
    return line && `xpm-torch: ${line}`;
  };
  const endLine = (report: EpochReport): string | undefined => {
    state.epoch(report);
    return epochLines ? `xpm-torch: ${epochLine(report, shape.maxEpochs)}` : undefined;
  };
  if (mode === "bar") {
    let drawn = false;
    const draw = (): void => {
      const s = state.snapshot();
      if (!s) return;
      stream.write(`\r\x1b[2K${barLine(s, stream.columns ?? 100)}`);
      drawn = true;
    };
    const clear = (): void => {
      if (drawn) stream.write("\r\x1b[2K");
    };
    const log = (line: string): void => {
      clear();
      stream.write(`${line}\n`);
      if (drawn) draw();
    };
    return {
      start: (start) => {
        const line = startLine(start);
        if (line) log(line);
        draw();
      },
      step: (p) => (state.step(p), draw()),
      validation: (v) => (state.validation(v), draw()),
      epoch: (e) => {
        const line = endLine(e);
        if (line) log(line);
        draw();
      },
      log,
      finish: () => {
        if (drawn) stream.write("\n");
        drawn = false;
      },
    };
  }
  const interval = options.intervalMs ?? 10_000;
  let lastLine = Number.NEGATIVE_INFINITY;
  let printedFinal = false;
  const maybeLine = (force = false): void => {
    const t = now();
    if (!force && t - lastLine < interval) return;
    const s = state.snapshot();
    if (!s) return;
    lastLine = t;
    stream.write(`xpm-torch: ${progressLine(s)}\n`);
  };
  return {
    start: (start) => {
      const line = startLine(start);
      if (line) stream.write(`${line}\n`);
    },
    step: (p) => (state.step(p), maybeLine()),
    // A log says when each validation starts, then how it goes every interval.
    validation: (v) => (state.validation(v), maybeLine(v.done === 0)),
    epoch: (e) => {
      const line = endLine(e);
      if (line) stream.write(`${line}\n`);
    },
    log: (line) => stream.write(`${line}\n`),
    finish: () => {
      const s = state.snapshot();
      if (!s || printedFinal) return;
      printedFinal = true;
      stream.write(`xpm-torch: ${progressLine(s)}, ${formatDuration(s.elapsedSeconds)} elapsed\n`);
    },
  };
}
