// One run of the core in this process, with its JavaScript side; and the configuration the
// core reads when there is none (xpm-torch-run).
import { ConfigError, unwrapOutcome } from "../errors.js";
import type { LearnOptions, LearnResult, LearnerConfig } from "../learn-types.js";
import { loadNative } from "../native.js";
import { createProgressDisplay } from "../progress/display.js";
import { generatePaths } from "../workspace/generated.js";
import type { Job } from "../workspace/job.js";
import { type RunCallbacks, emptySide, foreignCalls, javaScriptParts, reporter, trainingModel, learnerWireOf } from "./bridge.js";
import { interruptions } from "./interrupts.js";
import { resolvePretrained } from "./pretrained.js";

/** What a run stores in its job directory and returns. */
export type StoredResult = Omit<LearnResult, "jobDir" | "identifier" | "cached" | "loaders" | "listeners" | "outputs"> & {
  /** Every listener's output by id, validation listeners' bests and TypeScript listeners' outputs alike. */
  readonly listeners: Readonly<Record<string, unknown>>;
};

/**
 * The JSON `learn()` hands the core, with the generated paths (`runs`, `checkpoints`, `out/...`)
 * relative to the job directory: what `xpm-torch-run` runs on a machine without Node.
 * @throws ConfigError when a part of the Learner is written in TypeScript (listeners, hooks,
 * samplers, dims providers) or holds its data in JavaScript (in-memory datasets).
 */
export function coreConfigJson(config: LearnerConfig): string {
  const side = emptySide(config.random.seed);
  const wire = learnerWireOf(config, generatePaths(config, ""), side);
  const inJavaScript = javaScriptParts(side);
  if (inJavaScript.length > 0) {
    throw new ConfigError("learner", `runs parts in JavaScript (${inJavaScript.join(", ")}): only learn() in Node can run it`);
  }
  return JSON.stringify(wire);
}

/** The display on stderr: what the run's callbacks print to stdout or stderr goes above its bar. */
function defaultDisplay(config: LearnerConfig, options: LearnOptions) {
  const shape = { maxEpochs: config.max_epochs, stepsPerEpoch: config.steps_per_epoch };
  return createProgressDisplay(process.stderr, shape, { epochLines: options.epochLines, capture: [process.stdout, process.stderr] });
}

/** One run of the core in this process, with its JavaScript side. */
export async function train(config: LearnerConfig, job: Job, options: LearnOptions): Promise<StoredResult> {
  const { binding } = loadNative();
  const pretrained = await resolvePretrained(config, job, options.quiet === true);
  const side = emptySide(config.random.seed);
  const display = options.quiet ? undefined : (options.progress ?? defaultDisplay(config, options));
  const wire = learnerWireOf(config, job.paths, side);
  const callbacks: RunCallbacks = {
    onEpoch: (report) => {
      display?.epoch(report);
      options.onEpoch?.(report);
    },
    onProgress: (progress) => {
      display?.step(progress);
      options.onProgress?.(progress);
    },
    onStart: (start) => display?.start(start),
    onValidation: (progress) => {
      display?.validation(progress);
      options.onValidation?.(progress);
    },
    onWarning: options.onWarning ?? ((m: string) => (display ? display.log(`xpm-torch: ${m}`) : console.warn(`xpm-torch: ${m}`))),
  };
  const run = new binding.LearnRun();
  const stop = (): void => run.cancel();
  const stopHandlers = interruptions(stop, options);
  const model = trainingModel(binding, run);
  let outcome: string;
  try {
    outcome = await binding.learn(JSON.stringify(wire), run, reporter(side, callbacks, stop), foreignCalls(side, callbacks, model));
  } finally {
    stopHandlers();
    display?.finish();
  }
  // The user's own exception, as thrown, whatever the run ended with.
  if (side.thrown) throw side.thrown.error;
  return { ...unwrapOutcome<Omit<StoredResult, "pretrained">>(outcome), pretrained };
}


