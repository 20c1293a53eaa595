import { configOf, defineConfig } from "../class.js";
import { generated, meta, param } from "../declare.js";
import { bool, int, list, str } from "../types.js";
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
  epoch: param(int((s) => s.min(0))).optional().help("The epoch of the checkpoint"),
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
    max_epochs: param(int((s) => s.min(1))).default(1000, { ignoreDefault: true }).help("Number of epochs"),
    steps_per_epoch: param(int((s) => s.min(1))).default(128, { ignoreDefault: true }).help("Steps (optimizer updates) per epoch"),
    optimizers: param(list(configOf(ParameterOptimizer))).help("Parameter optimizers; the first whose selection claims a parameter owns it"),
    listeners: param(list(configOf(LearnerListener))).help("Called after every epoch (validation, metrics)"),
    checkpoint_interval: meta(int((s) => s.min(1))).default(1).help("Epochs between checkpoints"),
    logpath: generated("runs").help("TensorBoard logs (generated in the job directory)"),
    checkpointspath: generated("checkpoints").help("Checkpoints (generated in the job directory)"),
    hooks: param(list(configOf(Hook))).default([], { ignoreDefault: true }).help("Learner-level hooks (gradient clipping, logging)"),
    fabric_config: param(configOf(FabricConfiguration)).factory(() => FabricConfiguration.C({})).help("Precision and devices"),
    checkpoint_keep: meta(int((s) => s.min(1)))
      .default(1)
      .help("The newest epoch checkpoints kept besides each listener's best epoch (1: the last, which resume needs)"),
    keep_training_state: meta(bool())
      .default(false)
      .help("Keeps the kept epoch checkpoints' training state (optimizer moments, sampler positions, random generators) once the run is done; by default a done run keeps only their models, since only resuming needs the rest"),
    validate_at_start: meta(bool())
      .default(false)
      .help("Runs the validation listeners once before the first step (epoch 0): where the run starts, in the result's start_metrics and at step 0 in TensorBoard (no best, no stop vote)"),
    step_losses: meta(bool())
      .default(false)
      .help("Keeps the training loss of every step in its epoch's report (stepLosses), besides the epoch's mean"),
  },
  {
    kind: "task",
    // Set by the bridge (ts/run/bridge.ts), left out when there is none.
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
