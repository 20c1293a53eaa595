// Steps per second of data-parallel training through learn() on this machine: 1 process ×
// batch 2B against 2 processes × batch B (strategy ddp, Gloo on the CPU), the same total batch.
// Run after `npm run build`: node benchmarks/ddp-steps.mjs [B] [steps]
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const child = join(root, "test", "helpers", "ddp-child.mjs");
const [batch = 256, steps = 300] = process.argv.slice(2).map(Number);

function run(ranks, perRank) {
  const ws = mkdtempSync(join(tmpdir(), "xpm-ddp-bench-"));
  const started = process.hrtime.bigint();
  const out = spawnSync(process.execPath, [child, ws, String(ranks), String(perRank), "1", String(steps)], { cwd: root, encoding: "utf8" });
  const wall = Number(process.hrtime.bigint() - started) / 1e9;
  if (out.status !== 0) throw new Error(out.stderr);
  const result = JSON.parse(out.stdout);
  return { ranks, perRank, loopStepsPerSecond: result.epochs[0].stepsPerSecond, wall };
}

const rows = [run(1, 2 * batch), run(2, batch)];
console.log("| processes | batch per process | steps/s (loop) | wall incl. start (s) |");
console.log("|---|---|---|---|");
for (const r of rows) console.log(`| ${r.ranks} | ${r.perRank} | ${r.loopStepsPerSecond.toFixed(1)} | ${r.wall.toFixed(1)} |`);
