// Objects written in TypeScript reach the core through one registry (ts/extensions.ts): one
// stand-in shape, one Rust mirror (JsObjectConfig), and the bridge routes every call by key
// with no code per kind. A kind defined in this file runs end to end without touching the bridge.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";

import { describe, expect, it } from "vitest";

import { emptySide, foreignCalls, learnerWireOf } from "../ts/run/bridge.js";
import { TYPE_KEY, defineConfig } from "../ts/config/class.js";
import { LearnerListener } from "../ts/config/classes/learner.js";
import { param } from "../ts/config/declare.js";
import { int, sealedSet } from "../ts/config/types.js";
import { JS_OBJECT } from "../ts/config/wire.js";
import { unwrapOutcome } from "../ts/errors.js";
import { type Extension, registerBehaviour } from "../ts/extensions.js";
import {
  HingeLoss,
  Learner,
  LossTrainer,
  PredictiveBatcher,
  ProbePoint,
  RankingValidationListener,
  defineBatchDimsProvider,
  defineHook,
  defineListener,
  defineSampler,
  demoLearner,
  inMemoryLtrDataset,
  learn,
} from "../ts/index.js";
import { loadNative } from "../ts/native.js";
import { repoRoot } from "./helpers/node.js";

type Json = Record<string, unknown>;

/** Every stand-in in a wire, depth first. */
function standInsOf(wire: unknown): Json[] {
  if (wire === null || typeof wire !== "object") return [];
  const here = !Array.isArray(wire) && (wire as Json)[TYPE_KEY] === JS_OBJECT ? [wire as Json] : [];
  return [...here, ...Object.values(wire).flatMap(standInsOf)];
}

const Pairs = defineSampler("tests.ext.Pairs", {}, {
  kind: "pairwise",
  *records() {
    for (let i = 0; ; i++) yield { positive: [1, i % 3, 0, 0], negative: [0, 0, i % 5, 1] };
  },
});
const Dims = defineBatchDimsProvider("tests.ext.Dims", {}, {
  kind: "pairwise",
  recordDims: (_self, records) => records.map(() => ({})),
  buildProbeBatch: (_self, dims) => Array.from({ length: dims.bs! }, () => ({ positive: [1, 0, 0, 0], negative: [0, 1, 0, 0] })),
});
const StepHook = defineHook("tests.ext.Step", {}, { kind: "step" });
const InitHook = defineHook("tests.ext.Init", {}, { kind: "initialization" });
const Vote = defineListener("tests.ext.Vote", { at: param(int()) }, { call: (self, state) => (state.epoch >= self.at ? "STOP" : "NO_DECISION") });

/** A Learner with one object of every kind written in TypeScript. */
function everyKind() {
  const base = demoLearner({ max_epochs: 1, steps_per_epoch: 1, num_features: 4 });
  const heldOut = inMemoryLtrDataset({ id: "ext", features: new Float32Array(8).fill(0.5), numFeatures: 4, relevance: [1, 0], queries: [0, 0] });
  const batcher = PredictiveBatcher.C({
    formula: "a*bs + c",
    coefficient_names: ["a", "c"],
    variable_names: ["bs"],
    dims_provider: Dims.C({ probe_dims: sealedSet(ProbePoint.C({ values: { bs: 1 } }), ProbePoint.C({ values: { bs: 4 } })) }),
  });
  return Learner.C({
    ...base,
    trainer: LossTrainer.C({ sampler: Pairs.C({}), batch_size: 4, batcher, hooks: [HingeLoss.C({}), StepHook.C({}), InitHook.C({})] }),
    listeners: [RankingValidationListener.C({ id: "heldout", dataset: heldOut, metrics: { pairwise_accuracy: true } }), Vote.C({ id: "vote", at: 1 })],
  });
}

