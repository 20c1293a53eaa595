import { configOf, defineConfig } from "../class.js";
import { param } from "../declare.js";
import { path } from "../types.js";
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
  settings: param(configOf(CheckpointSettings, ValidationSettings)).optional(),
});
