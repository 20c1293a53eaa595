import { configOf, defineConfig } from "../class.js";
import { generated, meta, param } from "../declare.js";
import { int, list, str } from "../types.js";
import { Hook, Module, Random } from "./base.js";
import { FabricConfiguration } from "./configuration.js";
import { ParameterOptimizer } from "./optim.js";
import { Trainer } from "./trainers.js";

/** `xpm_torch.learner.LearnerListener`: called after each epoch (validation, checkpoints). */
export const LearnerListener = defineConfig(
  "xpm_torch.learner.LearnerListener",
  { id: meta(str((s) => s.min(1))).help("Unique ID to identify the listener (ignored for signature)") },
  { abstract: true, standIn: true },
);

/** `xpm_torch.learner.CheckpointSettings`: selects the checkpoint of one epoch. */
export const CheckpointSettings = defineConfig("xpm_torch.learner.CheckpointSettings", {
  epoch: param(int((s) => s.min(0))).optional(),
});

/** `xpm_torch.learner.Strategy`. */
export const LearnerStrategy = defineConfig("xpm_torch.learner.Strategy", {}, { abstract: true });

/** `xpm_torch.learner.Learner`: the training task. */
export const Learner = defineConfig(
  "xpm_torch.learner.Learner",
  {
    random: param(configOf(Random)).help("The random generator"),
    trainer: param(configOf(Trainer)).help("Specifies how to train the model"),
    model: param(configOf(Module)).help("Defines the model to be learned"),
    max_epochs: param(int((s) => s.min(1))).default(1000, { ignoreDefault: true }),
    steps_per_epoch: param(int((s) => s.min(1))).default(128, { ignoreDefault: true }),
    optimizers: param(list(configOf(ParameterOptimizer))),
    listeners: param(list(configOf(LearnerListener))),
    checkpoint_interval: meta(int((s) => s.min(1))).default(1),
    logpath: generated("runs"),
    checkpointspath: generated("checkpoints"),
    hooks: param(list(configOf(Hook))).default([], { ignoreDefault: true }),
    fabric_config: param(configOf(FabricConfiguration)).factory(() => FabricConfiguration.C({})),
    checkpoint_keep: meta(int((s) => s.min(1)))
      .optional()
      .help("Epoch checkpoints kept besides the listeners' best epochs (default: all)"),
  },
  {
    kind: "task",
    // Set by the bridge (ts/bridge.ts), left out when there is none.
    wireSchema: {
      properties: {
        __init_tasks__: {
          type: "array",
          items: { $ref: "#/$defs/xpm_torch.module.SimpleModuleLoader" },
          description: "Loaders applied to the fresh model before training, in order (experimaestro's init tasks)",
        },
      },
    },
    validate(v, issue) {
      if (v.optimizers.length === 0) issue("optimizers", "at least one optimizer is needed");
      const seen = new Map<string, number>();
      v.listeners.forEach((listener, i) => {
        const first = seen.get(listener.id);
        if (first !== undefined) issue(`listeners[${i}].id`, `"${listener.id}" is already the id of listeners[${first}]`);
        else seen.set(listener.id, i);
      });
    },
  },
);
