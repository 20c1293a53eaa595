#!/usr/bin/env node
// A LETOR sweep run by experiment() (each job its own process under LocalLauncher) against the
// same configurations trained one after another by learn() in one process, on one machine in one
// run; and the scheduler's own cost per job (see benchmarks/README.md, "Experiments").
//
//   node benchmarks/experiments.mjs [--jobs 12] [--max-jobs 2] [--epochs 2] [--steps 400]
//        [--seq-threads T,...] [--solo 6] [--repeats 5] [--data DIR] [--keep]
//        [--out benchmarks/results/experiments]
//
// Needs the built package (`npm run build`, or `npx tsc -p tsconfig.json` after TypeScript changes).
import { spawn } from "node:child_process";
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, watch, writeFileSync } from "node:fs";
import { availableParallelism, cpus, loadavg, release, tmpdir, type as osType } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { performance } from "node:perf_hooks";

const here = dirname(fileURLToPath(import.meta.url));
const indexUrl = pathToFileURL(join(here, "..", "dist", "index.js")).href;
const cliPath = join(here, "..", "dist", "cli.js");
const xpm = await import(indexUrl);
const {
  Adam, FabricConfiguration, HingeLoss, Learner, LetorDataset, LocalLauncher, LossTrainer, MlpScorer,
  PairwiseSampler, ParameterOptimizer, Random, RankingValidationListener, SyntheticLtrDataset, experiment, learn,
} = xpm;

const { values: args } = parseArgs({
  options: {
    jobs: { type: "string", default: "12" },
    "max-jobs": { type: "string", default: "2" },
    epochs: { type: "string", default: "2" },
    steps: { type: "string", default: "400" },
    "seq-threads": { type: "string" },
    solo: { type: "string", default: "6" },
    repeats: { type: "string", default: "5" },
    data: { type: "string" },
    out: { type: "string", default: join("benchmarks", "results", "experiments") },
    keep: { type: "boolean", default: false },
  },
});
const JOBS = Number(args.jobs);
const MAX_JOBS = Number(args["max-jobs"]);
const EPOCHS = Number(args.epochs);
const STEPS = Number(args.steps); // per epoch
const SOLO = Math.min(Number(args.solo), JOBS);
const REPEATS = Number(args.repeats);
// What LocalLauncher gives each job by default (OMP_NUM_THREADS): the same formula as local.ts.
const THREADS_PER_JOB = Math.max(1, Math.floor(availableParallelism() / MAX_JOBS));
// The sequential runs: first the same total (max_jobs × threads per job), the fair baseline for
// the wall time; then the job's own count, so that losses must agree to the bit.
const SEQ_THREADS = (args["seq-threads"] ?? [...new Set([THREADS_PER_JOB * MAX_JOBS, THREADS_PER_JOB])].join(",")).split(",").map(Number);

// --- The job: harness.py's "small" shape -------------------------------------------------------
// Data: the core's synthetic generator with harness.py's settings for "small" (side_by_side data:
// signal seed 2026, noise 0.3, 46 features, 20 documents a query, 300 training queries with seed 1,
// 100 held-out with seed 2), generated in each job; the LETOR files harness.py writes are this
// generator's output printed as text. `--data DIR` reads DIR/train.letor and DIR/heldout.letor.
const FEATURES = 46;
const synthetic = (seed, num_queries) => SyntheticLtrDataset.C({ signal_seed: 2026, seed, num_queries, docs_per_query: 20, num_features: FEATURES, noise: 0.3 });
const letor = (name) => LetorDataset.C({ id: `bench/${name}`, path: resolve(args.data, `${name}.letor`), num_features: FEATURES });
const trainData = args.data ? letor("train") : synthetic(1, 300);
const heldoutData = args.data ? letor("heldout") : synthetic(2, 100);

/** The sweep: learning rate × hidden size × seed, in this order (the first `--jobs` of it). */
function sweep(n) {
  const out = [];
  for (let seed = 0; out.length < n; seed += 2) {
    for (const lr of [1e-3, 3e-3, 1e-2]) for (const hidden of [32, 64]) for (const s of [seed, seed + 1]) out.push({ lr, hidden, seed: s });
  }
  return out.slice(0, n);
}

