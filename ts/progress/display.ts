import type { EpochReport, RunStart, StepProgress, ValidationProgress } from "./events.js";
import { formatDuration, formatLoss, formatRate } from "./format.js";
import { newWeightsLine } from "../model.js";
import { type CapturableStream, type Interception, interceptLines } from "./intercept.js";
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
  /**
   * Streams whose writes, while the bar is shown, go above it: each whole line once its newline
   * is written, the bar drawn again below (default none; `learn()` gives `process.stdout` and
   * `process.stderr`). Their own `write` comes back when the display finishes. Those that are
   * no terminal, other than `stream`, are left alone.
   */
  readonly capture?: readonly CapturableStream[];
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

/** `step 40/100`, or `validating dev 1200/4000 queries` while the listeners run. */
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

/**
 * `weights not in the model's files, newly drawn from the run's seed: classifier.weight, …`, or
 * undefined when the model drew nothing of the kind (or the run resumes).
 */
export function newWeightsStartLine(start: RunStart): string | undefined {
  return start.newWeights.length > 0 ? newWeightsLine(start.newWeights, "the run's seed") : undefined;
}

/** What both kinds of display do at a run's start and at an epoch's end. */
interface Lines {
  readonly state: ProgressState;
  /** The start line to print, if any. */
  startLine(start: RunStart): string | undefined;
  /** The epoch line to print, if any. */
  endLine(report: EpochReport): string | undefined;
}

/** The bar, redrawn in place; writes to `capture` go above it, whole lines only. */
function barDisplay(stream: ProgressStream, lines: Lines, capture: readonly CapturableStream[]): ProgressDisplay {
  const { state } = lines;
  let drawn = false;
  let interception: Interception | undefined;
  const write = (text: string): void => {
    if (interception) interception.raw(stream, text);
    else stream.write(text);
  };
  const draw = (): void => {
    const s = state.snapshot();
    if (!s) return;
    // From the first time the bar shows: what others write goes above it.
    if (!interception && capture.length > 0) {
      interception = interceptLines(capture, (target, text) => {
        clear();
        interception?.raw(target, text);
        draw();
      });
    }
    write(`\r\x1b[2K${barLine(s, stream.columns || 100)}`);
    drawn = true;
  };
  const clear = (): void => {
    if (drawn) write("\r\x1b[2K");
  };
  const log = (line: string): void => {
    clear();
    write(`${line}\n`);
    if (drawn) draw();
  };
  return {
    start: (start) => {
      const line = lines.startLine(start);
      if (line) log(line);
      draw();
    },
    step: (p) => (state.step(p), draw()),
    validation: (v) => (state.validation(v), draw()),
    epoch: (e) => {
      const line = lines.endLine(e);
      if (line) log(line);
      draw();
    },
    log,
    finish: () => {
      if (drawn) write("\n");
      drawn = false;
      interception?.restore();
      interception = undefined;
    },
  };
}

/** A plain line now and then (at most every `interval` ms), and a last one. */
function linesDisplay(stream: ProgressStream, lines: Lines, interval: number, now: () => number): ProgressDisplay {
  const { state } = lines;
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
      const line = lines.startLine(start);
      if (line) stream.write(`${line}\n`);
    },
    step: (p) => (state.step(p), maybeLine()),
    // A log says when each validation starts, then how it goes every interval.
    validation: (v) => (state.validation(v), maybeLine(v.done === 0)),
    epoch: (e) => {
      const line = lines.endLine(e);
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

/** Shows training progress on `stream` as a bar or as periodic lines. */
export function createProgressDisplay(stream: ProgressStream, shape: RunShape, options: ProgressDisplayOptions = {}): ProgressDisplay {
  const now = options.now ?? (() => performance.now());
  const state = new ProgressState(shape, now);
  const mode = options.mode ?? (stream.isTTY ? "bar" : "lines");
  const epochLines = options.epochLines ?? true;
  const lines: Lines = {
    state,
    startLine: (start) => {
      state.start(start);
      const line = resumeLine(start, shape) ?? newWeightsStartLine(start);
      return line && `xpm-torch: ${line}`;
    },
    endLine: (report) => {
      state.epoch(report);
      return epochLines ? `xpm-torch: ${epochLine(report, shape.maxEpochs)}` : undefined;
    },
  };
  if (mode === "lines") return linesDisplay(stream, lines, options.intervalMs ?? 10_000, now);
  // Streams that are no terminal do not show the bar: what is written there stays as it comes.
  const capture = (options.capture ?? []).filter((s) => s.isTTY || s === stream);
  return barDisplay(stream, lines, capture);
}
