// A Learner's outputs as loaders, known before it runs: where each model will be is fixed by its
// job directory, so later stages can be configured (and submitted) at once. The loaders of a
// run's result are made by the same `loaderOf` (ts/run/outputs.ts).
import { join } from "node:path";

import { configClassOf } from "../config/class.js";
import { RankingValidationListener } from "../config/classes/validation.js";
import { TrainerValidationLoss, ValidationSettings } from "../config/classes/validation.js";
import { ConfigError } from "../errors.js";
import type { LearnerConfig, ModuleLoaderConfig } from "../learn-types.js";
import { loaderOf } from "../run/outputs.js";
import type { Job } from "../workspace/job.js";

/** Where the core puts a model's weights inside a checkpoint directory (`last/`, `epoch-…/`). */
const CHECKPOINT_MODEL = join("model", "model.safetensors");
const WEIGHTS = "model.safetensors";

/** The Learner's outputs, before or after it ran. */
export interface PlannedLoaders {
  /** The model as training left it (`checkpoints/last`). */
  readonly learned: ModuleLoaderConfig;
  /**
   * The best model of a validation listener for one metric (`"loss"` for TrainerValidationLoss).
   * @throws ConfigError when the listener does not exist or does not keep that metric's model.
   */
  best(listener: string, metric: string): ModuleLoaderConfig;
}

/** The loaders of `config`'s outputs in its job directory `job`. */
export function plannedLoaders(config: LearnerConfig, job: Job): PlannedLoaders {
  const generated = (owner: object, name: string): string => {
    const path = job.paths.get(owner)?.get(name);
    if (path === undefined) throw new ConfigError("learner", `has no generated path ${name} (internal)`);
    return path;
  };
  return {
    learned: loaderOf(config, join(generated(config, "checkpointspath"), "last", CHECKPOINT_MODEL)),
    best(id, metric) {
      const index = config.listeners.findIndex((l) => l.id === id);
      const where = `learner.listeners[${index}]`;
      if (index < 0) {
        const ids = config.listeners.map((l) => JSON.stringify(l.id));
        throw new ConfigError("learner.listeners", `no listener has the id ${JSON.stringify(id)} (ids: ${ids.join(", ") || "none"})`);
      }
      const listener = config.listeners[index]!;
      const settings = ValidationSettings.C({ listener, key: metric });
      if (RankingValidationListener.is(listener)) {
        const kept = Object.entries(listener.metrics).filter(([, keep]) => keep).map(([name]) => name);
        if (!kept.includes(metric)) {
          throw new ConfigError(`${where}.metrics`, `keeps no model for ${JSON.stringify(metric)}: set it to true (models kept: ${kept.join(", ") || "none"})`);
        }
        return loaderOf(config, join(generated(listener, "bestpath"), metric, WEIGHTS), settings);
      }
      if (TrainerValidationLoss.is(listener)) {
        if (metric !== "loss") throw new ConfigError(`${where}`, `a TrainerValidationLoss keeps the model of its lowest "loss", not ${JSON.stringify(metric)}`);
        return loaderOf(config, join(generated(listener, "bestpath"), WEIGHTS), settings);
      }
      throw new ConfigError(where, `is a ${configClassOf(listener)?.typeId}: its best models are known only once it ran (use the result's loaders)`);
    },
  };
}