/** The Learner of one configuration; `threads` sets fabric_config.num_threads (Meta: same identifier). */
function learnerOf({ lr, hidden, seed }, threads) {
  return Learner.C({
    random: Random.C({ seed }),
    model: MlpScorer.C({ input_dim: FEATURES, hidden_dims: [hidden] }),
    trainer: LossTrainer.C({
      sampler: PairwiseSampler.C({ dataset: trainData }),
      batch_size: 32,
      num_workers: 0,
      hooks: [HingeLoss.C({ margin: 1.0 })],
    }),
    max_epochs: EPOCHS,
    steps_per_epoch: STEPS,
    checkpoint_interval: EPOCHS,
    optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr }) })],
    listeners: [
      RankingValidationListener.C({ id: "heldout", dataset: heldoutData, metrics: { pairwise_accuracy: false }, validation_interval: EPOCHS }),
    ],
    fabric_config: FabricConfiguration.C({ accelerator: "cpu", ...(threads ? { num_threads: threads } : {}) }),
  });
}

// --- Clocks and markers ----------------------------------------------------------------------
/** Milliseconds since the epoch, sub-millisecond (the job processes' own records are in ms). */
const now = () => performance.timeOrigin + performance.now();
const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** What a job ended with, the same in every mode. */
function outcomeOf(config, identifier, result) {
  const last = result.epochs.at(-1);
  return {
    ...config,
    identifier,
    loss: last.loss,
    heldout_pairwise_accuracy: last.metrics["heldout/pairwise_accuracy"],
    steps_per_second: mean(result.epochs.map((e) => e.stepsPerSecond)),
  };
}
const loadAverage = () => loadavg().map((x) => Number(x.toFixed(2)));
const PROGRESS_LINE = /step \d+\/\d+/;

/**
 * The first step of a job: when its first progress line (`xpm-torch: epoch 1/E step 1/S ...`,
 * printed by the non-TTY display at the core's first step report) lands in the stderr file `file`
 * of `dir`, seen through inotify (fs.watch). The same marker for the scheduler's jobs and the
 * jobs spawned by hand.
 */
function firstStepWatcher(dir, file) {
  let at;
  const path = join(dir, file);
  const check = () => {
    if (at !== undefined) return;
    try {
      if (PROGRESS_LINE.test(readFileSync(path, "utf8"))) {
        at = now();
        watcher.close();
      }
    } catch {
      // not there yet
    }
  };
  const watcher = watch(dir, (_event, name) => name === file && check());
  return { get at() { return at; }, close: () => watcher.close() };
}

/** The state events of a job directory (its own process's and the scheduler's), in time order. */
function jobEvents(jobDir) {
  const dir = join(jobDir, ".experimaestro", "events");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".jsonl"))
    .flatMap((f) => readFileSync(join(dir, f), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)))
    .map((e) => ({ state: e.state, t: e.timestamp * 1000 }))
    .sort((a, b) => a.t - b.t);
}

/**
 * The job process's own records: `running` once it loaded the CLI's modules, read params.json and
 * took the lock, before the addon and libtorch load (the last `running`: the scheduler writes one
 * at spawn), `done` once the result is stored (the first `done`: the scheduler writes one when it
 * sees the exit). learn() in this process writes the same two.
 */
function ownMarks(jobDir) {
  const events = jobEvents(jobDir);
  const running = events.filter((e) => e.state === "running").at(-1)?.t;
  const dones = events.filter((e) => e.state === "done");
  return { running, done: dones[0]?.t, schedulerDone: dones.length > 1 ? dones.at(-1).t : undefined };
}

const onlyJobDir = (workspace) => {
  const root = join(workspace, "jobs");
  const dirs = readdirSync(root).flatMap((t) => readdirSync(join(root, t)).map((id) => join(root, t, id)));
  if (dirs.length !== 1) throw new Error(`expected one job in ${workspace}, found ${dirs.length}`);
  return dirs[0];
};

