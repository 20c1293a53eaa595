import { configOf, defineConfig } from "../class.js";
import { param } from "../declare.js";
import { bool, float, int, list, str } from "../types.js";
import { Module } from "./base.js";

const lr = (value: number) => param(float((s) => s.gt(0))).default(value, { ignoreDefault: true });
const decay = (value: number) => param(float((s) => s.min(0))).default(value, { ignoreDefault: true });
const eps = () => param(float((s) => s.gt(0))).default(1e-8, { ignoreDefault: true });
const beta = () => float((s) => s.min(0).lt(1));

/** `xpm_torch.optim.Optimizer`. */
export const Optimizer = defineConfig("xpm_torch.optim.Optimizer", {}, { abstract: true });

/** `xpm_torch.optim.SGD` (no momentum). */
export const SGD = defineConfig("xpm_torch.optim.SGD", { lr: lr(1e-5).help("Learning rate"), weight_decay: decay(0).help("L2 penalty") }, { extends: Optimizer });

/** `xpm_torch.optim.Adam`: coupled L2 weight decay, as `torch.optim.Adam`. */
export const Adam = defineConfig(
  "xpm_torch.optim.Adam",
  {
    lr: lr(1e-3).help("Learning rate"),
    weight_decay: decay(0).help("L2 penalty, added to the gradients"),
    eps: eps().help("Added to the denominator for numerical stability"),
    betas: param(list(beta(), { length: 2 })).default([0.9, 0.999], { ignoreDefault: true }).help("Coefficients of the running averages of the gradient and its square"),
  },
  { extends: Optimizer },
);

/** `xpm_torch.optim.AdamW`: decoupled weight decay. */
export const AdamW = defineConfig(
  "xpm_torch.optim.AdamW",
  {
    lr: lr(1e-3).help("Learning rate"),
    weight_decay: decay(1e-2).help("Decoupled weight decay, scaled by the learning rate"),
    eps: eps().help("Added to the denominator for numerical stability"),
    betas: param(list(beta(), { length: 2 })).default([0.9, 0.999], { ignoreDefault: true }).help("Coefficients of the running averages of the gradient and its square"),
  },
  { extends: Optimizer },
);

/**
 * `xpm_torch.optim.Adafactor`: Adafactor as the `transformers` library implements it (the class
 * the Python library builds). Without `lr`, step sizes are relative (`relative_step`, the
 * default): `min(1e-2, 1/√t)` at a parameter's step `t` (`warmup_init`: `min(1e-6·t, 1/√t)`),
 * times the parameter's root mean square (`scale_parameter`). `lr`, `weight_decay` and
 * `relative_step` are Python's parameters; the others (ours) carry transformers' defaults and
 * are left out of identifiers at those defaults.
 */
export const Adafactor = defineConfig(
  "xpm_torch.optim.Adafactor",
  {
    lr: param(float((s) => s.gt(0))).optional().help("A fixed learning rate (needs relative_step: false)"),
    weight_decay: decay(0).help("L2 penalty, scaled by the step size"),
    relative_step: param(bool()).default(true, { ignoreDefault: true }).help("Step sizes from the step count instead of lr"),
    eps: param(list(float((s) => s.min(0)), { length: 2 })).default([1e-30, 1e-3], { ignoreDefault: true }).help("Added to squared gradients; floor of a parameter's scale"),
    clip_threshold: param(float((s) => s.gt(0))).default(1, { ignoreDefault: true }).help("Largest root mean square of an update"),
    decay_rate: param(float((s) => s.max(0))).default(-0.8, { ignoreDefault: true }).help("Second moments keep 1 − t^decay_rate of the past"),
    beta1: param(beta()).optional().help("Running average of the updates (none by default)"),
    scale_parameter: param(bool()).default(true, { ignoreDefault: true }).help("Step sizes times the parameter's root mean square"),
    warmup_init: param(bool()).default(false, { ignoreDefault: true }).help("Relative step sizes growing as 1e-6·t"),
  },
  {
    extends: Optimizer,
    validate(v, issue) {
      if (v.lr !== undefined && v.relative_step) issue("lr", "cannot be combined with relative_step: true; set relative_step: false to use a fixed lr");
      if (v.lr === undefined && !v.relative_step) issue("lr", "is needed when relative_step is false");
      if (v.warmup_init && !v.relative_step) issue("warmup_init", "needs relative_step: true");
    },
  },
);

