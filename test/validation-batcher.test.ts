import { describe, expect, it } from "vitest";

import * as c from "../ts/config/classes/index.js";
import { sealedSet } from "../ts/config/types.js";
import { ConfigError } from "../ts/errors.js";

// TrainerValidationLoss.batcher splits each validation batch (the core runs it; see
// crates/core/src/learner/trainers/loss.rs). A PredictiveBatcher is refused at once: its memory
// formula is fitted on training steps.
describe("TrainerValidationLoss.batcher", () => {
  const data = c.SyntheticLtrDataset.C({ signal_seed: 1, seed: 1, num_queries: 2, docs_per_query: 3, num_features: 2 });
  const trainer = c.LossTrainer.C({ sampler: c.PairwiseSampler.C({ dataset: data }), hooks: [c.HingeLoss.C({})] });

  it("takes a Batcher or a PowerAdaptativeBatcher", () => {
    for (const batcher of [c.Batcher.C({}), c.PowerAdaptativeBatcher.C({})]) {
      expect(c.TrainerValidationLoss.C({ id: "v", data, batch_size: 4, trainer, batcher }).batcher).toBe(batcher);
    }
  });

  it("refuses a PredictiveBatcher, saying what to use", () => {
    const batcher = c.PredictiveBatcher.C({
      formula: "a*bs + c",
      coefficient_names: ["a", "c"],
      variable_names: ["bs"],
      dims_provider: c.BatchDimsProvider.C({ probe_dims: sealedSet(c.ProbePoint.C({ values: { bs: 1 } }), c.ProbePoint.C({ values: { bs: 4 } })) }),
    });
    let error: unknown;
    try {
      c.TrainerValidationLoss.C({ id: "v", data, batch_size: 4, trainer, batcher });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(/^trainerValidationLoss\.batcher: the PredictiveBatcher is for training .*PowerAdaptativeBatcher/);
  });
});