/** Spawns a command, its stdout and stderr into files of `dir`; resolves with the spawn and exit times. */
function spawnTimed(argv, env, dir, name) {
  const out = openSync(join(dir, `${name}.out`), "w");
  const err = openSync(join(dir, `${name}.err`), "w");
  const watcher = firstStepWatcher(dir, `${name}.err`);
  const spawned = now();
  const child = spawn(argv[0], argv.slice(1), { stdio: ["ignore", out, err], env });
  closeSync(out);
  closeSync(err);
  return new Promise((resolveExit, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      const exited = now();
      watcher.close();
      if (code !== 0) reject(new Error(`${argv.join(" ")} ended with ${signal ?? code}:\n${readFileSync(join(dir, `${name}.err`), "utf8")}`));
      else resolveExit({ spawned, exited, firstStep: watcher.at });
    });
  });
}

/**
 * A module every job process imports (`imports` of the experiment, `--import` of the processes
 * spawned by hand, as the scheduler passes it): it prints the process's start (Node's
 * performance.timeOrigin) to the job's stderr, so that the plan's time until the process exists is
 * told from the process's own start. Importing it costs about a millisecond.
 */
const ORIGIN_LINE = /^xpm-bench-origin (\d+(?:\.\d+)?)$/m;
function originModule(dir) {
  const file = join(dir, "origin.mjs");
  writeFileSync(file, 'process.stderr.write(`xpm-bench-origin ${performance.timeOrigin}\\n`);\n');
  return file;
}
const processStart = (errFile) => Number(ORIGIN_LINE.exec(readFileSync(errFile, "utf8"))?.[1]);

const fresh = (label) => mkdtempSync(join(tmpdir(), `xpm-torch-xp-bench-${label}-`));
const scratch = [];
const freshDir = (label) => {
  const dir = fresh(label);
  scratch.push(dir);
  return dir;
};

// --- 1. Sequential: learn() in this process ------------------------------------------------------
async function sequential(configs, threads) {
  const workspace = freshDir(`seq${threads}`);
  const jobs = [];
  const start = now();
  for (const config of configs) {
    let firstStep;
    const called = now();
    const result = await learn(learnerOf(config, threads), { workspace, quiet: true, handleSignals: false, onProgress: () => (firstStep ??= now()) });
    const returned = now();
    const marks = ownMarks(result.jobDir);
    jobs.push({
      ...outcomeOf(config, result.identifier, result),
      seconds: (returned - called) / 1000,
      ms: { call_to_running: marks.running - called, running_to_first_step: firstStep - marks.running, first_step_to_done: marks.done - firstStep, done_to_return: returned - marks.done },
    });
  }
  return { mode: `learn() in one process, ${threads} thread${threads > 1 ? "s" : ""}`, threads, wall_seconds: (now() - start) / 1000, workspace, jobs };
}

