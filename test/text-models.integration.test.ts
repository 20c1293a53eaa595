import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

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
  DataError,
  IdTripletFile,
  IdTripletSampler,
  ModelDirectoryError,
  RankingValidationListener,
  TextCollection,
  TextRerankingDataset,
  TextTripletFile,
  TextTripletSampler,
  TrecQrels,
  TrecRun,
  XpmTorchError,
  learn,
  loadModel,
  type LearnerConfig,
} from "../ts/index.js";
import { loadNative } from "../ts/native.js";
import { TINY_BERT, headlessTinyBert, readSafetensors } from "./helpers/safetensors.js";

const TOPICS = ["paris", "tokyo", "river", "mountain", "train", "model", "city", "capital"];
const OFF_TOPIC = ["love", "word", "gaps", "spaced"];
const FILLER = ["the", "is", "a", "of", "what", "many", "things", "detail"];

/** Template triplets: the positive document mentions the query's topic, the negative does not. */
function writeTriplets(dir: string, count: number): string {
  let state = 7;
  const pick = <T>(items: readonly T[]): T => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return items[state % items.length]!;
  };
  const doc = (word: string) => [...Array.from({ length: 6 }, () => pick(FILLER)), word].join(" ");
  const lines = Array.from({ length: count }, () => {
    const topic = pick(TOPICS);
    return `what about ${topic}\t${doc(topic)}\t${doc(pick(OFF_TOPIC))}`;
  });
  const file = join(dir, "topics.tsv");
  writeFileSync(file, lines.join("\n") + "\n");
  return file;
}

function learner(model: LearnerConfig["model"], triplets: string): LearnerConfig {
  return Learner.C({
    random: Random.C({ seed: 3 }),
    model,
    trainer: LossTrainer.C({
      hooks: [HingeLoss.C({ margin: 1 })],
      sampler: TextTripletSampler.C({ triplets: TextTripletFile.C({ id: "topics", path: triplets }) }),
      batch_size: 16,
      num_workers: 1,
    }),
    optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 0.003 }) })],
    max_epochs: 2,
    steps_per_epoch: 20,
    listeners: [],
  });
}

describe("pretrained text models through the binding", () => {
  const dir = mkdtempSync(join(tmpdir(), "xpm-text-"));
  const triplets = writeTriplets(dir, 300);
  const encoder = HFEncoder.C({ id: "tiny-bert", path: TINY_BERT });

  it("trains a cross-encoder on text triplets, saving Hugging Face parameter names", async () => {
    const result = await learn(learner(CrossEncoder.C({ encoder, max_length: 24 }), triplets), { workspace: join(dir, "ws-cross") });
    const losses = result.epochs.map((e) => e.loss);
    expect(losses[1]!).toBeLessThan(losses[0]!);
    const saved = readSafetensors(result.learned_model!);
    expect(saved.has("bert.embeddings.word_embeddings.weight")).toBe(true);
    expect(saved.get("classifier.weight")!.shape).toEqual([1, 32]);
  });

  it("trains a bi-encoder sharing one encoder", async () => {
    const result = await learn(learner(BiEncoder.C({ encoder, max_length: 16 }), triplets), { workspace: join(dir, "ws-bi") });
    const losses = result.epochs.map((e) => e.loss);
    expect(losses[1]!).toBeLessThan(losses[0]!);
    expect(readSafetensors(result.learned_model!).has("embeddings.word_embeddings.weight")).toBe(true);
  });

  it("names a missing model directory by its config path", async () => {
    const missing = HFEncoder.C({ id: "nowhere", path: join(dir, "no-such-model") });
    await expect(learn(learner(CrossEncoder.C({ encoder: missing }), triplets), { workspace: join(dir, "ws-missing") })).rejects.toThrow(
      /learner\.model\.encoder\.path/,
    );
    await expect(learn(learner(CrossEncoder.C({ encoder: missing }), triplets), { workspace: join(dir, "ws-missing2") })).rejects.toBeInstanceOf(
      XpmTorchError,
    );
  });
});

