import { MlpScorer } from "./config/classes/models.js";
import { demoLearner } from "./demo-config.js";
import { jobSummary } from "./job-summary.js";
import { type EpochReport, learn } from "./learn.js";
import { createProgressDisplay } from "./progress/display.js";

export interface DemoRunOptions {
  /** Where lines go (default stdout). */
  readonly print?: (line: string) => void;
  readonly workspace?: string;
  /** No progress bar (there is none anyway when stderr is not a terminal). */
  readonly quiet?: boolean;
}

function epochLine(e: EpochReport): string {
  return (
    `epoch ${String(e.epoch).padStart(2)}  loss ${e.loss.toFixed(4)}  ` +
    `held-out pairwise accuracy ${(e.metrics["heldout/pairwise_accuracy"] ?? Number.NaN).toFixed(4)}  ` +
    `NDCG@10 ${(e.metrics["heldout/ndcg@10"] ?? Number.NaN).toFixed(4)}  ` +
    `${e.stepsPerSecond.toFixed(0)} steps/s`
  );
}

/** Runs the demo training, prints one line per epoch and a summary; returns the final held-out accuracy. */
export async function runDemo(options: DemoRunOptions = {}): Promise<number> {
  const print = options.print ?? console.log;
  const config = demoLearner();
  const layers = MlpScorer.is(config.model) ? [config.model.input_dim, ...config.model.hidden_dims, 1].join("→") : "?";
  print(
    `xpm-torch demo: MLP ${layers}, pairwise hinge loss, Adam, ` +
      `${config.max_epochs} epochs × ${config.steps_per_epoch} steps`,
  );
  // On a terminal the bar runs below the epoch lines; elsewhere the epoch lines are the log.
  const bar =
    !options.quiet && process.stderr.isTTY
      ? createProgressDisplay(process.stderr, { maxEpochs: config.max_epochs, stepsPerEpoch: config.steps_per_epoch }, { mode: "bar", epochLines: false })
      : undefined;
  const started = performance.now();
  const result = await learn(config, {
    ...(options.workspace === undefined ? {} : { workspace: options.workspace }),
    ...(bar ? { progress: bar } : { quiet: true }),
    onEpoch: (e) => (bar ? bar.log(epochLine(e)) : print(epochLine(e))),
  });
  const seconds = (performance.now() - started) / 1000;
  const last = result.epochs[result.epochs.length - 1];
  const accuracy = last?.metrics["heldout/pairwise_accuracy"] ?? Number.NaN;
  if (result.cached) {
    print("this job had already run; its stored result:");
    result.epochs.forEach((e) => print(epochLine(e)));
  } else {
    const steps = last?.step ?? 0;
    print(
      `done: ${steps} steps in ${seconds.toFixed(2)} s (${(steps / seconds).toFixed(0)} steps/s including setup); ` +
        `final held-out accuracy ${accuracy.toFixed(4)}`,
    );
  }
  jobSummary(result).forEach((line) => print(line));
  if (result.cached) print(`(remove ${result.jobDir} to train again)`);
  return accuracy;
}
