// A training process for the reproducibility tests: `node dropout-child.mjs <workspace> [ranks]`
// trains an MLP with dropout (AdamW with a warmup, a validation listener, two data workers) and
// prints its result as JSON on stdout. A step hook writes `step <n>` to stderr after every step,
// so that a test can kill it at a chosen step. With `ranks` above 1 it trains data-parallel on
// the CPU, for 3 epochs instead of 8; the launched workers run this script again.
import { AdamW, FabricConfiguration, HingeLoss, Learner, LinearWithWarmup, LossTrainer, MLP, PairwiseSampler, ParameterOptimizer,
  Random, SyntheticLtrDataset, TrainerValidationLoss, defineHook, learn } from "xpm-torch";

const [workspace, ranksArg] = process.argv.slice(2);
const ranks = Number(ranksArg ?? 1);
const worker = process.env.XPM_TORCH_LAUNCHED === "1";

const StepReporter = defineHook("tests.StepReporter", {}, {
  kind: "step",
  after: (_self, state) => {
    if (!worker) process.stderr.write(`step ${state.step}\n`);
  },
});

const data = (seed, num_queries) =>
  SyntheticLtrDataset.C({ signal_seed: 2026, seed, num_queries, docs_per_query: 12, num_features: 16, noise: 0.3 });
const trainer = LossTrainer.C({
  sampler: PairwiseSampler.C({ dataset: data(1, 200) }),
  batch_size: 64,
  num_workers: 2,
  hooks: [HingeLoss.C({ margin: 1.0 }), StepReporter.C({})],
});
const config = Learner.C({
  random: Random.C({ seed: 3 }),
  model: MLP.C({ input_dim: 16, hidden_dims: [32, 16], dropout: 0.2 }),
  trainer,
  max_epochs: ranks > 1 ? 3 : 8,
  steps_per_epoch: 25,
  // Every epoch's checkpoint, whole even once the job is done: the tests resume from older ones.
  checkpoint_keep: 8,
  keep_training_state: true,
  optimizers: [ParameterOptimizer.C({ optimizer: AdamW.C({ lr: 3e-3 }), scheduler: LinearWithWarmup.C({ num_warmup_steps: 40 }) })],
  listeners: [
    TrainerValidationLoss.C({
      id: "val",
      data: data(2, 40),
      batch_size: 200,
      trainer: LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(2, 40) }), hooks: [HingeLoss.C({ margin: 1.0 })] }),
    }),
  ],
  ...(ranks > 1 ? { fabric_config: FabricConfiguration.C({ strategy: "ddp", devices: String(ranks), accelerator: "cpu", num_threads: 1 }) } : {}),
});

try {
  const result = await learn(config, { workspace, quiet: true, onWarning: (m) => console.error(`warning: ${m}`) });
  if (!worker) process.stdout.write(JSON.stringify(result));
} catch (error) {
  console.error(`${error.code}: ${error.message}`);
  process.exitCode = 3;
}