describe("a broken pretrained model directory", () => {
  const dir = mkdtempSync(join(tmpdir(), "xpm-broken-model-"));

  it("is a ModelDirectoryError naming the file, not a checkpoint error", async () => {
    const broken = join(dir, "bert");
    cpSync(TINY_BERT, broken, { recursive: true });
    const config = JSON.parse(readFileSync(join(broken, "config.json"), "utf8")) as Record<string, unknown>;
    delete config.model_type;
    writeFileSync(join(broken, "config.json"), JSON.stringify(config));
    const encoder = HFEncoder.C({ id: "broken", path: broken });
    const failure = learn(learner(CrossEncoder.C({ encoder, max_length: 16 }), writeTriplets(dir, 8)), { workspace: join(dir, "ws") });
    await expect(failure).rejects.toBeInstanceOf(ModelDirectoryError);
    await expect(failure).rejects.toMatchObject({ code: "ERR_MODEL_DIRECTORY", file: join(broken, "config.json") });
    await expect(failure).rejects.toThrow(/^model directory: .*config\.json: /);
  });
});

describe("the MS MARCO layout through the binding", () => {
  const dir = mkdtempSync(join(tmpdir(), "xpm-msmarco-"));
  const msmarco = resolve("crates/core/tests/fixtures/msmarco");
  const collection = TextCollection.C({ id: "passages", path: join(msmarco, "collection.tsv") });
  const msmarcoLearner = (triples: string) =>
    Learner.C({
      random: Random.C({ seed: 3 }),
      model: CrossEncoder.C({ encoder: HFEncoder.C({ id: "tiny-bert", path: TINY_BERT }), max_length: 24 }),
      trainer: LossTrainer.C({
        hooks: [HingeLoss.C({ margin: 1 })],
        sampler: IdTripletSampler.C({
          queries: TextCollection.C({ id: "train-queries", path: join(msmarco, "queries.train.tsv") }),
          documents: collection,
          triplets: IdTripletFile.C({ id: "triples", path: triples }),
        }),
        batch_size: 8,
      }),
      optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 0.003 }) })],
      max_epochs: 1,
      steps_per_epoch: 5,
      listeners: [
        RankingValidationListener.C({
          id: "dev",
          dataset: TextRerankingDataset.C({
            queries: TextCollection.C({ id: "dev-queries", path: join(msmarco, "queries.dev.tsv") }),
            documents: collection,
            qrels: TrecQrels.C({ id: "qrels", path: join(msmarco, "qrels.dev.tsv") }),
            run: TrecRun.C({ id: "bm25", path: join(msmarco, "run.dev.trec") }),
          }),
          metrics: { "mrr@10": true, "ndcg@10": false },
        }),
      ],
    });

  it("trains on triplets of ids and reports re-ranking metrics and truncation", async () => {
    const result = await learn(msmarcoLearner(join(msmarco, "triples.train.tsv")), { workspace: join(dir, "ws") });
    const metrics = result.epochs[0]!.metrics;
    expect(metrics["dev/mrr@10"]!).toBeGreaterThan(0);
    expect(metrics["dev/ndcg@10"]!).toBeLessThanOrEqual(1);
    expect(metrics["dev/truncated_fraction"]).toBeCloseTo(1 / 65, 12);
    expect(result.epochs[0]!.train).toHaveProperty(["data/truncated_fraction"]);
  });

  it("names an id missing from its collection with the line that refers to it", async () => {
    const triples = join(dir, "bad-triples.tsv");
    writeFileSync(triples, "1000\t0\t1\n1000\t0\t77777\n");
    const run = learn(msmarcoLearner(triples), { workspace: join(dir, "ws-bad") });
    await expect(run).rejects.toBeInstanceOf(DataError);
    await expect(learn(msmarcoLearner(triples), { workspace: join(dir, "ws-bad2") })).rejects.toThrow(
      /bad-triples\.tsv:2:1: the document id "77777" is not in .*collection\.tsv/,
    );
  });
});

