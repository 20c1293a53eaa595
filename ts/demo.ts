import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

import { MlpScorer } from "./config/classes/builtin.js";
import { demoLearner } from "./demo-config.js";
import { type EpochReport, type LearnResult, learn } from "./learn.js";
import { createProgressDisplay } from "./progress/display.js";
import { readJob } from "./report/job.js";

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

/** Bytes of the files under `path`. */
function bytesUnder(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + bytesUnder(join(path, entry)), 0);
}

/** Which epoch checkpoints the run kept and the space they take (they hold the optimizer too). */
function checkpointSpace(result: LearnResult): string {
  const epochs = Object.keys(result.checkpoints).map(Number).sort((a, b) => a - b);
  if (epochs.length === 0) return "(none kept)";
  const bytes = bytesUnder(join(result.jobDir, "checkpoints"));
  const size = bytes >= 1e9 ? `${(bytes / 1e9).toFixed(1)} GB` : `${Math.max(1, Math.round(bytes / 1e6))} MB`;
  return `(epoch${epochs.length > 1 ? "s" : ""} ${epochs.join(", ")}: ${size}; checkpoint_keep sets how many)`;
}

/** Where the job's files are and its listeners' best values, as lines. */
export function jobSummary(result: LearnResult): string[] {
  const job = readJob(result.jobDir);
  const lines = [
    "where everything is:",
    `  job directory   ${result.jobDir}`,
    `  configuration   ${join(result.jobDir, "params.json")}`,
    `  TensorBoard     ${join(result.jobDir, "runs")}  (view: tensorboard --logdir DIR)`,
    `  checkpoints     ${join(result.jobDir, "checkpoints")}  ${checkpointSpace(result)}`,
  ];
  if (result.learned_model) lines.push(`  learned model   ${result.learned_model}`);
  if (job.best.length > 0) {
    lines.push("best values:");
    for (const b of job.best) {
      lines.push(`  ${b.listener}/${b.metric}  ${b.value.toFixed(4)} at epoch ${b.epoch}${b.model ? `  (${b.model})` : ""}`);
    }
  }
  if (result.stopped) lines.push(`stopped early: ${result.stopped}`);
  lines.push(`curves and results: npx xpm-torch report ${result.jobDir}`);
  return lines;
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
