// A script for the distributed tests: `node ddp-child.mjs <workspace> <ranks> <batch> <epochs>
// <steps per epoch>` trains the demo task's model with `ranks` processes of `batch` records each
// (strategy ddp on the CPU when ranks > 1), and the launcher prints the result as JSON on stdout.
// Launched workers run this same script again; they print nothing.
import {
  Adam,
  FabricConfiguration,
  HingeLoss,
  Learner,
  LossTrainer,
  MlpScorer,
  PairwiseSampler,
  PowerAdaptativeBatcher,
  ParameterOptimizer,
  Random,
  RankingValidationListener,
  SyntheticLtrDataset,
  learn,
} from "xpm-torch";

const [workspace, ranks, batch, epochs, steps] = process.argv.slice(2, 7).map((a, i) => (i === 0 ? a : Number(a)));
// An optional sixth argument picks the batcher: "power" for the PowerAdaptativeBatcher.
const batcher = process.argv[7] === "power" ? { batcher: PowerAdaptativeBatcher.C({}) } : {};
const data = (seed, num_queries) =>
  SyntheticLtrDataset.C({ signal_seed: 2026, seed, num_queries, docs_per_query: 20, num_features: 16, noise: 0.3 });
const config = Learner.C({
  random: Random.C({ seed: 3 }),
  model: MlpScorer.C({ input_dim: 16, hidden_dims: [32, 16] }),
  trainer: LossTrainer.C({
    sampler: PairwiseSampler.C({ dataset: data(1, 200) }),
    batch_size: batch,
    num_workers: 0,
    hooks: [HingeLoss.C({ margin: 1.0 })],
    ...batcher,
  }),
  max_epochs: epochs,
  steps_per_epoch: steps,
  optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 3e-3 }) })],
  listeners: [
    RankingValidationListener.C({ id: "heldout", dataset: data(2, 20), metrics: { pairwise_accuracy: true } }),
  ],
  fabric_config: FabricConfiguration.C(
    ranks > 1 ? { strategy: "ddp", devices: String(ranks), accelerator: "cpu", num_threads: 1 } : { accelerator: "cpu", num_threads: 1 },
  ),
});
const worker = process.env.XPM_TORCH_LAUNCHED === "1";
try {
  let started = false;
  const onProgress = () => {
    if (!started) console.error(`training started in ${process.pid}`);
    started = true;
  };
  const warnings = [];
  const result = await learn(config, { workspace, onProgress, quiet: true, onWarning: (m) => warnings.push(m) });
  if (warnings.length > 0) console.error(warnings.map((w) => `warning: ${w}`).join("\n"));
  if (!worker) process.stdout.write(JSON.stringify(result));
} catch (error) {
  console.error(`${error.code}: ${error.message}`);
  process.exitCode = 3;
}
