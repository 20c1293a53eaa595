import { configOf, defineConfig } from "../class.js";
import { constant, param } from "../declare.js";
import { float, str } from "../types.js";
import { Hook, ParametersIterator } from "./base.js";

/**
 * When a training hook written in TypeScript runs (its stand-in's `kind`): around each optimizer
 * step, or before and after the run is built.
 */
export const TRAINING_HOOK_KINDS = ["step", "initialization"] as const;

/** One of {@link TRAINING_HOOK_KINDS}. */
export type TrainingHookKind = (typeof TRAINING_HOOK_KINDS)[number];

/** `xpm_torch.trainers.context.TrainingHook`: base of every training hook (losses included). */
export const TrainingHook = defineConfig("xpm_torch.trainers.context.TrainingHook", {}, {
  abstract: true,
  standIn: { kinds: TRAINING_HOOK_KINDS },
});

/** `xpm_torch.trainers.context.StepTrainingHook`: called before and after each step. */
export const StepTrainingHook = defineConfig("xpm_torch.trainers.context.StepTrainingHook", {}, { extends: TrainingHook, abstract: true });

/** `xpm_torch.trainers.context.ValidationHook`. */
export const ValidationHook = defineConfig("xpm_torch.trainers.context.ValidationHook", {}, { extends: TrainingHook, abstract: true });

/** `xpm_torch.trainers.context.InitializationTrainingHook`: called around initialisation. */
export const InitializationTrainingHook = defineConfig("xpm_torch.trainers.context.InitializationTrainingHook", {}, { extends: TrainingHook, abstract: true });

/** `xpm_torch.trainers.hooks.LayerFreezer`: freezes the selected parameters. */
export const LayerFreezer = defineConfig(
  "xpm_torch.trainers.hooks.LayerFreezer",
  { selector: param(configOf(ParametersIterator)).help("How to select the layers to freeze") },
  { extends: InitializationTrainingHook },
);

/** `xpm_torch.trainers.hooks.LayerSharer`: shares parameters between layers. */
export const LayerSharer = defineConfig(
  "xpm_torch.trainers.hooks.LayerSharer",
  {
    source: param(configOf(ParametersIterator)).help("The parameters to share"),
    target: param(configOf(ParametersIterator)).help("The parameters to be shared"),
  },
  { extends: InitializationTrainingHook },
);

/** `xpm_torch.optim.GradientClippingHook`: clips each optimizer's gradients to an L2 norm. */
export const GradientClippingHook = defineConfig(
  "xpm_torch.optim.GradientClippingHook",
  {
    max_norm: param(float((s) => s.gt(0))).help("Largest global L2 norm of the gradients"),
    version: constant(str(), "1").help("The hook's version (a constant of the Python class)"),
  },
  { extends: Hook },
);

/** `xpm_torch.optim.GradientLogHook`: logs the gradient size each step. */
export const GradientLogHook = defineConfig(
  "xpm_torch.optim.GradientLogHook",
  { name: param(str((s) => s.min(1))).default("gradient_norm", { ignoreDefault: true }).help("The TensorBoard tag") },
  { extends: Hook },
);