// --- 2. The experiment ---------------------------------------------------------------------------
async function scheduled(configs, origin) {
  const workspace = freshDir("xp");
  const logged = new Map(); // identifier prefix -> state -> time (the first time it was logged)
  const submitted = [];
  const start = now();
  const summary = await experiment(
    "letor-sweep",
    (xp) => {
      for (const config of configs) {
        const learner = learnerOf(config);
        const at = now();
        const handle = xp.submit(learner, { tags: { lr: config.lr, hidden: config.hidden, seed: config.seed } });
        const submitMs = now() - at;
        // The job directory exists from submit on; learner.err appears at spawn.
        submitted.push({ config, handle, at, submitMs, watcher: firstStepWatcher(handle.jobDir, "learner.err") });
      }
    },
    {
      workspace,
      launcher: LocalLauncher.C({ max_jobs: MAX_JOBS }),
      imports: [origin],
      log: (line) => {
        const t = now();
        const m = /^xpm-torch \S+: ([0-9a-f]{12}) (?:\[[^\]]*\] )?(waiting|ready|scheduled|running|done|error|dependency failed)/.exec(line);
        if (!m) return;
        const states = logged.get(m[1]) ?? new Map();
        if (!states.has(m[2])) states.set(m[2], t);
        logged.set(m[1], states);
      },
    },
  );
  const end = now();
  const doneTimes = [...logged.values()].map((s) => s.get("done")).filter(Number.isFinite).sort((a, b) => a - b);
  const jobs = [];
  const firstStart = Math.min(...submitted.map((x) => processStart(join(x.handle.jobDir, "learner.err"))));
  for (const { config, handle, at, submitMs, watcher } of submitted) {
    watcher.close();
    const result = await handle.result();
    const states = logged.get(handle.identifier.slice(0, 12));
    const started = processStart(join(handle.jobDir, "learner.err"));
    // The plan logs `scheduled` once its spawn call returned and it went on: later than the spawn
    // when other work was queued (the first jobs: the scheduler taking the other jobs in).
    const logged_ = states.get("scheduled");
    // When the job could have started: its submission, or the end of the job whose place it took
    // (the last `done` the scheduler logged before its process started).
    const freed = doneTimes.filter((t) => t <= started).at(-1);
    const eligible = Math.max(at, freed ?? at);
    const marks = ownMarks(handle.jobDir);
    const schedulerDone = states.get("done");
    jobs.push({
      ...outcomeOf(config, handle.identifier, result),
      queued: freed !== undefined && freed > at,
      seconds: (schedulerDone - started) / 1000,
      ms: {
        submit_call: submitMs,
        eligible_to_process_start: started - eligible,
        process_start_to_scheduled_logged: logged_ - started,
        process_start_to_running: marks.running - started,
        running_to_first_step: watcher.at - marks.running,
        process_start_to_first_step: watcher.at - started,
        eligible_to_first_step: watcher.at - eligible,
        submit_to_first_step: watcher.at - at,
        first_step_to_done: marks.done - watcher.at,
        done_to_scheduler_done: schedulerDone - marks.done,
      },
    });
  }
  return {
    mode: `experiment(), LocalLauncher max_jobs ${MAX_JOBS}, ${THREADS_PER_JOB} thread${THREADS_PER_JOB > 1 ? "s" : ""} a job`,
    threads: THREADS_PER_JOB * MAX_JOBS,
    wall_seconds: (end - start) / 1000,
    // From the plan's first submit to the first job's process start: the plan's submits, then the scheduler taking the jobs in.
    first_submit_to_first_process_ms: firstStart - submitted[0].at,
    states: summary.jobs.map((j) => j.state),
    workspace,
    jobs,
  };
}

// --- 3. Each job's process alone, spawned by hand as the scheduler spawns it ----------------------
async function solo(xpJobs, origin) {
  const env = { ...process.env, OMP_NUM_THREADS: String(THREADS_PER_JOB) };
  const runs = [];
  for (const job of xpJobs.slice(0, SOLO)) {
    const workspace = freshDir("solo");
    const params = join(workspace, "params.json");
    copyFileSync(join(job.jobDir, "params.json"), params);
    const t = await spawnTimed([process.execPath, cliPath, "learn", params, "--workspace", workspace, "--import", origin], env, workspace, "solo");
    const started = processStart(join(workspace, "solo.err"));
    const jobDir = onlyJobDir(workspace);
    const marks = ownMarks(jobDir);
    const stored = JSON.parse(readFileSync(join(jobDir, ".experimaestro", "result.json"), "utf8"));
    runs.push({
      identifier: job.identifier,
      same_identifier: jobDir.endsWith(job.identifier),
      loss: stored.epochs.at(-1).loss,
      seconds: (t.exited - t.spawned) / 1000,
      ms: {
        spawned_to_process_start: started - t.spawned,
        process_start_to_running: marks.running - started,
        running_to_first_step: t.firstStep - marks.running,
        process_start_to_first_step: t.firstStep - started,
        spawned_to_first_step: t.firstStep - t.spawned,
        first_step_to_done: marks.done - t.firstStep,
        done_to_exit: t.exited - marks.done,
      },
    });
  }
  return runs;
}

/**
 * What starting a job's process is made of, timed inside a probe process that does what the job
 * process does before its first step, in that order: Node starts, the CLI's modules load (the
 * configuration classes, params.json reading, learn()), then the addon and libtorch (loadNative,
 * which the job does lazily, in its first train() call: after its `running` record). Node's
 * performance.timeOrigin marks the process's start.
 */
