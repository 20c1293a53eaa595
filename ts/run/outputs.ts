// A Learner's outputs as loaders: configurations of its saved models, marked as its outputs, so
// that whatever uses one depends on that training. The result of a run lists them (`loaders`);
// an experiment plans them before the run (ts/experiment/outputs.ts).
import { CheckpointSettings } from "../config/classes/learner.js";
import { ModuleLoader } from "../config/classes/module.js";
import { ValidationSettings } from "../config/classes/validation.js";
import { markAsOutputOf } from "../config/identifier-marks.js";
import type { LearnerConfig, LearnerLoaders, ModuleLoaderConfig } from "../learn-types.js";
import type { StoredResult } from "./train.js";

/**
 * A loader of the weights at `path`, marked as an output of the Learner `config`: its identifier
 * depends on the Learner's, so whatever uses it depends on that training.
 */
export function loaderOf(config: LearnerConfig, path: string, settings?: object): ModuleLoaderConfig {
  return markAsOutputOf(ModuleLoader.C({ value: config.model, path, ...(settings ? { settings: settings as never } : {}) }), config);
}

/** The loader of a checkpoint's model (`epoch` set) or of the final model. */
export function checkpointLoaderOf(config: LearnerConfig, path: string, epoch?: number): ModuleLoaderConfig {
  return epoch === undefined ? loaderOf(config, path) : loaderOf(config, path, CheckpointSettings.C({ epoch }));
}

/** The models a run kept, as loaders marked as the Learner's outputs. */
export function loadersOf(config: LearnerConfig, result: StoredResult): LearnerLoaders {
  const checkpoints = Object.fromEntries(
    Object.entries(result.checkpoints).map(([epoch, path]) => [epoch, checkpointLoaderOf(config, path, Number(epoch))]),
  );
  const listeners: Record<string, Record<string, ModuleLoaderConfig>> = {};
  for (const listener of config.listeners) {
    const output = result.listeners[listener.id];
    if (typeof output !== "object" || output === null) continue;
    for (const [key, best] of Object.entries(output as Record<string, unknown>)) {
      const model = (best as { model?: unknown } | null)?.model;
      if (typeof model !== "string") continue;
      (listeners[listener.id] ??= {})[key] = loaderOf(config, model, ValidationSettings.C({ listener, key }));
    }
  }
  return { learned_model: result.learned_model === null ? null : checkpointLoaderOf(config, result.learned_model), checkpoints, listeners };
}