describe("opening the model a run starts from", () => {
  const dir = mkdtempSync(join(tmpdir(), "xpm-start-model-"));
  const headless = headlessTinyBert(dir);
  const model = CrossEncoder.C({ encoder: HFEncoder.C({ id: "tiny-bert-headless", path: headless }), max_length: 24 });
  const pairs = [
    { query: "what about paris", document: "the city of paris" },
    { query: "what about tokyo", document: "the love of many things" },
  ];

  it("draws the new head from the Learner's seed, as its run does", async () => {
    const triplets = writeTriplets(dir, 40);
    // A step too small to move any weight: the run's learned model is the one it started from.
    const still = (seed: number) =>
      Learner.C({
        ...learner(model, triplets),
        random: Random.C({ seed }),
        optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 1e-30 }) })],
        max_epochs: 1,
        steps_per_epoch: 1,
      });
    const result = await learn(still(5), { workspace: join(dir, "ws"), quiet: true });
    const started = await loadModel(result.learned_model!, { device: "cpu" }).score(pairs);
    const opened = await loadModel(still(5), { device: "cpu", numThreads: 1 }).score(pairs);
    opened.forEach((score, i) => expect(score).toBeCloseTo(started[i]!, 6));
    const bySeed = await loadModel(model, { device: "cpu", seed: 5 }).score(pairs);
    expect(bySeed).toEqual(opened);
    const otherSeed = await loadModel(still(6), { device: "cpu" }).score(pairs);
    expect(otherSeed[0]).not.toBeCloseTo(opened[0]!, 6);
    expect(() => loadModel(model, { numThreads: 0 })).toThrow(/^num_threads: must be at least 1/);
  });

  it("scores in bf16-mixed close to float32, says so where the CPU emulates bfloat16, and refuses other precisions", async () => {
    const full = await loadModel(model, { device: "cpu", seed: 5 }).score(pairs);
    const warnings: string[] = [];
    const mixed = await loadModel(model, { device: "cpu", seed: 5, precision: "bf16-mixed", onWarning: (m) => warnings.push(m) }).score(pairs);
    // bfloat16 keeps 8 bits of mantissa: near the float32 scores, not equal to them.
    expect(mixed).not.toEqual(full);
    mixed.forEach((score, i) => expect(Math.abs(score - full[i]!)).toBeLessThan(0.05 * Math.max(1, Math.abs(full[i]!))));
    const native = (JSON.parse(loadNative().binding.runtimeInfo()) as { cpuBf16: string[] }).cpuBf16.length > 0;
    // (The other warning: this headless encoder's head is drawn new.)
    const bf16 = warnings.filter((m) => m.includes("bfloat16"));
    expect(bf16).toEqual(native ? [] : [expect.stringMatching(/^precision: bf16-mixed on a CPU without native bfloat16/)]);
    expect(() => loadModel(model, { precision: "16-mixed" as "bf16-mixed" })).toThrow(/^precision: "16-mixed" is not a precision models score in/);
  });

  it("scores and embeds within a token budget as it does batch by batch, and refuses a budget of nothing", async () => {
    const many = Array.from({ length: 9 }, (_, i) => ({ query: `what about ${"paris ".repeat(i % 4)}`, document: "the city of paris ".repeat((i * 5) % 4 + 1) }));
    const quiet = { device: "cpu" as const, seed: 5, onWarning: () => {} };
    const byRows = await loadModel(model, { ...quiet, batchSize: 4 }).score(many);
    const byTokens = await loadModel(model, { ...quiet, batchSize: 4, maxBatchTokens: 40 }).score(many);
    byTokens.forEach((score, i) => expect(score).toBeCloseTo(byRows[i]!, 5));
    const bi = BiEncoder.C({ encoder: HFEncoder.C({ id: "tiny-bert-headless", path: headless }), max_length: 24 });
    const texts = many.map((p) => p.document);
    const vectors = await loadModel(bi, { ...quiet, maxBatchTokens: 12 }).embed(texts);
    const alone = await loadModel(bi, { ...quiet, batchSize: 1 }).embed(texts);
    vectors.forEach((v, i) => v.forEach((x, j) => expect(x).toBeCloseTo(alone[i]![j]!, 5)));
    expect(() => loadModel(model, { ...quiet, maxBatchTokens: 0 })).toThrow(/^maxBatchTokens: must be a whole number of at least 1/);
    expect(() => loadModel(model, { ...quiet, batchSize: 2.5 })).toThrow(/^batchSize: must be a whole number/);
  });
});

