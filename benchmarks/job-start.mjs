#!/usr/bin/env node
// What a job process costs before it trains: `xpm-torch learn <job>/params.json --workspace WS`,
// the command every job of an experiment runs in a process of its own (see benchmarks/README.md,
// "Job start").
//
//   node benchmarks/job-start.mjs [--runs 10] [--label NAME] [--out benchmarks/results/job-start.jsonl]
//
// Needs the built package (`npm run build`, or `npx tsc -p tsconfig.json` after TypeScript changes).
// Prints a table and appends one JSON line to --out. Node built-ins only.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { constants, cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, "..", "dist");
const cli = join(dist, "cli.js");
const distUrl = (file) => pathToFileURL(join(dist, file)).href;

// --- The phases, in a process of their own ------------------------------------------------------
// `job-start.mjs --phases PARAMS WS` does what `learn` does, one part after another, and prints
// how long each took: the breakdown of the job's start.
if (process.argv[2] === "--phases") {
  const [params, workspace] = process.argv.slice(3);
  const marks = { "Node.js start": performance.now() };
  let last = marks["Node.js start"];
  const mark = (name) => {
    const now = performance.now();
    marks[name] = now - last;
    last = now;
  };
  await import("zod");
  mark("zod");
  await import(distUrl("cli/main.js"));
  mark("CLI modules (what cli.js imports)");
  const { loadLearnerConfig } = await import(distUrl("cli/load-config.js"));
  mark("configuration modules");
  const { learn } = await import(distUrl("learn.js"));
  mark("training modules (learn.js)");
  const config = await loadLearnerConfig(params);
  mark("read params.json");
  const { locateLibtorch } = await import(distUrl("libtorch/locate.js"));
  const { found } = locateLibtorch();
  mark("locate libtorch");
  // native.ts's preload, one library at a time (same list, same flags); a CUDA library whose own
  // dependencies are missing fails, as there.
  const flags = constants.dlopen.RTLD_NOW | constants.dlopen.RTLD_GLOBAL | 0x1000; // RTLD_NODELETE
  for (const name of ["libc10.so", "libtorch_cpu.so", "libc10_cuda.so", "libtorch_cuda.so", "libtorch.so"]) {
    if (!existsSync(join(found.lib, name))) continue;
    try {
      process.dlopen({ exports: {} }, join(found.lib, name), flags);
    } catch {
      // Not an addon ("did not self-register"), or a CUDA library that cannot load here.
    }
    mark(`load ${name}`);
  }
  const { loadNative } = await import(distUrl("native.js"));
  loadNative();
  mark("load the addon");
  let firstStep;
  await learn(config, { workspace, quiet: true, onProgress: () => (firstStep ??= performance.now()) });
  marks["learn() until the first step"] = firstStep - last;
  marks["the rest of learn()"] = performance.now() - firstStep;
  process.stdout.write(JSON.stringify(marks));
  process.exit(0);
}

const { values: args } = parseArgs({
  options: {
    runs: { type: "string", default: "10" },
    label: { type: "string", default: "" },
    out: { type: "string", default: join("benchmarks", "results", "job-start.jsonl") },
  },
});
const RUNS = Number(args.runs);

if (!existsSync(cli)) {
  console.error("no dist/cli.js: run `npm run build` first");
  process.exit(1);
}

/** The job: a 16→32→1 MLP, pairwise hinge loss, Adam, 1 epoch of 1 step, no listener. */
async function writeJob(dir) {
  const { Adam, HingeLoss, Learner, LossTrainer, MlpScorer, PairwiseSampler, ParameterOptimizer, Random, SyntheticLtrDataset, writeParamsJson } =
    await import(distUrl("index.js"));
  const learner = Learner.C({
    random: Random.C({ seed: 0 }),
    model: MlpScorer.C({ input_dim: 16, hidden_dims: [32] }),
    trainer: LossTrainer.C({
      sampler: PairwiseSampler.C({ dataset: SyntheticLtrDataset.C({ signal_seed: 1, seed: 1, num_queries: 20, docs_per_query: 10, num_features: 16 }) }),
      batch_size: 32,
      hooks: [HingeLoss.C({ margin: 1 })],
    }),
    max_epochs: 1,
    steps_per_epoch: 1,
    optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 1e-3 }) })],
    listeners: [],
  });
  const params = join(dir, "params.json");
  writeFileSync(params, writeParamsJson(learner, { workspace: join(dir, "ws"), jobDir: join(dir, "job") }));
  return params;
}

/**
 * Runs `node ...argv` to its end: the wall time from spawning it and, from spawning it too, when
 * its standard error first matched `marker` and when it last wrote to its standard output.
 */