async function processParts() {
  const env = { ...process.env, OMP_NUM_THREADS: String(THREADS_PER_JOB) };
  const dir = freshDir("parts");
  const dist = (file) => pathToFileURL(join(here, "..", "dist", file)).href;
  const probe = [
    "const t0 = performance.now();",
    `for (const m of ${JSON.stringify(["cli/main.js", "cli/load-config.js", "learn.js"].map(dist))}) await import(m);`,
    "const t1 = performance.now();",
    `(await import(${JSON.stringify(dist("native.js"))})).loadNative();`,
    "const t2 = performance.now();",
    "console.log(JSON.stringify({ origin: performance.timeOrigin, t0, t1, t2 }));",
  ].join("\n");
  const bare = [];
  const probes = [];
  for (let i = 0; i < REPEATS; i++) {
    const t = await spawnTimed([process.execPath, "-e", "0"], env, dir, "bare");
    bare.push(t.exited - t.spawned);
    const p = await spawnTimed([process.execPath, "--input-type=module", "-e", probe], env, dir, "probe");
    const r = JSON.parse(readFileSync(join(dir, "probe.out"), "utf8"));
    probes.push({
      to_time_origin: r.origin - p.spawned,
      node_bootstrap: r.t0,
      cli_modules: r.t1 - r.t0,
      addon_and_libtorch: r.t2 - r.t1,
      exit: p.exited - (r.origin + r.t2),
      total: p.exited - p.spawned,
    });
  }
  const medians = Object.fromEntries(Object.keys(probes[0]).map((k) => [k, median(probes.map((p) => p[k]))]));
  return { node_bare_ms: bare, probe_ms: probes, probe_median_ms: medians };
}

// --- Run ----------------------------------------------------------------------------------------
const configs = sweep(JOBS);
const fmt = (x, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : "–");
const log = (line) => console.error(`[experiments] ${line}`);

const loadBefore = loadAverage();
log(`load average before: ${loadBefore.join(" ")}; ${JOBS} jobs of ${EPOCHS}×${STEPS} steps; max_jobs ${MAX_JOBS}, ${THREADS_PER_JOB} thread(s) a job; sequential with ${SEQ_THREADS.join(", ")} thread(s)`);
// Warm the page cache (addon, libtorch) so that no mode pays the first cold load.
await spawnTimed([process.execPath, "--input-type=module", "-e", `await import(${JSON.stringify(indexUrl)})`], process.env, freshDir("warm"), "warm");

const modes = [];
log("sequential, first setting");
modes.push(await sequential(configs, SEQ_THREADS[0]));
log("experiment");
const origin = originModule(freshDir("origin"));
const xpMode = await scheduled(configs, origin);
modes.push(xpMode);
for (const threads of SEQ_THREADS.slice(1)) {
  log(`sequential, ${threads} thread(s)`);
  modes.push(await sequential(configs, threads));
}
const xpJobsWithDirs = xpMode.jobs.map((j) => ({ ...j, jobDir: join(xpMode.workspace, "jobs", "xpm_torch.learner.learner", j.identifier) }));
log(`${SOLO} job process(es) alone`);
const soloRuns = await solo(xpJobsWithDirs, origin);
log("Node and package start");
const parts = await processParts();
const loadAfter = loadAverage();
log(`load average after: ${loadAfter.join(" ")}`);

// --- Summaries ----------------------------------------------------------------------------------
const baseline = modes[0];
const seqModes = modes.filter((m) => m !== xpMode);
const byId = (mode) => new Map(mode.jobs.map((j) => [j.identifier, j]));
const relDiff = (a, b) => Math.abs(a - b) / Math.max(Math.abs(a), Math.abs(b), Number.MIN_VALUE);
const agreement = seqModes.map((m) => {
  const other = byId(m);
  const diffs = xpMode.jobs.map((j) => {
    const o = other.get(j.identifier);
    if (!o) throw new Error(`the job ${j.identifier} is missing from ${m.mode}: the modes trained different configurations`);
    return { loss: relDiff(j.loss, o.loss), acc: relDiff(j.heldout_pairwise_accuracy, o.heldout_pairwise_accuracy), equal: j.loss === o.loss };
  });
  return { against: m.mode, threads: m.threads, max_rel_diff_loss: Math.max(...diffs.map((d) => d.loss)), max_rel_diff_accuracy: Math.max(...diffs.map((d) => d.acc)), bit_equal_losses: diffs.filter((d) => d.equal).length, jobs: diffs.length };
});
const soloAgreement = { max_rel_diff_loss: Math.max(...soloRuns.map((s) => relDiff(s.loss, byId(xpMode).get(s.identifier).loss))), same_identifier: soloRuns.every((s) => s.same_identifier) };

