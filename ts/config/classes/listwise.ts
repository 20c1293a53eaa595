// Listwise losses, over the slates of `SlateSampler` (samplers.ts). Ours — the Python library has
// none — under `xpm_torch` type ids like the rest. They follow allRank 1.4.3.
import { defineConfig } from "../class.js";
import { param } from "../declare.js";
import { bool, float, int, literal } from "../types.js";
import { TrainingHook } from "./hooks.js";

const weight = () => param(float()).default(1.0, { ignoreDefault: true }).help("The weight of this loss");
const positive = () => float((s) => s.gt(0));

/** `xpm_torch.losses.listwise.ListwiseLoss`: a loss over slates (ours). */
export const ListwiseLoss = defineConfig("xpm_torch.losses.listwise.ListwiseLoss", { weight: weight() }, { extends: TrainingHook, abstract: true });

/** ListNet (logged as `list-net`): cross-entropy between the softmax of labels and of scores. */
export const ListNetLoss = defineConfig("xpm_torch.losses.listwise.ListNetLoss", {}, { extends: ListwiseLoss });

/** ListMLE (logged as `list-mle`): the Plackett–Luce likelihood of the order by label. */
export const ListMLELoss = defineConfig("xpm_torch.losses.listwise.ListMLELoss", {}, { extends: ListwiseLoss });

/**
 * RankNet (logged as `list-ranknet`): logistic loss on every pair of a slate with different labels,
 * optionally weighted by the label difference (or the difference of squared labels).
 */
export const RankNetLoss = defineConfig(
  "xpm_torch.losses.listwise.RankNetLoss",
  {
    weighting: param(literal(["none", "label_difference", "squared_label_difference"]))
      .default("none", { ignoreDefault: true })
      .help("Pair weight for labels y_i > y_j: 1, y_i − y_j or y_i² − y_j²"),
  },
  { extends: ListwiseLoss },
);

/**
 * The LambdaLoss framework (logged as `list-lambdaloss`): pair losses weighted by a scheme —
 * `lambdaRank`, `ndcgLoss1`, `ndcgLoss2`, `ndcgLoss2PP` (NDCG-Loss2++, `mu`), label differences or
 * none — within the top `k` predicted positions.
 */
export const LambdaLoss = defineConfig(
  "xpm_torch.losses.listwise.LambdaLoss",
  {
    weighing_scheme: param(
      literal(["none", "lambdaRank", "ndcgLoss1", "ndcgLoss2", "ndcgLoss2PP", "label_difference", "squared_label_difference"]),
    )
      .default("none", { ignoreDefault: true })
      .help("The pair weights (allRank's weighing schemes)"),
    k: param(int((s) => s.min(1))).optional().help("Pairs within the first k predicted positions only (default: all)"),
    sigma: param(positive()).default(1.0, { ignoreDefault: true }).help("Scale of score differences"),
    mu: param(positive()).default(10.0, { ignoreDefault: true }).help("Weight of NDCG-Loss2 in NDCG-Loss2++"),
    reduction: param(literal(["sum", "mean"])).default("sum", { ignoreDefault: true }).help("Pair losses summed or averaged over the batch"),
    reduction_log: param(literal(["binary", "natural"])).default("binary", { ignoreDefault: true }).help("Base of the logarithm of the pair losses: 2 or e"),
  },
  { extends: ListwiseLoss },
);

/** ApproxNDCG (logged as `list-approx-ndcg`): minus an NDCG whose ranks are smoothed by sigmoids. */
export const ApproxNDCGLoss = defineConfig(
  "xpm_torch.losses.listwise.ApproxNDCGLoss",
  { alpha: param(positive()).default(1.0, { ignoreDefault: true }).help("Scale of score differences") },
  { extends: ListwiseLoss },
);

/** NeuralNDCG (logged as `list-neural-ndcg`): minus an NDCG@k of a NeuralSort-relaxed ranking. */
export const NeuralNDCGLoss = defineConfig(
  "xpm_torch.losses.listwise.NeuralNDCGLoss",
  {
    temperature: param(positive()).default(1.0, { ignoreDefault: true }).help("NeuralSort's temperature"),
    powered_relevancies: param(bool()).default(true, { ignoreDefault: true }).help("Gains 2^y - 1 (else y)"),
    k: param(int((s) => s.min(1))).optional().help("NDCG cut-off (default: the slate)"),
  },
  { extends: ListwiseLoss },
);
