import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { repoRoot, userEnv } from "./node.js";

/** Runs the `xpm-torch` command from the TypeScript sources (through tsx), as a user would run it. */
export function xpmTorch(args: readonly string[], extraEnv: Record<string, string> = {}, timeoutMs = 120_000) {
  const result = spawnSync(process.execPath, ["--import", "tsx", join(repoRoot, "ts", "cli.ts"), ...args], {
    cwd: repoRoot,
    env: userEnv(extraEnv),
    encoding: "utf8",
    timeout: timeoutMs,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The specifier a test's config module imports the package by. */
export const packageIndexUrl = pathToFileURL(join(repoRoot, "ts", "index.ts")).href;

/** A small Learner module source, validated by a ranking listener; `extra` goes into Learner.C. */
export function learnerModule(extra = "", exportLine = "export default"): string {
  return `import { Adam, HingeLoss, Learner, LossTrainer, MlpScorer, PairwiseSampler, ParameterOptimizer, Random,
  RankingValidationListener, SyntheticLtrDataset } from ${JSON.stringify(packageIndexUrl)};

const data = (seed: number, num_queries: number) =>
  SyntheticLtrDataset.C({ signal_seed: 5, seed, num_queries, docs_per_query: 10, num_features: 8 });

${exportLine} Learner.C({
  random: Random.C({ seed: 1 }),
  model: MlpScorer.C({ input_dim: 8, hidden_dims: [16] }),
  trainer: LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(1, 60) }), batch_size: 32, hooks: [HingeLoss.C({ margin: 1 })] }),
  max_epochs: 3,
  steps_per_epoch: 25,
  optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 1e-2 }) })],
  listeners: [RankingValidationListener.C({ id: "val", dataset: data(2, 20), metrics: { "ndcg@10": true } })],
  ${extra}
});
`;
}
