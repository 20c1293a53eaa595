import { defineConfig } from "../class.js";
import { param } from "../declare.js";
import { int } from "../types.js";

/** `xpm_torch.base.Random`: seeds every random choice of a run. */
export const Random = defineConfig("xpm_torch.base.Random", {
  seed: param(int((s) => s.min(0))).default(0, { ignoreDefault: true }).help("The seed"),
});

/** `xpm_torch.base.Sampler`: where a trainer's records come from. */
export const Sampler = defineConfig("xpm_torch.base.Sampler", {}, { abstract: true });

/** `xpm_torch.base.SampleIterator`: a finite sequence of records (validation data). */
export const SampleIterator = defineConfig("xpm_torch.base.SampleIterator", {}, { abstract: true });

/** `xpm_torch.module.Module`: a model. */
export const Module = defineConfig("xpm_torch.module.Module", {}, { abstract: true });

/** `xpm_torch.context.Hook`: a learner-level hook. */
export const Hook = defineConfig("xpm_torch.context.Hook", {}, { abstract: true });

/** `xpm_torch.parameters.ParametersIterator`: selects model parameters by name. */
export const ParametersIterator = defineConfig("xpm_torch.parameters.ParametersIterator", {}, { abstract: true });
