// Validation progress in units that move (issue #41, item 5): a validation of many queries
// reports as it scores, and the ETA takes its pace and its duration for what they are.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import type { ValidationProgress } from "../ts/learn-types.js";
import { ProgressState } from "../ts/progress/state.js";

const start = { epochsDone: 0, step: 0, totalSteps: 400, listenerIntervals: [1], resumedFrom: null, newWeights: [] };

/** A state over 4 epochs of 100 steps, on a clock the test moves (seconds). */
function run() {
  let ms = 0;
  const state = new ProgressState({ maxEpochs: 4, stepsPerEpoch: 100 }, () => ms);
  state.start(start);
  const at = (seconds: number) => (ms = seconds * 1000);
  /** Steps `from`..`to` of `epoch`, 10 a second, from `t` on. */
  const train = (epoch: number, from: number, to: number, t: number) => {
    for (let step = from; step <= to; step++) {
      at(t + (step - from) / 10);
      state.step({ epoch, step, totalSteps: 400 });
    }
  };
  const validate = (epoch: number, done: number, t: number) => {
    at(t);
    state.validation({ epoch, listener: "heldout", done, total: done === 0 ? 0 : 60_000, unit: done === 0 ? "" : "queries" });
  };
  const end = (epoch: number, seconds: number, t: number) => {
    at(t);
    state.epoch({ epoch, step: epoch * 100, loss: 1, train: {}, metrics: {}, stepsPerSecond: 10, validationSeconds: seconds });
  };
  const eta = () => state.snapshot()!.etaSeconds;
  return { train, validate, end, eta, state };
}

describe("the ETA around a validation", () => {
  it("gives the validation under way its own pace in queries, and counts none of it as training", () => {
    const r = run();
    r.train(1, 1, 100, 0); // steps 1..100 from 0 s to 9.9 s: 10 steps/s
    r.validate(1, 0, 10);
    r.validate(1, 20_000, 12); // a third in 2 s: 4 s left of it, 6 s for each of the 3 to come
    expect(r.eta()).toBeCloseTo(300 / 10 + 4 + 3 * 6, 5);
    r.validate(1, 60_000, 16);
    r.end(1, 6, 16);
    expect(r.eta()).toBeCloseTo(30 + 3 * 6, 5);
    // The first steps after the validation: the rate stays 10 steps/s, the 6 s not counted.
    r.train(2, 101, 111, 17);
    expect(r.state.snapshot()!.stepsPerSecond).toBeCloseTo(10, 5);
    expect(r.eta()).toBeCloseTo(289 / 10 + 3 * 6, 5);
  });

  it("leaves the first validation, which pays for warming up, out once another is timed", () => {
    const r = run();
    r.train(1, 1, 100, 0);
    r.validate(1, 0, 10);
    r.validate(1, 60_000, 19);
    r.end(1, 9, 19);
    r.train(2, 101, 200, 20);
    r.validate(2, 0, 30);
    r.validate(2, 60_000, 33);
    r.end(2, 3, 33);
    // Two validations to come, timed as the second one (3 s), not the mean with the first (6 s).
    r.train(3, 201, 202, 34);
    expect(r.eta()).toBeCloseTo(198 / 10 + 2 * 3, 5);
  });
});

describe("a validation of many queries", () => {
  it("reports its progress in queries as it scores them, not once at the end", async () => {
    const { learn } = await import("../ts/learn.js");
    const { demoLearner } = await import("../ts/demo-config.js");
    const { Learner, RankingValidationListener, SyntheticLtrDataset } = await import("../ts/index.js");
    const { MlpScorer } = await import("../ts/index.js");
    const demo = demoLearner({ max_epochs: 1, steps_per_epoch: 20, seed: 2 });
    const heldout = SyntheticLtrDataset.C({ signal_seed: 2026, seed: 2, num_queries: 60_000, docs_per_query: 20, num_features: 16, noise: 0.3 });
    const config = Learner.C({
      ...demo,
      // Wide enough that scoring 1.2 million documents takes longer than the 100 ms between reports.
      model: MlpScorer.C({ input_dim: 16, hidden_dims: [256, 256] }),
      listeners: [RankingValidationListener.C({ id: "heldout", dataset: heldout, metrics: { mrr: false } })],
    });
    const events: ValidationProgress[] = [];
    await learn(config, { workspace: mkdtempSync(join(tmpdir(), "xpm-validation-progress-")), quiet: true, onValidation: (v) => events.push(v) });
    expect(events[0]).toEqual({ epoch: 1, listener: "heldout", done: 0, total: 0, unit: "" });
    expect(events.at(-1)).toEqual({ epoch: 1, listener: "heldout", done: 60_000, total: 60_000, unit: "queries" });
    const counted = events.slice(1).map((e) => e.done);
    expect(counted).toEqual([...counted].sort((a, b) => a - b));
    // Reported along the way (every 100 ms at most), not only when all is scored.
    expect(counted.filter((done) => done > 0 && done < 60_000).length).toBeGreaterThan(0);
  });
});
