// The cost of the TypeScript <-> Rust boundary, measured through learn():
//   sampler   records/s of a pairwise sampler written in TypeScript (a tiny model, so the
//             records' crossing dominates), and the crossing's own cost per batch: the
//             difference to the same job with the core's built-in sampler;
//   hook      the per-step cost of a no-op TypeScript step hook (the same job with and without);
//   letor     steps/s of the LETOR MLP job (46 -> 64 -> 1, batches of 32 pairs, hinge, Adam).
//   dims      the per-step cost of a BatchDimsProvider written in TypeScript under a
//             PredictiveBatcher with the AdaptivePacker (the LETOR job, formula a*bs*l + c), as
//             the difference to the same job with the built-in provider (which gives the same l).
// Steps/s come from the epoch reports (the training loop only). Prints one JSON object with the
// load average before and after, since the numbers mean little on a busy machine; run the
// script of the old and the new build back to back.
//
//   node benchmarks/bridge.mjs [--repeats 3] [--only sampler,hook,letor,dims] [--workers 0]
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import {
  Adam,
  AdaptivePacker,
  BatchDimsProvider,
  HingeLoss,
  Learner,
  LossTrainer,
  MlpScorer,
  PairwiseSampler,
  ParameterOptimizer,
  PredictiveBatcher,
  ProbePoint,
  Random,
  SyntheticLtrDataset,
  defineBatchDimsProvider,
  defineHook,
  defineSampler,
  learn,
  sealedSet,
} from "../dist/index.js";

const { values: args } = parseArgs({
  options: {
    repeats: { type: "string", default: "3" },
    only: { type: "string", default: "sampler,hook,letor,dims" },
    // 0: batches made on the training thread, so the crossing's whole cost shows; the default of
    // LossTrainer (2) prepares them ahead on the producer thread, overlapping training.
    workers: { type: "string", default: "0" },
  },
});
const repeats = Number(args.repeats);
const only = new Set(args.only.split(","));

const SAMPLER_FEATURES = 46;
const POOL = 1024;
/** A fixed pool of records handed out in turn: the generator costs next to nothing. */
const pool = Array.from({ length: POOL }, (_, i) => {
  const positive = new Float32Array(SAMPLER_FEATURES).map((_, j) => Math.sin(i * 31 + j));
  const negative = new Float32Array(SAMPLER_FEATURES).map((_, j) => Math.cos(i * 17 + j));
  return { positive, negative };
});

const PoolSampler = defineSampler(
  "bench.PoolPairs",
  {},
  {
    kind: "pairwise",
    *records() {
      yield* pool;
    },
  },
);

let hookCalls = 0;
const NoOpHook = defineHook(
  "bench.NoOpStepHook",
  {},
  {
    kind: "step",
    before() {
      hookCalls += 1;
    },
    after() {},
  },
);

let dimsCalls = 0;
// The feature count as `l`, as the built-in provider gives it for feature records. It answers
// both the per-batch API (recordDims) and the per-group one it replaced (computeBatchDims), so
// that the builds before and after the change run this same script.
const FeatureDims = defineBatchDimsProvider(
  "bench.FeatureDims",
  {},
  {
    kind: "pairwise",
    recordDims(_self, records) {
      dimsCalls += 1;
      return records.map((r) => ({ l: r.positive.length }));
    },
    computeBatchDims(_self, records) {
      dimsCalls += 1;
      return { bs: records.length, l: Math.max(...records.map((r) => r.positive.length)) };
    },
    buildProbeBatch(_self, dims) {
      const features = new Float32Array(dims.l).fill(0.5);
      return Array.from({ length: dims.bs }, () => ({ positive: features, negative: features }));
    },
  },
);

function adaptiveBatcher(provider) {
  const probe_dims = sealedSet(...[8, 16, 32].map((bs) => ProbePoint.C({ values: { bs, l: 46 } })));
  return PredictiveBatcher.C({
    formula: "a*bs*l + c",
    coefficient_names: ["a", "c"],
    variable_names: ["bs", "l"],
    dims_provider: provider.C({ probe_dims }),
    packer: AdaptivePacker.C({ sort_by: "l" }),
  });
}

function learner({ sampler, features, hidden, batch, steps, hooks = [], batcher }) {
  const epochs = 2;
  return Learner.C({
    random: Random.C({ seed: 1 }),
    model: MlpScorer.C({ input_dim: features, hidden_dims: hidden }),
    trainer: LossTrainer.C({
      sampler,
      batch_size: batch,
      num_workers: Number(args.workers),
      hooks: [HingeLoss.C({ margin: 1.0 }), ...hooks],
      ...(batcher ? { batcher } : {}),
    }),
    max_epochs: epochs,
    steps_per_epoch: steps / epochs,
    checkpoint_interval: epochs,
    optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 1e-3 }) })],
    listeners: [],
  });
}