describe("objects written in TypeScript", () => {
  it("reach the core as one stand-in shape, read by one Rust mirror in every position", () => {
    const side = emptySide(1);
    const wire = learnerWireOf(everyKind(), undefined, side);
    const standIns = standInsOf(wire);
    expect(standIns.map((s) => `${s.class} ${s.kind}`).sort()).toEqual([
      "tests.ext.Dims pairwise",
      "tests.ext.Init initialization",
      "tests.ext.Pairs pairwise",
      "tests.ext.Step step",
      "tests.ext.Vote listener",
      "xpm_torch.data.InMemoryLtrDataset ltr",
    ]);
    for (const standIn of standIns) {
      expect(Object.keys(standIn)).toEqual([TYPE_KEY, "key", "class", "kind", "params"]);
      expect(side.parts.has(standIn.key as string)).toBe(true);
    }
    // A stand-in's parameters are those of its class, as any configuration's.
    expect(standIns.find((s) => s.class === "tests.ext.Vote")!.params).toEqual({ id: "vote", at: 1 });
    const { binding } = loadNative();
    for (const standIn of standIns) expect(unwrapOutcome(binding.readConfig(JSON.stringify(standIn)))).toEqual(standIn);
    // The whole Learner, with a stand-in in each position that takes one, is read as it is.
    expect(unwrapOutcome(binding.readConfig(JSON.stringify(wire)))).toEqual(wire);
  });

  it("are answered by their extension, found by key, whatever the call", async () => {
    const side = emptySide(1);
    const wire = learnerWireOf(everyKind(), undefined, side);
    const call = foreignCalls(side, { onWarning: () => {} }, { score: async () => new Float32Array() });
    const keyOf = (cls: string) => standInsOf(wire).find((s) => s.class === cls)!.key;
    const records = await call({ kind: "data", json: JSON.stringify({ kind: "records", key: keyOf("tests.ext.Pairs"), start: 0, count: 2, rank: 0, world: 1 }) });
    expect(records.floats?.positive).toEqual(Float32Array.from([1, 0, 0, 0, 1, 1, 0, 0]));
    const vote = await call({ kind: "listener", json: JSON.stringify({ key: keyOf("tests.ext.Vote"), state: { epoch: 1, step: 1, train: {} } }) });
    expect(JSON.parse(vote.json!)).toEqual({ status: "STOP", output: null });
    const unknown = await call({ kind: "data", json: JSON.stringify({ kind: "records", key: "9:nothing" }) });
    expect(unknown.failed).toMatch(/"data" call about "9:nothing", no TypeScript object of this run/);
  });

  it("of a kind the bridge has never heard of run end to end", async () => {
    // A new kind of listener, defined here: it answers the core's listener calls itself and
    // records what the core asked, through the registry alone.
    const asked: Json[] = [];
    const countdown: Extension<{ readonly stopAt: number }> = {
      name: "countdown",
      kindOf: () => "countdown",
      answerer: (config, behaviour) => ({ request }) => {
        asked.push({ id: (config as { id: string }).id, epoch: (request.state as { epoch: number }).epoch });
        const epoch = (request.state as { epoch: number }).epoch;
        return { json: JSON.stringify({ status: epoch >= behaviour.stopAt ? "STOP" : "NO_DECISION", metrics: { "countdown/left": behaviour.stopAt - epoch } }) };
      },
    };
    const Countdown = defineConfig("tests.ext.Countdown", {}, { extends: LearnerListener });
    registerBehaviour(Countdown, countdown, { stopAt: 2 });
    const base = demoLearner({ max_epochs: 5, steps_per_epoch: 2 });
    const config = Learner.C({ ...base, listeners: [Countdown.C({ id: "count" })] });
    const result = await learn(config, { workspace: mkdtempSync(join(tmpdir(), "xpm-ext-")), quiet: true });
    expect(asked).toEqual([{ id: "count", epoch: 1 }, { id: "count", epoch: 2 }]);
    expect(result.stopped).toBe("stopped after epoch 2 by listener(s) count");
    expect(result.epochs.map((e) => e.metrics["countdown/left"])).toEqual([1, 0]);
  });

  it("leave the bridge without code per kind: it imports no module that defines one", () => {
    const source = (file: string) => readFileSync(join(repoRoot, "ts", file), "utf8");
    // Its value imports, as files of ts/ (the bridge is ts/run/bridge.ts).
    const valueImports = [...source("run/bridge.ts").matchAll(/^import (?!type )[^;]*from "(\.\.?\/[\w/-]+)\.js";/gm)].map((m) => `${posix.join("run", m[1]!)}.ts`);
    expect(valueImports.length).toBeGreaterThan(3);
    const defining = valueImports.filter((file) => /\bregisterBehaviour\(/.test(source(file)) && file !== "extensions.ts");
    expect(defining).toEqual([]);
  });
});