function timed(argv, marker, env = process.env) {
  return new Promise((done, fail) => {
    const started = performance.now();
    const child = spawn(process.execPath, argv, { stdio: ["ignore", "pipe", "pipe"], env });
    let stdout = "";
    let stderr = "";
    let markedAt;
    let lastOutput;
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      lastOutput = performance.now() - started;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
      if (marker && markedAt === undefined && marker.test(stderr)) markedAt = performance.now() - started;
    });
    child.on("error", fail);
    child.on("close", (code) => {
      const wall = performance.now() - started;
      if (code !== 0) fail(new Error(`node ${argv.join(" ")} exited ${code}:\n${stderr}`));
      else done({ wall, markedAt, lastOutput, stdout, stderr });
    });
  });
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const round = (x) => Math.round(x * 10) / 10;
const stats = (xs) => ({ median: round(median(xs)), min: round(Math.min(...xs)) });

/** The modules `node ARGV` loads, through the tests' loader hook that logs each one. */
async function modulesLoaded(dir, argv) {
  const log = join(dir, "modules.log");
  const hook = pathToFileURL(join(here, "..", "test", "helpers", "module-log.mjs")).href;
  await timed(["--import", hook, ...argv], undefined, { ...process.env, XPM_MODULE_LOG: log });
  const urls = [...new Set(readFileSync(log, "utf8").trim().split("\n"))];
  const ours = urls.filter((u) => u.startsWith(pathToFileURL(dist).href));
  return { all: urls.length, package: ours.length, zod: urls.filter((u) => u.includes("/node_modules/zod/")).length };
}

const dir = mkdtempSync(join(tmpdir(), "xpm-job-start-"));
try {
  const params = await writeJob(dir);
  const ws = (name) => join(dir, name);
  const rows = { "node -e 0 (Node.js alone)": [], "xpm-torch --help": [], "learn: to the first step": [], "learn: whole process": [], "learn: from its last line to its exit": [] };
  const phases = [];
  // One untimed round first: the page cache then holds libtorch, as it does for every job but the first.
  const rounds = RUNS + 1;
  for (let i = 0; i < rounds; i++) {
    const node = await timed(["-e", "0"]);
    const help = await timed([cli, "--help"]);
    const job = await timed([cli, "learn", params, "--workspace", ws(`ws-${i}`)], /xpm-torch: epoch \d+\/\d+ step/);
    if (!job.stdout.includes("trained 1 epochs, 1 steps")) throw new Error(`the job did not train:\n${job.stdout}\n${job.stderr}`);
    const parts = await timed([fileURLToPath(import.meta.url), "--phases", params, ws(`phases-${i}`)]);
    if (i === 0) continue;
    rows["node -e 0 (Node.js alone)"].push(node.wall);
    rows["xpm-torch --help"].push(help.wall);
    rows["learn: to the first step"].push(job.markedAt);
    rows["learn: whole process"].push(job.wall);
    rows["learn: from its last line to its exit"].push(job.wall - job.lastOutput);
    phases.push(JSON.parse(parts.stdout));
  }
  const modules = await modulesLoaded(dir, [cli, "learn", params, "--workspace", ws("ws-modules"), "--quiet"]);

  const summary = Object.fromEntries(Object.entries(rows).map(([name, xs]) => [name, stats(xs)]));
  const breakdown = Object.fromEntries(Object.keys(phases[0]).map((name) => [name, stats(phases.map((p) => p[name]))]));
  const ms = (x) => x.toFixed(0).padStart(6);
  const width = Math.max(...[...Object.keys(summary), ...Object.keys(breakdown)].map((k) => k.length));
  console.log(`${"".padEnd(width)}  median     min   (ms, ${RUNS} runs)`);
  for (const [name, s] of Object.entries(summary)) console.log(`${name.padEnd(width)}  ${ms(s.median)}  ${ms(s.min)}`);
  console.log(`\nwhere a job's start goes (learn's parts, one after another in one process):`);
  for (const [name, s] of Object.entries(breakdown)) console.log(`${name.padEnd(width)}  ${ms(s.median)}  ${ms(s.min)}`);
  console.log(`\nES modules the learn process loads: ${modules.all} (${modules.package} of xpm-torch, ${modules.zod} of zod)`);

  mkdirSync(dirname(resolve(args.out)), { recursive: true });
  const record = {
    benchmark: "job-start",
    label: args.label,
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model,
    cpus: cpus().length,
    loadavg: loadavg(),
    OMP_NUM_THREADS: process.env.OMP_NUM_THREADS ?? null,
    runs: RUNS,
    ms: summary,
    breakdown,
    modules,
  };
  appendFileSync(args.out, `${JSON.stringify(record)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