const med = (rows, key) => median(rows.map((r) => r.ms[key]));
const queued = xpMode.jobs.filter((j) => j.queued);
const soloStartup = med(soloRuns, "spawned_to_first_step");
const overhead = {
  // The brief's figure: from the moment a job could start to its first step, less the same
  // process's startup when spawned alone.
  start_overhead_ms_median: med(xpMode.jobs, "eligible_to_first_step") - soloStartup,
  start_overhead_ms_median_queued: queued.length ? med(queued, "eligible_to_first_step") - soloStartup : NaN,
  in_plan_ms_median: med(xpMode.jobs, "eligible_to_process_start"),
  in_plan_ms_median_queued: queued.length ? med(queued, "eligible_to_process_start") : NaN,
  spawn_alone_ms_median: med(soloRuns, "spawned_to_process_start"),
  startup_under_experiment_ms_median: med(xpMode.jobs, "process_start_to_first_step"),
  startup_alone_ms_median: med(soloRuns, "process_start_to_first_step"),
  end_ms_median: med(xpMode.jobs, "done_to_scheduler_done"),
  end_alone_ms_median: med(soloRuns, "done_to_exit"),
};
const stages = [
  ["could start (submit, or the end of the job it waited for) → the process starts: the plan's own work, the fork (alone: spawn call → start)", med(xpMode.jobs, "eligible_to_process_start"), med(soloRuns, "spawned_to_process_start"), NaN],
  ["process start → the job's own `running` record (Node, the CLI's modules, params.json, lock)", med(xpMode.jobs, "process_start_to_running"), med(soloRuns, "process_start_to_running"), NaN],
  ["`running` → first step (in a new process: the addon and libtorch; then data, model, first step)", med(xpMode.jobs, "running_to_first_step"), med(soloRuns, "running_to_first_step"), median(baseline.jobs.map((j) => j.ms.running_to_first_step))],
  ["first step → result stored (training, validation, checkpoint)", med(xpMode.jobs, "first_step_to_done"), med(soloRuns, "first_step_to_done"), median(baseline.jobs.map((j) => j.ms.first_step_to_done))],
  ["result stored → exit (alone) / → the scheduler's `done`", med(xpMode.jobs, "done_to_scheduler_done"), med(soloRuns, "done_to_exit"), median(baseline.jobs.map((j) => j.ms.done_to_return))],
];

const modeRows = modes.map((m) => ({
  mode: m.mode,
  threads: m.threads,
  wall_seconds: m.wall_seconds,
  ratio: m.wall_seconds / baseline.wall_seconds,
  mean_job_seconds: mean(m.jobs.map((j) => j.seconds)),
  wall_per_job_seconds: m.wall_seconds / m.jobs.length,
  steps_per_second: median(m.jobs.map((j) => j.steps_per_second)),
}));