const letorSampler = (features) =>
  PairwiseSampler.C({
    dataset: SyntheticLtrDataset.C({ signal_seed: 2026, seed: 1, num_queries: 300, docs_per_query: 20, num_features: features, noise: 0.3 }),
  });

/** Training steps/s of one run (its epochs' loops only), in a fresh workspace. */
async function stepsPerSecond(config) {
  const workspace = mkdtempSync(join(tmpdir(), "xpm-torch-bridge-bench-"));
  try {
    const result = await learn(config, { workspace, handleSignals: false, quiet: true });
    const perEpoch = config.steps_per_epoch;
    const seconds = result.epochs.reduce((sum, e) => sum + perEpoch / e.stepsPerSecond, 0);
    return (perEpoch * result.epochs.length) / seconds;
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

// On a shared machine the fastest of several runs is the least disturbed one: the figures
// below are best-of-repeats, with every run listed.
const best = (xs) => Math.max(...xs);
async function measure(config) {
  const runs = [];
  for (let r = 0; r < repeats; r++) runs.push(await stepsPerSecond(config));
  return { best: best(runs), runs };
}

const out = { load_before: loadavg(), repeats };
if (only.has("sampler")) {
  const batch = 256;
  const job = { features: SAMPLER_FEATURES, hidden: [4], batch, steps: 400 };
  // The same job with the built-in sampler in the core: what training alone costs, so that the
  // crossing's own cost per batch (and its records/s) can be told apart.
  const floor = [];
  const through = [];
  for (let r = 0; r < repeats; r++) {
    floor.push(await stepsPerSecond(learner({ ...job, sampler: letorSampler(SAMPLER_FEATURES) })));
    through.push(await stepsPerSecond(learner({ ...job, sampler: PoolSampler.C({}) })));
  }
  const crossing = 1 / best(through) - 1 / best(floor);
  out.sampler = {
    batch,
    features: SAMPLER_FEATURES,
    records_per_second: best(through) * batch,
    crossing_microseconds_per_batch: crossing * 1e6,
    crossing_records_per_second: batch / crossing,
    steps_per_second: through,
    steps_per_second_builtin_sampler: floor,
  };
}
if (only.has("hook")) {
  const job = { sampler: letorSampler(46), features: 46, hidden: [64], batch: 32, steps: 2000 };
  // Interleaved, so that a burst of load hits both sides alike.
  const without = [];
  const hooked = [];
  hookCalls = 0;
  for (let r = 0; r < repeats; r++) {
    without.push(await stepsPerSecond(learner(job)));
    hooked.push(await stepsPerSecond(learner({ ...job, hooks: [NoOpHook.C({})] })));
  }
  if (hookCalls === 0) throw new Error("the step hook never ran");
  out.hook = {
    per_step_microseconds: (1 / best(hooked) - 1 / best(without)) * 1e6,
    steps_per_second_without: without,
    steps_per_second_with: hooked,
  };
}
if (only.has("letor")) {
  const sps = await measure(learner({ sampler: letorSampler(46), features: 46, hidden: [64], batch: 32, steps: 4000 }));
  out.letor = { steps_per_second: sps.best, runs: sps.runs };
}
if (only.has("dims")) {
  const job = { sampler: letorSampler(46), features: 46, hidden: [64], batch: 32, steps: 1000 };
  const builtin = [];
  const typescript = [];
  dimsCalls = 0;
  for (let r = 0; r < repeats; r++) {
    builtin.push(await stepsPerSecond(learner({ ...job, batcher: adaptiveBatcher(BatchDimsProvider) })));
    typescript.push(await stepsPerSecond(learner({ ...job, batcher: adaptiveBatcher(FeatureDims) })));
  }
  if (dimsCalls === 0) throw new Error("the TypeScript dims provider never ran");
  out.dims = {
    batch: job.batch,
    per_step_microseconds: (1 / best(typescript) - 1 / best(builtin)) * 1e6,
    dims_calls_per_run: dimsCalls / repeats,
    steps_per_second_builtin_provider: builtin,
    steps_per_second_typescript_provider: typescript,
  };
}
out.load_after = loadavg();
console.log(JSON.stringify(out, null, 1));
