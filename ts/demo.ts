import { MlpScorer } from "./config/classes/builtin.js";
import { demoLearner } from "./demo-config.js";
import { type EpochReport, learn } from "./learn.js";

function epochLine(e: EpochReport): string {
  return (
    `epoch ${String(e.epoch).padStart(2)}  loss ${e.loss.toFixed(4)}  ` +
    `held-out pairwise accuracy ${(e.metrics["heldout/pairwise_accuracy"] ?? Number.NaN).toFixed(4)}  ` +
    `NDCG@10 ${(e.metrics["heldout/ndcg@10"] ?? Number.NaN).toFixed(4)}  ` +
    `${e.stepsPerSecond.toFixed(0)} steps/s`
  );
}

/** Runs the demo training and prints one line per epoch; returns the final held-out accuracy. */
export async function runDemo(print: (line: string) => void = console.log, workspace?: string): Promise<number> {
  const config = demoLearner();
  const layers = MlpScorer.is(config.model) ? [config.model.input_dim, ...config.model.hidden_dims, 1].join("→") : "?";
  print(
    `xpm-torch demo: MLP ${layers}, pairwise hinge loss, Adam, ` +
      `${config.max_epochs} epochs × ${config.steps_per_epoch} steps`,
  );
  const started = performance.now();
  const result = await learn(config, {
    ...(workspace === undefined ? {} : { workspace }),
    onEpoch: (e) => print(epochLine(e)),
  });
  const seconds = (performance.now() - started) / 1000;
  const last = result.epochs[result.epochs.length - 1];
  const accuracy = last?.metrics["heldout/pairwise_accuracy"] ?? Number.NaN;
  if (result.cached) {
    print("this job had already run; its stored result:");
    result.epochs.forEach((e) => print(epochLine(e)));
    print(`final held-out accuracy ${accuracy.toFixed(4)} (remove ${result.jobDir} to train again)`);
    return accuracy;
  }
  const steps = last?.step ?? 0;
  print(`job directory: ${result.jobDir}`);
  print(
    `done: ${steps} steps in ${seconds.toFixed(2)} s (${(steps / seconds).toFixed(0)} steps/s including setup); ` +
      `final held-out accuracy ${accuracy.toFixed(4)}`,
  );
  return accuracy;
}