const md = [];
md.push(`${JOBS} jobs (learning rate 1e-3/3e-3/1e-2 × hidden 32/64 × seed), each MLP 46→h→1, 32 pairs a batch, hinge loss, Adam, ${EPOCHS} epochs × ${STEPS} steps, held-out validation at the end; data: ${args.data ? `LETOR files of ${args.data}` : "the core's synthetic generator with harness.py's small settings"}.`);
md.push(`Load average before ${loadBefore.join(" ")}, after ${loadAfter.join(" ")} (${availableParallelism()} CPUs).`);
md.push("");
md.push("| mode | threads in all | wall s | ratio | mean s per job | wall s / jobs | steps/s (median) |");
md.push("|---|---|---|---|---|---|---|");
for (const r of modeRows) md.push(`| ${r.mode} | ${r.threads} | ${fmt(r.wall_seconds, 2)} | ${fmt(r.ratio, 2)}× | ${fmt(r.mean_job_seconds, 2)} | ${fmt(r.wall_per_job_seconds, 2)} | ${fmt(r.steps_per_second)} |`);
md.push("");
md.push("Mean s per job: the learn() call; for the experiment, the job's process from its start to the scheduler's `done` (its exit seen).");
md.push("");
md.push("| per job (medians, ms) | experiment | process alone | learn() in process |");
md.push("|---|---|---|---|");
for (const [label, a, b, c] of stages) md.push(`| ${label} | ${fmt(a)} | ${fmt(b)} | ${fmt(c)} |`);
md.push("");
md.push(`Scheduler overhead per job (median of could-start → first step, less the process alone's spawn call → first step of ${fmt(soloStartup)} ms): **${fmt(overhead.start_overhead_ms_median)} ms** over all ${xpMode.jobs.length} jobs, ${fmt(overhead.start_overhead_ms_median_queued)} ms over the ${queued.length} that waited for a place. Of it, until the process starts: ${fmt(overhead.in_plan_ms_median)} ms (${fmt(overhead.in_plan_ms_median_queued)} ms for those that waited; alone, spawn call → start: ${fmt(overhead.spawn_alone_ms_median)} ms); the rest is the same process starting slower (start → first step ${fmt(overhead.startup_under_experiment_ms_median)} ms against ${fmt(overhead.startup_alone_ms_median)} ms alone) beside a job that trains. At the end: result stored → the scheduler's \`done\` ${fmt(overhead.end_ms_median)} ms (alone: → exit ${fmt(overhead.end_alone_ms_median)} ms).`);
md.push(`\`xp.submit()\`: ${fmt(med(xpMode.jobs, "submit_call"), 1)} ms a job (median); from the first submit to the first job's process start: ${fmt(xpMode.first_submit_to_first_process_ms)} ms for ${xpMode.jobs.length} jobs.`);
const pm = parts.probe_median_ms;
md.push(`A job process's start, in a probe doing the same (medians of ${REPEATS}, ms): spawn → Node's time origin ${fmt(pm.to_time_origin)}, Node's bootstrap ${fmt(pm.node_bootstrap)}, the CLI's JavaScript modules ${fmt(pm.cli_modules)}, the addon and libtorch (loadNative) ${fmt(pm.addon_and_libtorch)}, exit ${fmt(pm.exit)}; \`node -e 0\` spawn → exit ${fmt(median(parts.node_bare_ms))}.`);
md.push("");
md.push("| final losses: experiment against | jobs bit-equal | max relative difference, loss | max relative difference, held-out accuracy |");
md.push("|---|---|---|---|");
for (const a of agreement) md.push(`| ${a.against} | ${a.bit_equal_losses}/${a.jobs} | ${a.max_rel_diff_loss.toExponential(2)} | ${a.max_rel_diff_accuracy.toExponential(2)} |`);
md.push(`| the job's process alone (${soloRuns.length} jobs) | – | ${soloAgreement.max_rel_diff_loss.toExponential(2)} | – |`);
const markdown = md.join("\n");

const report = {
  date: new Date().toISOString(),
  machine: { cpu: cpus()[0]?.model, cpus: availableParallelism(), system: `${osType()} ${release()}`, node: process.version },
  load_average: { before: loadBefore, after: loadAfter },
  settings: { jobs: JOBS, max_jobs: MAX_JOBS, threads_per_job: THREADS_PER_JOB, sequential_threads: SEQ_THREADS, epochs: EPOCHS, steps_per_epoch: STEPS, solo: SOLO, repeats: REPEATS, data: args.data ? "letor files" : "synthetic (harness.py small settings)" },
  modes: modeRows,
  overhead,
  stages: stages.map(([stage, experiment_ms, alone_ms, in_process_ms]) => ({ stage, experiment_ms, alone_ms, in_process_ms })),
  process_parts: parts,
  agreement,
  solo_agreement: soloAgreement,
  runs: { modes: modes.map(({ workspace, ...m }) => m), solo: soloRuns },
};
mkdirSync(dirname(resolve(args.out)), { recursive: true });
writeFileSync(`${args.out}.json`, `${JSON.stringify(report, null, 2)}\n`);
writeFileSync(`${args.out}.md`, `${markdown}\n`);
console.log(markdown);
if (!args.keep) for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
else log(`kept: ${scratch.join(" ")}`);
