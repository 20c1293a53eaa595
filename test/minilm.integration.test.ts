// all-MiniLM-L6-v2, provisioned into the cache by `npm test` (scripts/minilm.mjs) or given by
// XPM_TORCH_MINILM: its sentence embeddings against sentence-transformers (fixture from
// scripts/fixtures/gen_minilm.py), and a cross-encoder fine-tuned from it on a template ranking task.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import {
  Adam,
  BiEncoder,
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
} from "../ts/index.js";
import { cacheDir } from "../ts/paths.js";

const MINILM = process.env.XPM_TORCH_MINILM ?? join(cacheDir(), "models", "all-MiniLM-L6-v2");

function minilm(): string {
  if (!existsSync(join(MINILM, "model.safetensors"))) {
    throw new Error(`${MINILM} holds no all-MiniLM-L6-v2: run \`node scripts/minilm.mjs\` (npm test does it)`);
  }
  return MINILM;
}

interface EmbeddingFixture {
  readonly max_length: number;
  readonly texts: readonly string[];
  readonly embeddings: readonly (readonly number[])[];
}

const COUNTRIES: readonly (readonly [string, string])[] = [
  ["France", "Paris"], ["Italy", "Rome"], ["Spain", "Madrid"], ["Germany", "Berlin"], ["Japan", "Tokyo"],
  ["Egypt", "Cairo"], ["Peru", "Lima"], ["Kenya", "Nairobi"], ["Canada", "Ottawa"], ["Greece", "Athens"],
  ["Norway", "Oslo"], ["Poland", "Warsaw"], ["Chile", "Santiago"], ["India", "New Delhi"], ["China", "Beijing"],
  ["Russia", "Moscow"], ["Cuba", "Havana"], ["Ireland", "Dublin"], ["Austria", "Vienna"], ["Portugal", "Lisbon"],
  // Held out: never seen in training.
  ["Sweden", "Stockholm"], ["Turkey", "Ankara"], ["Mexico", "Mexico City"], ["Thailand", "Bangkok"],
  ["Argentina", "Buenos Aires"], ["Hungary", "Budapest"], ["Finland", "Helsinki"], ["Denmark", "Copenhagen"],
  ["Belgium", "Brussels"], ["Vietnam", "Hanoi"],
];
const QUESTIONS = [(c: string) => `what is the capital of ${c}?`, (c: string) => `which city is the capital of ${c}`, (c: string) => `${c} capital city`];
const PASSAGES = [
  (c: string, cap: string) => `${cap} is the capital of ${c}.`,
  (c: string, cap: string) => `The capital city of ${c} is ${cap}.`,
  (c: string, cap: string) => `${c} has its government in ${cap}, its capital.`,
];

/** (question, passage about its country, passage about another country) from `countries`. */
function triplets(countries: readonly (readonly [string, string])[], count: number, seed: number): string[][] {
  let state = seed;
  const below = (n: number) => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  return Array.from({ length: count }, () => {
    const i = below(countries.length);
    const j = (i + 1 + below(countries.length - 1)) % countries.length;
    const [c, cap] = countries[i]!;
    const [oc, ocap] = countries[j]!;
    return [QUESTIONS[below(3)]!(c), PASSAGES[below(3)]!(c, cap), PASSAGES[below(3)]!(oc, ocap)];
  });
}

describe("all-MiniLM-L6-v2", () => {
  it("embeds texts as sentence-transformers does (mean pooling, normalised) to 1e-4", async () => {
    const fixture = JSON.parse(readFileSync("crates/core/tests/fixtures/hf/minilm-embeddings.json", "utf8")) as EmbeddingFixture;
    const model = BiEncoder.C({
      encoder: HFEncoder.C({ id: "all-MiniLM-L6-v2", path: minilm() }),
      pooling: "mean",
      normalize: true,
      max_length: fixture.max_length,
    });
    const vectors = await loadModel(model, { device: "cpu" }).embed(fixture.texts);
    expect(vectors).toHaveLength(fixture.texts.length);
    let worst = 0;
    vectors.forEach((v, i) => {
      expect(v).toHaveLength(384);
      v.forEach((x, k) => (worst = Math.max(worst, Math.abs(x - fixture.embeddings[i]![k]!))));
    });
    expect(worst).toBeLessThan(1e-4);
  });

  it("fine-tunes into a cross-encoder that ranks held-out question-passage pairs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "xpm-minilm-"));
    const train = join(dir, "train.tsv");
    writeFileSync(train, triplets(COUNTRIES.slice(0, 20), 400, 1).map((t) => t.join("\t")).join("\n") + "\n");
    const model = CrossEncoder.C({ encoder: HFEncoder.C({ id: "all-MiniLM-L6-v2", path: minilm() }), max_length: 32 });
    const result = await learn(
      Learner.C({
        random: Random.C({ seed: 1 }),
        model,
        trainer: LossTrainer.C({
          hooks: [HingeLoss.C({ margin: 1 })],
          sampler: TextTripletSampler.C({ triplets: TextTripletFile.C({ id: "capitals", path: train }) }),
          batch_size: 16,
          num_workers: 1,
        }),
        optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 1e-4 }) })],
        max_epochs: 2,
        steps_per_epoch: 10,
        listeners: [],
      }),
      { workspace: join(dir, "ws") },
    );
    const heldOut = triplets(COUNTRIES.slice(20), 100, 2);
    const trained = loadModel(result.learned_model!, { model, device: "cpu" });
    const positive = await trained.score(heldOut.map(([q, p]) => ({ query: q!, document: p! })));
    const negative = await trained.score(heldOut.map(([q, , n]) => ({ query: q!, document: n! })));
    const accuracy = positive.filter((s, i) => s > negative[i]!).length / heldOut.length;
    expect(accuracy).toBeGreaterThanOrEqual(0.9);
  });
});
