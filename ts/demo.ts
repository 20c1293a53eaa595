import { demoLearner } from "./demo-config.js";
import { learn } from "./learn.js";

/** Runs the demo training and prints one line per epoch; returns the final held-out accuracy. */
export async function runDemo(print: (line: string) => void = console.log): Promise<number> {
  const config = demoLearner();
  print(
    `xpm-torch demo: MLP ${config.model.input_dim}→${config.model.hidden_dims.join("→")}→1, ` +
      `pairwise hinge loss, Adam, ${config.max_epochs} epochs × ${config.steps_per_epoch} steps`,
  );
  const started = performance.now();
  const result = await learn(config, {
    onEpoch: (e) =>
      print(
        `epoch ${String(e.epoch).padStart(2)}  loss ${e.loss.toFixed(4)}  ` +
          `held-out pairwise accuracy ${(e.metrics["heldout/accuracy"] ?? NaN).toFixed(4)}  ` +
          `${e.stepsPerSecond.toFixed(0)} steps/s`,
      ),
  });
  const seconds = (performance.now() - started) / 1000;
  const last = result.epochs[result.epochs.length - 1];
  const accuracy = last?.metrics["heldout/accuracy"] ?? NaN;
  const steps = last?.step ?? 0;
  print(`done: ${steps} steps in ${seconds.toFixed(2)} s (${(steps / seconds).toFixed(0)} steps/s); final held-out accuracy ${accuracy.toFixed(4)}`);
  return accuracy;
}
