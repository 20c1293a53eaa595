import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";

import type { LearnResult } from "./learn-types.js";
import { readJob } from "./report/job.js";

/** Bytes of the files under `path`. */
function bytesUnder(path: string): number {
  if (!existsSync(path)) return 0;
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, entry) => sum + bytesUnder(join(path, entry)), 0);
}

/** `bytes` in kB, MB or GB. */
function size(bytes: number): string {
  if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(1)} GB`;
  if (bytes >= 1e6) return `${Math.round(bytes / 1e6)} MB`;
  return `${Math.max(1, Math.round(bytes / 1e3))} kB`;
}

/** The line saying what the done run dropped and how to keep it, if it dropped anything. */
function droppedLine(result: LearnResult): string | undefined {
  const dropped = result.dropped_training_state;
  if (!dropped) return undefined;
  const epochs = `epoch${dropped.epochs.length > 1 ? "s" : ""} ${dropped.epochs.join(", ")}`;
  return (
    `  dropped         the training state of ${epochs} (optimizer moments, sampler positions, random generators: ` +
    `${size(dropped.bytes)}), which only resuming needs; keep_training_state: true keeps it`
  );
}

/** Which epoch checkpoints the run kept and the space they take (their models, once the run is done). */
function checkpointSpace(result: LearnResult): string {
  const epochs = Object.keys(result.checkpoints).map(Number).sort((a, b) => a - b);
  if (epochs.length === 0) return "(none kept)";
  const bytes = bytesUnder(join(result.jobDir, "checkpoints"));
  return `(epoch${epochs.length > 1 ? "s" : ""} ${epochs.join(", ")}: ${size(bytes)}; checkpoint_keep sets how many)`;
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
  const dropped = droppedLine(result);
  if (dropped) lines.push(dropped);
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