/** `xpm_torch.schedulers.Scheduler`: a learning-rate factor per step. */
export const Scheduler = defineConfig("xpm_torch.schedulers.Scheduler", {}, { abstract: true });

const warmup = () => param(int((s) => s.min(0))).help("Number of warmup steps");

/** `xpm_torch.schedulers.LinearWithWarmup`: linear warmup, then linear decay to `min_factor`. */
export const LinearWithWarmup = defineConfig(
  "xpm_torch.schedulers.LinearWithWarmup",
  {
    num_warmup_steps: warmup(),
    min_factor: param(float((s) => s.min(0))).default(0, { ignoreDefault: true }).help("Sets the floor of the decay, min_factor / (1 + min_factor)"),
  },
  { extends: Scheduler },
);

/** `xpm_torch.schedulers.CosineWithWarmup`: linear warmup, then cosine decay. */
export const CosineWithWarmup = defineConfig(
  "xpm_torch.schedulers.CosineWithWarmup",
  { num_warmup_steps: warmup(), num_cycles: param(float((s) => s.gt(0))).default(0.5, { ignoreDefault: true }).help("Cosine cycles after warmup (0.5: a half cosine down to 0)") },
  { extends: Scheduler },
);

/**
 * `xpm_torch.schedulers.LinearWithWarmupAndMaxEpochs`: as LinearWithWarmup, over
 * `total_training_steps` instead of the run's steps when set (training in several phases).
 */
export const LinearWithWarmupAndMaxEpochs = defineConfig(
  "xpm_torch.schedulers.LinearWithWarmupAndMaxEpochs",
  {
    num_warmup_steps: warmup(),
    min_factor: param(float((s) => s.min(0))).default(0, { ignoreDefault: true }).help("Sets the floor of the decay, min_factor / (1 + min_factor)"),
    total_training_steps: param(int((s) => s.min(1))).optional().help("Steps the decay spans (default: the run's)"),
  },
  {
    extends: Scheduler,
    validate(v, issue) {
      if (v.total_training_steps !== undefined && v.total_training_steps < v.num_warmup_steps) {
        issue("total_training_steps", "must be at least num_warmup_steps");
      }
    },
  },
);

/** `xpm_torch.optim.ParameterFilter`: accepts or rejects parameters by name. */
export const ParameterFilter = defineConfig("xpm_torch.optim.ParameterFilter", {});

/** `xpm_torch.optim.RegexParameterFilter`: regular expressions searched in parameter names. */
export const RegexParameterFilter = defineConfig(
  "xpm_torch.optim.RegexParameterFilter",
  {
    includes: param(list(str())).optional().help("Accepts the names matching any of these"),
    excludes: param(list(str())).optional().help("Rejects the names matching any of these and no include"),
  },
  {
    extends: ParameterFilter,
    validate(v, issue) {
      if (v.includes === undefined && v.excludes === undefined) issue("", "needs includes, excludes, or both");
      for (const key of ["includes", "excludes"] as const) {
        (v[key] ?? []).forEach((pattern, i) => {
          try {
            new RegExp(pattern);
          } catch (error) {
            issue(`${key}[${i}]`, `invalid regular expression: ${(error as Error).message}`);
          }
        });
      }
    },
  },
);

/** `xpm_torch.optim.ParameterOptimizer`: an optimizer (and scheduler) for selected parameters. */
export const ParameterOptimizer = defineConfig("xpm_torch.optim.ParameterOptimizer", {
  optimizer: param(configOf(Optimizer)).help("The optimizer"),
  scheduler: param(configOf(Scheduler)).optional().help("Learning-rate schedule (default: constant)"),
  module: param(configOf(Module)).optional().help("The module whose parameters are optimized (default: the learner's model)"),
  filter: param(configOf(ParameterFilter)).factory(() => ParameterFilter.C({})).help("Which parameters this optimizer claims (default: all)"),
});
