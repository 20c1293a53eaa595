import { configOf, defineConfig } from "../class.js";
import { param } from "../declare.js";
import { int, str } from "../types.js";

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

/** Selects parameters whose full dotted name matches `regex` and not `negative_regex`. */
export const RegexParametersIterator = defineConfig(
  "xpm_torch.parameters.RegexParametersIterator",
  {
    regex: param(str()).help("Selects names it fully matches (empty: every name)"),
    negative_regex: param(str()).optional().help("Deselects names it fully matches"),
  },
  {
    extends: ParametersIterator,
    validate(v, issue) {
      for (const key of ["regex", "negative_regex"] as const) {
        const pattern = v[key];
        if (pattern === undefined) continue;
        try {
          new RegExp(pattern);
        } catch (error) {
          issue(key, `invalid regular expression: ${(error as Error).message}`);
        }
      }
      if (v.regex === "") return { regex: ".*" };
    },
  },
);

/** Selects what another selector does not. */
export const InverseParametersIterator = defineConfig(
  "xpm_torch.parameters.InverseParametersIterator",
  { iterator: param(configOf(ParametersIterator)) },
  { extends: ParametersIterator },
);
