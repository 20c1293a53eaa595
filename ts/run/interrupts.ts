// What stops a run from outside: the caller's AbortSignal, SIGINT and SIGTERM.
import type { LearnOptions } from "../learn-types.js";

/** Connects the abort signal and, unless disabled, SIGINT/SIGTERM to the run; returns the undo. */
export function interruptions(
  stop: () => void,
  options: Pick<LearnOptions, "signal" | "handleSignals">,
  what = "finishing the current step and writing a checkpoint",
): () => void {
  options.signal?.addEventListener("abort", stop, { once: true });
  if (options.signal?.aborted) stop();
  let signals = 0;
  const onSignal = (name: NodeJS.Signals): void => {
    signals += 1;
    if (signals > 1) process.exit(name === "SIGINT" ? 130 : 143);
    console.error(`xpm-torch: ${name}: ${what} (again to quit at once)`);
    stop();
  };
  const handle = options.handleSignals ?? true;
  if (handle) {
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  }
  return () => {
    options.signal?.removeEventListener("abort", stop);
    if (handle) {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
    }
  };
}
