// Saying what a model drew rather than loaded (issue #41, item 8): a CrossEncoder over an
// encoder saved without a one-label head draws a new one, and its scores mean nothing until it is
// trained. loadModel says so (newWeights, onWarning, stderr), and so does learn()'s start line.
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterEach, describe, expect, it, vi } from "vitest";

import {
  Adam,
  CrossEncoder,
  HFEncoder,
  HingeLoss,
  Learner,
  LossTrainer,
  ParameterOptimizer,
  Random,
  TextTripletFile,
  TextTripletSampler,
  learn,
  loadModel,
  setInitTasks,
  type LearnerConfig,
} from "../ts/index.js";
import type { RunStart } from "../ts/learn-types.js";
import { createProgressDisplay, type ProgressDisplay } from "../ts/progress/display.js";
import { TINY_BERT, headlessTinyBert } from "./helpers/safetensors.js";

const HEAD = ["classifier.weight", "classifier.bias"];

const dir = mkdtempSync(join(tmpdir(), "xpm-new-weights-"));
const headless = headlessTinyBert(dir);

const drawing = CrossEncoder.C({ encoder: HFEncoder.C({ id: "tiny-bert-headless", path: headless }), max_length: 24 });
const complete = CrossEncoder.C({ encoder: HFEncoder.C({ id: "tiny-bert", path: TINY_BERT }), max_length: 24 });

function learner(model: LearnerConfig["model"]): LearnerConfig {
  const triplets = join(dir, "triplets.tsv");
  writeFileSync(triplets, Array.from({ length: 16 }, (_, i) => `query ${i}\tthe city of paris ${i}\tmany things ${i}`).join("\n") + "\n");
  return Learner.C({
    random: Random.C({ seed: 3 }),
    model,
    trainer: LossTrainer.C({
      hooks: [HingeLoss.C({ margin: 1 })],
      sampler: TextTripletSampler.C({ triplets: TextTripletFile.C({ id: "t", path: triplets }) }),
      batch_size: 4,
    }),
    optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 1e-3 }) })],
    max_epochs: 1,
    steps_per_epoch: 2,
    listeners: [],
  });
}

/** A display that keeps the run's start. */
function startRecorder(starts: RunStart[]): ProgressDisplay {
  return { start: (s) => starts.push(s), step: () => {}, validation: () => {}, epoch: () => {}, log: () => {}, finish: () => {} };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe("loadModel", () => {
  it("names the weights it drew, and says so once", () => {
    const warnings: string[] = [];
    const model = loadModel(drawing, { device: "cpu", seed: 4, onWarning: (m) => warnings.push(m) });
    expect(model.newWeights).toEqual(HEAD);
    expect(warnings).toEqual([
      "weights not in the model's files, newly drawn from seed 4: classifier.weight, classifier.bias; its scores mean nothing until it is trained",
    ]);
  });

  it("prints the warning on stderr by default, one line", () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    loadModel(drawing, { device: "cpu" });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]).toEqual([expect.stringMatching(/^xpm-torch: weights not in the model's files, newly drawn from seed 0: classifier\.weight, classifier\.bias;/)]);
  });

  it("draws nothing over an encoder saved with its head, nor over trained weights", async () => {
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    expect(loadModel(complete, { device: "cpu" }).newWeights).toEqual([]);
    const result = await learn(learner(drawing), { workspace: join(dir, "ws-load"), quiet: true });
    expect(loadModel(result.learned_model!, { device: "cpu" }).newWeights).toEqual([]);
    expect(warn).not.toHaveBeenCalled();
  });
});

describe("learn()", () => {
  it("says in its start line which weights the run drew, and not when it resumes or loads them", async () => {
    const chunks: string[] = [];
    const stream = { isTTY: false, write: (t: string) => chunks.push(t) };
    const display = createProgressDisplay(stream, { maxEpochs: 1, stepsPerEpoch: 2 });
    const first = await learn(learner(drawing), { workspace: join(dir, "ws-start"), progress: display });
    expect(chunks[0]).toBe("xpm-torch: weights not in the model's files, newly drawn from the run's seed: classifier.weight, classifier.bias\n");

    const starts: RunStart[] = [];
    await learn(learner(complete), { workspace: join(dir, "ws-complete"), progress: startRecorder(starts) });
    expect(starts[0]!.newWeights).toEqual([]);
    // An initialisation task loads the whole model, the drawn head with it.
    const loader = first.loaders.learned_model!;
    const loaded = learner(drawing);
    setInitTasks(loaded, [loader]);
    await learn(loaded, { workspace: join(dir, "ws-init"), progress: startRecorder(starts) });
    expect(starts[1]!.newWeights).toEqual([]);
  });
});