describe("loading a trained text model", () => {
  const dir = mkdtempSync(join(tmpdir(), "xpm-text-load-"));
  const triplets = writeTriplets(dir, 200);
  const encoder = HFEncoder.C({ id: "tiny-bert", path: TINY_BERT });

  it("scores text pairs with a cross-encoder as training did, off the JavaScript thread", async () => {
    const model = CrossEncoder.C({ encoder, max_length: 24 });
    const result = await learn(learner(model, triplets), { workspace: join(dir, "ws") });
    const trained = loadModel(result.learned_model!, { model, device: "cpu" });
    const pending = trained.score([
      { query: "what about paris", document: "the city of paris is a capital" },
      { query: "what about paris", document: "the love of many things" },
      { query: "", document: "" },
    ]);
    expect(pending).toBeInstanceOf(Promise);
    const scores = await pending;
    expect(scores).toHaveLength(3);
    expect(scores[0]!).toBeGreaterThan(scores[1]!);
    await expect(trained.embed(["paris"])).rejects.toThrow(/embed\(\) needs a BiEncoder/);

    // Saved as a Hugging Face directory, it loads back with its one-label head and scores the same.
    const saved = join(dir, "hf-cross");
    trained.saveHuggingFace(saved);
    const config = JSON.parse(readFileSync(join(saved, "config.json"), "utf8")) as Record<string, unknown>;
    expect(config.architectures).toEqual(["BertForSequenceClassification"]);
    expect(config.num_labels).toBe(1);
    expect(existsSync(join(saved, "tokenizer.json"))).toBe(true);
    const reopened = loadModel(CrossEncoder.C({ encoder: HFEncoder.C({ id: "tiny-bert-tuned", path: saved }), max_length: 24 }), { device: "cpu" });
    const again = await reopened.score([
      { query: "what about paris", document: "the city of paris is a capital" },
      { query: "what about paris", document: "the love of many things" },
      { query: "", document: "" },
    ]);
    again.forEach((s, i) => expect(s).toBeCloseTo(scores[i]!, 5));
    expect(() => trained.saveHuggingFace(saved)).toThrow(/exists/);
  });

  it("embeds texts with a bi-encoder: normalised mean vectors whose dot products are its scores", async () => {
    const model = BiEncoder.C({ encoder, max_length: 16 });
    const result = await learn(learner(model, triplets), { workspace: join(dir, "ws-bi") });
    const trained = loadModel(result.learned_model!, { model, device: "cpu" });
    const [q, d] = await trained.embed(["what about tokyo", "the tokyo train"]);
    expect(q!).toHaveLength(32);
    const norm = Math.hypot(...q!);
    expect(norm).toBeCloseTo(1, 5);
    const dot = q!.reduce((sum, v, i) => sum + v * d![i]!, 0);
    const [score] = await trained.score([{ query: "what about tokyo", document: "the tokyo train" }]);
    expect(score!).toBeCloseTo(dot, 5);

    const saved = join(dir, "hf-bi");
    trained.saveHuggingFace(saved);
    const reopened = loadModel(BiEncoder.C({ encoder: HFEncoder.C({ id: "tiny-bert-bi", path: saved }), max_length: 16 }), { device: "cpu" });
    const [q2] = await reopened.embed(["what about tokyo"]);
    q2!.forEach((v, i) => expect(v).toBeCloseTo(q![i]!, 5));
  });
});
