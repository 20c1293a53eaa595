import { describe, expect, it } from "vitest";

import { TYPE_KEY } from "../ts/config/base.js";
import { Adam, HingeLoss, Learner, PairwiseAccuracyListener, Random, SyntheticLtrDataset } from "../ts/config/classes.js";
import { demoLearner } from "../ts/demo-config.js";
import { ConfigError } from "../ts/errors.js";

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("configuration objects", () => {
  it("fill defaults, carry their type id first, and are frozen", () => {
    const adam = Adam.C({});
    expect(Object.keys(adam)[0]).toBe(TYPE_KEY);
    expect(adam).toEqual({ [TYPE_KEY]: "xpm_torch.optim.Adam", lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weight_decay: 0 });
    expect(Object.isFrozen(adam)).toBe(true);
    expect(JSON.stringify(Random.C({}))).toBe('{"__xpmtype__":"xpm_torch.base.Random","seed":0}');
  });

  it("reject unknown keys with their path", () => {
    const error = errorOf(() => HingeLoss.C({ margn: 2 } as never));
    expect(error.path).toBe("hingeLoss.margn");
    expect(error.message).toBe("hingeLoss.margn: unknown parameter");
  });

  it("reject non-finite numbers, negative sizes and wrong types", () => {
    expect(errorOf(() => Adam.C({ lr: Number.NaN })).path).toBe("adam.lr");
    expect(errorOf(() => Adam.C({ lr: Number.POSITIVE_INFINITY })).path).toBe("adam.lr");
    expect(errorOf(() => Adam.C({ betas: [0.9, 1.5] })).path).toBe("adam.betas[1]");
    const data = { signal_seed: 0, seed: 0, num_queries: 1, docs_per_query: 2, num_features: 3 };
    expect(errorOf(() => SyntheticLtrDataset.C({ ...data, num_features: -3 })).path).toBe("syntheticLtrDataset.num_features");
    expect(errorOf(() => SyntheticLtrDataset.C({ ...data, num_queries: "4" as never })).path).toBe("syntheticLtrDataset.num_queries");
  });

  it("reject a nested value that is not a configuration of the right class", () => {
    const config = demoLearner();
    const error = errorOf(() => Learner.C({ ...config, model: Adam.C({}) as never }));
    expect(error.path).toBe("learner.model");
    expect(error.message).toContain("expected a MlpScorer configuration");
  });

  it("apply the Learner's own rules", () => {
    const config = demoLearner();
    expect(errorOf(() => Learner.C({ ...config, optimizers: [] })).path).toBe("learner.optimizers");
    const listener = config.listeners[0]!;
    const twice = [listener, PairwiseAccuracyListener.C({ id: listener.id, dataset: listener.dataset })];
    const error = errorOf(() => Learner.C({ ...config, listeners: twice }));
    expect(error.message).toBe("learner.listeners: listener ids must be unique");
  });
});
