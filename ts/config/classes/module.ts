import { configOf, configUnion, defineConfig } from "../class.js";
import { param } from "../declare.js";
import { dict, literal, path, str } from "../types.js";
import { Module } from "./base.js";
import { CheckpointSettings } from "./learner.js";
import { ValidationSettings } from "./validation.js";

/**
 * `xpm_torch.module.SimpleModuleLoader`: a model configuration and the weights file to load
 * into it. The loaders `learn()` returns are marked as outputs of their Learner, so their
 * identifiers depend on the training that produced them; `settings` tells apart a
 * checkpoint's model (CheckpointSettings) from a listener's best (ValidationSettings).
 */
export const ModuleLoader = defineConfig("xpm_torch.module.SimpleModuleLoader", {
  value: param(configOf(Module)).help("The model"),
  path: param(path()).help("Its weights (safetensors)"),
  settings: param(configUnion("LoaderSettings", CheckpointSettings, ValidationSettings)).optional().help("Which saved model it is: a checkpoint's or a listener's best"),
});

/**
 * `xpm_torch.module.MultipleModel`: several named models trained together. The entry named
 * `scorer` scores; every entry's parameters are named `<name>.<parameter>`, so optimizers
 * (`RegexParameterFilter({ includes: ["^scorer\\."] })`), freezing, sharing and saving select
 * them by prefix. The other entries get gradients only through parameters shared with the
 * scorer: they are saved, loaded and frozen with it (a teacher, a head for a later stage).
 */
export const MultipleModel = defineConfig(
  "xpm_torch.module.MultipleModel",
  {
    models: param(dict(configOf(Module))).help("The models by name (no \".\" in names)"),
    scorer: param(str((s) => s.min(1))).help("The name of the model that scores"),
  },
  {
    extends: Module,
    validate(v, issue) {
      const names = Object.keys(v.models);
      if (names.length === 0) issue("models", "needs at least one model");
      for (const name of names) {
        if (name === "" || name.includes(".")) {
          issue("models", `${JSON.stringify(name)} cannot name a model: names are non-empty and hold no "." (parameters are named <model>.<parameter>)`);
        }
      }
      if (names.length > 0 && !names.includes(v.scorer)) {
        issue("scorer", `${JSON.stringify(v.scorer)} is not one of the models ${JSON.stringify(names.sort())}`);
      }
    },
  },
);

/**
 * `xpm_torch.models.SigmoidOutput` (ours): the scores of `model`, read as logits, through a
 * sigmoid — probabilities (`output: "probability"`) or their logarithms (`"log-probability"`,
 * computed as a log-sigmoid). The losses read them so: the batchwise CrossEntropyLoss needs
 * probabilities, PointwiseCrossEntropyLoss and SoftmaxCrossEntropy take their probability
 * branches. It adds no parameter and keeps the model's parameter names.
 */
export const SigmoidOutput = defineConfig(
  "xpm_torch.models.SigmoidOutput",
  {
    model: param(configOf(Module)).help("The model whose scores are logits"),
    output: param(literal(["probability", "log-probability"])).help("What the scores become"),
  },
  { extends: Module },
);
