import { defineConfig } from "../class.js";
import { param } from "../declare.js";
import { float } from "../types.js";
import { TrainingHook } from "./hooks.js";

const weight = () => param(float()).default(1.0, { ignoreDefault: true }).help("The weight of this loss");

/** `xpm_torch.losses.batchwise.BatchwiseLoss`. */
export const BatchwiseLoss = defineConfig("xpm_torch.losses.batchwise.BatchwiseLoss", { weight: weight() }, { extends: TrainingHook, abstract: true });

/** `xpm_torch.losses.batchwise.CrossEntropyLoss` (logged as `batch-bce`). */
export const BatchwiseCrossEntropyLoss = defineConfig("xpm_torch.losses.batchwise.CrossEntropyLoss", {}, { extends: BatchwiseLoss });

/** `xpm_torch.losses.batchwise.SoftmaxCrossEntropy` (logged as `batch-infonce`). */
export const SoftmaxCrossEntropy = defineConfig("xpm_torch.losses.batchwise.SoftmaxCrossEntropy", {}, { extends: BatchwiseLoss });

/** `xpm_torch.losses.pairwise.PairwiseLoss`. */
export const PairwiseLoss = defineConfig("xpm_torch.losses.pairwise.PairwiseLoss", { weight: weight() }, { extends: TrainingHook, abstract: true });

/** `xpm_torch.losses.pairwise.CrossEntropyLoss` (logged as `pair-cross-entropy`). */
export const PairwiseCrossEntropyLoss = defineConfig("xpm_torch.losses.pairwise.CrossEntropyLoss", {}, { extends: PairwiseLoss });

/** `xpm_torch.losses.pairwise.HingeLoss` (logged as `pair-hinge`): `w/N Σ max(0, m − (s⁺ − s⁻))`. */
export const HingeLoss = defineConfig(
  "xpm_torch.losses.pairwise.HingeLoss",
  { margin: param(float()).default(1.0, { ignoreDefault: true }).help("The margin for the Hinge loss") },
  { extends: PairwiseLoss },
);

/** `xpm_torch.losses.pairwise.PointwiseCrossEntropyLoss` (logged as `pair-pointwise-cross-entropy`). */
export const PointwiseCrossEntropyLoss = defineConfig("xpm_torch.losses.pairwise.PointwiseCrossEntropyLoss", {}, { extends: PairwiseLoss });
