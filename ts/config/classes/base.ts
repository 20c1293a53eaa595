import { configOf, defineConfig } from "../class.js";
import { param } from "../declare.js";
import { bool, int, str } from "../types.js";

/** `xpm_torch.base.Random`: seeds every random choice of a run. */
export const Random = defineConfig("xpm_torch.base.Random", {
  seed: param(int((s) => s.min(0))).default(0, { ignoreDefault: true }).help("The seed"),
});

/** The record kinds a sampler written in TypeScript may yield (its stand-in's `kind`). */
export const SAMPLER_KINDS = ["pairwise", "pointwise", "triplets"] as const;

/** `xpm_torch.base.Sampler`: where a trainer's records come from. */
export const Sampler = defineConfig("xpm_torch.base.Sampler", {}, { abstract: true, standIn: { kinds: SAMPLER_KINDS } });

/** `xpm_torch.base.SampleIterator`: a finite sequence of records (validation data). */
export const SampleIterator = defineConfig("xpm_torch.base.SampleIterator", {}, { abstract: true });

/** `xpm_torch.module.Module`: a model. */
export const Module = defineConfig("xpm_torch.module.Module", {}, { abstract: true });

/** `xpm_torch.context.Hook`: a learner-level hook. */
export const Hook = defineConfig("xpm_torch.context.Hook", {}, { abstract: true });

/** `xpm_torch.parameters.ParametersIterator`: selects model parameters by name. */
export const ParametersIterator = defineConfig("xpm_torch.parameters.ParametersIterator", {}, { abstract: true });

/**
 * Selects the parameters of `model` whose dotted name (relative to `model`) contains a match of
 * `regex` and none of `negative_regex`, as Python's `re.search` (anchor with `^`/`$` to match a
 * whole name). An empty `regex` selects every parameter, an empty `negative_regex` deselects none.
 * `model` is the learner's model or one of the entries of its MultipleModel.
 */
export const RegexParametersIterator = defineConfig(
  "xpm_torch.parameters.RegexParametersIterator",
  {
    regex: param(str()).help("Selects the names it is found in (empty: every name)"),
    negative_regex: param(str()).default("", { ignoreDefault: true }).help("Deselects the names it is found in (empty: none)"),
    model: param(configOf(Module)).help("The model whose parameters are selected"),
  },
  {
    extends: ParametersIterator,
    validate(v, issue) {
      for (const key of ["regex", "negative_regex"] as const) {
        try {
          new RegExp(v[key]);
        } catch (error) {
          issue(key, `invalid regular expression: ${(error as Error).message}`);
        }
      }
    },
  },
);

/** Selects what another selector does not. */
export const InverseParametersIterator = defineConfig(
  "xpm_torch.parameters.InverseParametersIterator",
  { iterator: param(configOf(ParametersIterator)).help("The selection to invert") },
  { extends: ParametersIterator },
);

/**
 * Selects over all the parameters of `model`: those the sub-model selector `iterator` yields keep
 * its choice, the others get `default`.
 */
export const SubParametersIterator = defineConfig(
  "xpm_torch.parameters.SubParametersIterator",
  {
    model: param(configOf(Module)).help("The model whose parameters are gathered"),
    iterator: param(configOf(ParametersIterator)).help("The selector over a part of the model"),
    default: param(bool()).help("Whether the parameters outside the part are selected"),
  },
  { extends: ParametersIterator },
);
