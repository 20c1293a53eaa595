import { formatDuration, formatLoss, formatRate } from "./format.js";
import { ProgressState, type ProgressSnapshot, type RunShape } from "./state.js";
import type { EpochReport, StepProgress } from "../learn.js";

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
  /** Milliseconds clock, for tests. */
  readonly now?: () => number;
}

/** What `learn()` drives: step and epoch events in, a display out. */
export interface ProgressDisplay {
  step(progress: StepProgress): void;
  epoch(report: EpochReport): void;
  /** Prints `line` above the bar (or as is), so that other output does not tear it. */
  log(line: string): void;
  /** Ends the display: the bar's final state stays on its own line; `lines` prints a last line. */
  finish(): void;
}

function counts(s: ProgressSnapshot): string {
  return `epoch ${s.epoch}/${s.maxEpochs} step ${s.stepInEpoch}/${s.stepsPerEpoch}`;
}

/** One plain line: `epoch 3/8 step 40/100 (240/800, 30%) 1520 steps/s ETA 0:03 loss 0.4123`. */
export function progressLine(s: ProgressSnapshot): string {
  const percent = s.totalSteps > 0 ? Math.floor((100 * s.step) / s.totalSteps) : 0;
  return (
    `${counts(s)} (${s.step}/${s.totalSteps}, ${percent}%) ${formatRate(s.stepsPerSecond)} steps/s ` +
    `ETA ${formatDuration(s.etaSeconds)} loss ${formatLoss(s.loss)}`
  );
}

/** The bar line, fitted to `width` columns. */
export function barLine(s: ProgressSnapshot, width: number): string {
  const info =
    ` ${counts(s)} | ${formatRate(s.stepsPerSecond)} steps/s | ETA ${formatDuration(s.etaSeconds)} | ` +
    `loss ${formatLoss(s.loss)}`;
  const barWidth = Math.max(10, Math.min(40, width - info.length - 3));
  const fraction = s.totalSteps > 0 ? Math.min(1, s.step / s.totalSteps) : 0;
  const filled = Math.round(fraction * barWidth);
  const bar = `[${"#".repeat(filled)}${"-".repeat(barWidth - filled)}]`;
  return `${bar}${info}`.slice(0, Math.max(1, width - 1));
}

/** Shows training progress on `stream` as a bar or as periodic lines. */
export function createProgressDisplay(stream: ProgressStream, shape: RunShape, options: ProgressDisplayOptions = {}): ProgressDisplay {
  const now = options.now ?? (() => performance.now());
  const state = new ProgressState(shape, now);
  const mode = options.mode ?? (stream.isTTY ? "bar" : "lines");
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
    return {
      step: (p) => (state.step(p), draw()),
      epoch: (e) => (state.epoch(e), draw()),
      log: (line) => (clear(), stream.write(`${line}\n`), drawn && draw()),
      finish: () => {
        if (drawn) stream.write("\n");
        drawn = false;
      },
    };
  }
  const interval = options.intervalMs ?? 10_000;
  let lastLine = Number.NEGATIVE_INFINITY;
  let printedFinal = false;
  const maybeLine = (): void => {
    const t = now();
    if (t - lastLine < interval) return;
    const s = state.snapshot();
    if (!s) return;
    lastLine = t;
    stream.write(`xpm-torch: ${progressLine(s)}\n`);
  };
  return {
    step: (p) => (state.step(p), maybeLine()),
    epoch: (e) => (state.epoch(e), maybeLine()),
    log: (line) => stream.write(`${line}\n`),
    finish: () => {
      const s = state.snapshot();
      if (!s || printedFinal) return;
      printedFinal = true;
      stream.write(`xpm-torch: ${progressLine(s)}, ${formatDuration(s.elapsedSeconds)} elapsed\n`);
    },
  };
}
