#!/usr/bin/env node
// Runs one fine-tuning job over many seeds on both sides — xpm-torch (text-ranking-job.mjs) and
// the plain PyTorch + transformers loop (runners/text_ranking_torch.py) — and appends one JSON
// line per run to --out: {side, variant, seed, steps, mrr10, loss, seconds}. Runs already in the
// file are skipped, so an interrupted campaign resumes where it stopped and a later call adds
// seeds. Runs go seed by seed, both sides of a seed together, `--parallel` processes at once
// (each with `--threads` threads), so that a loaded machine slows both sides alike.
//
// Usage: node benchmarks/seeds.mjs --out FILE --data DIR --model DIR [--steps 60] [--seeds 0-19]
//   [--sides xpm-torch,reference] [--variant NAME] [--parallel 2] [--threads 1]
//   [--xpm-args "..."] [--reference-args "..."] [--python PYTHON]
// In the extra arguments, {seed} stands for the run's seed (a model directory per seed).
// PYTHON (default python3) needs torch and transformers; hard-negatives.sh passes setup.sh's.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

function options(argv) {
  const get = (name, fallback) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : fallback;
  };
  const [out, data, model] = [get("out"), get("data"), get("model")];
  if (!out || !data || !model) {
    throw new Error("usage: seeds.mjs --out FILE --data DIR --model DIR [--steps 60] [--seeds 0-19] [--sides xpm-torch,reference] [--variant NAME] [--parallel 2] [--threads 1] [--xpm-args ...] [--reference-args ...]");
  }
  const [first, last] = get("seeds", "0-19").split("-").map(Number);
  return {
    out,
    data,
    model,
    steps: Number(get("steps", 60)),
    seeds: Array.from({ length: (last ?? first) - first + 1 }, (_, i) => first + i),
    sides: get("sides", "xpm-torch,reference").split(","),
    variant: get("variant", "default"),
    parallel: Number(get("parallel", 2)),
    threads: Number(get("threads", 1)),
    xpmArgs: (get("xpm-args", "") ?? "").split(" ").filter(Boolean),
    referenceArgs: (get("reference-args", "") ?? "").split(" ").filter(Boolean),
    python: get("python", "python3"),
  };
}

/** The command of one run. */
function command(job, side, seed) {
  const own = (args) => args.map((a) => a.replaceAll("{seed}", String(seed)));
  const common = ["--data", job.data, "--model", job.model, "--seed", String(seed), "--threads", String(job.threads)];
  if (side === "xpm-torch") {
    return [process.execPath, [join(here, "text-ranking-job.mjs"), ...common, "--epochs", "1", "--steps-per-epoch", String(job.steps), ...own(job.xpmArgs)]];
  }
  return [job.python, [join(here, "runners", "text_ranking_torch.py"), ...common, "--steps", String(job.steps), ...own(job.referenceArgs)]];
}

function run(job, side, seed) {
  const [exe, args] = command(job, side, seed);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(exe, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`${side} seed ${seed} exited ${code}: ${stderr.slice(-2000)}`));
      const line = stdout.trim().split("\n").pop();
      const result = JSON.parse(line);
      const losses = result.losses;
      resolve({
        side,
        variant: job.variant,
        seed,
        steps: job.steps,
        mrr10: result.mrr10[result.mrr10.length - 1],
        // xpm-torch reports the epoch's mean loss; the reference every step's.
        loss: losses.length === 1 ? losses[0] : losses.reduce((a, b) => a + b, 0) / losses.length,
        seconds: (Date.now() - started) / 1000,
      });
    });
  });
}

function done(out) {
  if (!existsSync(out)) return new Set();
  return new Set(
    readFileSync(out, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .map((r) => `${r.side}|${r.variant}|${r.steps}|${r.seed}`),
  );
}

const job = options(process.argv.slice(2));
const finished = done(job.out);
const queue = job.seeds
  .flatMap((seed) => job.sides.map((side) => ({ side, seed })))
  .filter(({ side, seed }) => !finished.has(`${side}|${job.variant}|${job.steps}|${seed}`));
console.error(`${queue.length} run(s) to go (${finished.size} already in ${job.out})`);
const worker = async () => {
  for (let next = queue.shift(); next; next = queue.shift()) {
    const record = await run(job, next.side, next.seed);
    appendFileSync(job.out, JSON.stringify(record) + "\n");
    console.error(`${record.side} seed ${record.seed}: MRR@10 ${record.mrr10.toFixed(3)} (${record.seconds.toFixed(0)} s)`);
  }
};
await Promise.all(Array.from({ length: job.parallel }, worker));
