// Models by Hub id with all-MiniLM-L6-v2 (provisioned by `npm test`, scripts/minilm.mjs), served
// by the test's own Hub (test/helpers/hub-server.ts), and Python's own huggingface_hub on both
// sides of the cache (scripts/hf-hub-python.sh): a cache Python filled trains offline, a cache we
// filled is Python's, `loadModel` opens a model by id, and identifiers ignore the cache.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

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
  downloadModel,
  learn,
  loadModel,
} from "../ts/index.js";
import { identifierOf } from "../ts/config/identifiers.js";
import { hubModelConfig } from "../ts/config/hub-model.js";
import { cacheDir } from "../ts/paths.js";
import { type FakeHub, fakeCommit, startFakeHub } from "./helpers/hub-server.js";

const MINILM = process.env.XPM_TORCH_MINILM ?? join(cacheDir(), "models", "all-MiniLM-L6-v2");
const ID = "sentence-transformers/all-MiniLM-L6-v2";
const COMMIT = fakeCommit("minilm");
const FILES = [
  "config.json",
  "tokenizer.json",
  "model.safetensors",
  "tokenizer_config.json",
  "special_tokens_map.json",
  "vocab.txt",
  "modules.json",
  "sentence_bert_config.json",
  "config_sentence_transformers.json",
  "1_Pooling/config.json",
];
const HUB_VARIABLES = ["HF_HUB_CACHE", "HF_ENDPOINT", "HF_HUB_OFFLINE", "HF_HOME", "HF_TOKEN"] as const;

interface ScannedCache {
  readonly repos: readonly { id: string; type: string; revisions: readonly { commit: string; refs: string[]; files: string[] }[] }[];
  readonly warnings: readonly string[];
}

let hub: FakeHub;
const saved = Object.fromEntries(HUB_VARIABLES.map((name) => [name, process.env[name]]));

/** Python's huggingface_hub; asynchronous, for the Hub it talks to is served by this process. */
async function python(args: readonly string[], env: NodeJS.ProcessEnv): Promise<string> {
  const { stdout } = await promisify(execFile)("bash", ["scripts/hf-hub-python.sh", ...args], { env: { ...process.env, ...env }, encoding: "utf8" });
  return stdout.trim();
}

/** The Hub variables of this process (learn() and loadModel read them), the others unset. */
function useHub(env: Partial<Record<(typeof HUB_VARIABLES)[number], string>>): void {
  for (const name of HUB_VARIABLES) {
    if (env[name] === undefined) delete process.env[name];
    else process.env[name] = env[name];
  }
}

function tempDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `xpm-hub-${name}-`));
}

beforeAll(async () => {
  if (!existsSync(join(MINILM, "model.safetensors"))) {
    throw new Error(`${MINILM} holds no all-MiniLM-L6-v2: run \`node scripts/minilm.mjs\` (npm test does it)`);
  }
  const files = Object.fromEntries(FILES.map((file) => [file, readFileSync(join(MINILM, file))]));
  hub = await startFakeHub([{ id: ID, refs: { main: COMMIT }, commits: { [COMMIT]: files } }]);
  await python(["--provision"], {});
}, 300_000);

afterAll(async () => {
  await hub.close();
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

function tripletFile(dir: string): string {
  const file = join(dir, "train.tsv");
  const countries = ["France", "Spain", "Italy", "Peru", "Chile", "Kenya", "Japan", "Nepal"];
  const lines = countries.map((c, i) => `capital of ${c}\tThe capital of ${c} is a city.\tThe river of ${countries[(i + 1) % 8]} is long.`);
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

function crossEncoderLearner(train: string) {
  return Learner.C({
    random: Random.C({ seed: 1 }),
    model: CrossEncoder.C({ encoder: HFEncoder.C({ id: ID }), max_length: 32 }),
    trainer: LossTrainer.C({
      hooks: [HingeLoss.C({ margin: 1 })],
      sampler: TextTripletSampler.C({ triplets: TextTripletFile.C({ id: "capitals", path: train }) }),
      batch_size: 4,
      num_workers: 1,
    }),
    optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 1e-5 }) })],
    max_epochs: 1,
    steps_per_epoch: 2,
    listeners: [],
  });
}

describe("models by Hub id", () => {
  it("trains and scores offline from a cache that Python's hf_hub_download filled", async () => {
    const dir = tempDir("python-filled");
    const cache = join(dir, "hub");
    await python(["fill", ID, ...FILES], { HF_HUB_CACHE: cache, HF_ENDPOINT: hub.endpoint });
    const before = hub.requests.length;
    useHub({ HF_HUB_CACHE: cache, HF_HUB_OFFLINE: "1", HF_ENDPOINT: hub.endpoint });
    const result = await learn(crossEncoderLearner(tripletFile(dir)), { workspace: join(dir, "ws"), quiet: true });
    expect(hub.requests.length).toBe(before);
    expect(result.epochs).toHaveLength(1);
    expect(result.pretrained).toEqual([{ id: ID, revision: "main", commit: COMMIT }]);
    const recorded = JSON.parse(readFileSync(join(result.jobDir, ".experimaestro", "pretrained.json"), "utf8")) as unknown;
    expect(recorded).toEqual(result.pretrained);
    const trained = loadModel(result.learned_model!, { device: "cpu" });
    const [score] = await trained.score([{ query: "capital of France", document: "The capital of France is a city." }]);
    expect(Number.isFinite(score)).toBe(true);
    // The stored result gives the same record when the job is asked for again.
    const again = await learn(crossEncoderLearner(join(dir, "train.tsv")), { workspace: join(dir, "ws"), quiet: true });
    expect(again.cached).toBe(true);
    expect(again.pretrained).toEqual(result.pretrained);
  }, 300_000);

  it("downloads into an empty cache that Python's huggingface_hub then lists and reads", async () => {
    const cache = join(tempDir("ours"), "hub");
    useHub({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.endpoint });
    const first = hub.requests.length;
    const model = await downloadModel(ID, { quiet: true });
    expect(model).toMatchObject({ id: ID, revision: "main", commit: COMMIT });
    expect(hub.requests.length).toBeGreaterThan(first);
    const scanned = JSON.parse(await python(["scan"], { HF_HUB_CACHE: cache })) as ScannedCache;
    expect(scanned.warnings).toEqual([]);
    expect(scanned.repos).toHaveLength(1);
    expect(scanned.repos[0]).toMatchObject({ id: ID, type: "model" });
    expect(scanned.repos[0]!.revisions).toEqual([{ commit: COMMIT, refs: ["main"], files: [...FILES].sort() }]);
    const read = await python(["read", ID, "model.safetensors"], { HF_HUB_CACHE: cache, HF_HUB_OFFLINE: "1" });
    expect(read).toBe(join(cache, "models--sentence-transformers--all-MiniLM-L6-v2", "snapshots", COMMIT, "model.safetensors"));
  }, 300_000);

  it("opens a model by id as its sentence-transformers files describe it, equal to the same directory by path", async () => {
    const cache = join(tempDir("load"), "hub");
    useHub({ HF_HUB_CACHE: cache, HF_ENDPOINT: hub.endpoint });
    expect(() => loadModel(ID)).toThrow(/not in the Hugging Face cache .*npx xpm-torch download sentence-transformers\/all-MiniLM-L6-v2/);
    await downloadModel(ID, { quiet: true });
    const config = hubModelConfig(ID);
    expect(BiEncoder.is(config)).toBe(true);
    expect(config).toMatchObject({ pooling: "mean", normalize: true, max_length: 256 });
    const texts = ["The capital of France is Paris.", "rivers"];
    const byId = await loadModel(ID, { device: "cpu" }).embed(texts);
    const byPath = await loadModel(
      BiEncoder.C({ encoder: HFEncoder.C({ id: "all-MiniLM-L6-v2", path: MINILM }), pooling: "mean", normalize: true, max_length: 256 }),
      { device: "cpu" },
    ).embed(texts);
    expect(byId.map((v) => [...v])).toEqual(byPath.map((v) => [...v]));
  }, 300_000);

  it("names a model in identifiers by what the configuration says, never by the cache's place", async () => {
    const dir = tempDir("identity");
    const train = tripletFile(dir);
    useHub({ HF_HUB_CACHE: join(dir, "a") });
    const a = identifierOf(crossEncoderLearner(train));
    useHub({ HF_HUB_CACHE: join(dir, "b"), HF_HOME: join(dir, "home") });
    expect(identifierOf(crossEncoderLearner(train))).toBe(a);
    const pinned = CrossEncoder.C({ encoder: HFEncoder.C({ id: ID, revision: COMMIT }), max_length: 32 });
    const unpinned = CrossEncoder.C({ encoder: HFEncoder.C({ id: ID }), max_length: 32 });
    expect(identifierOf(pinned)).not.toBe(identifierOf(unpinned));
  });

  it("reads a one-label sequence-classification head as a cross-encoder", async () => {
    const dir = tempDir("cross");
    const commit = fakeCommit("cross");
    const files = Object.fromEntries(["tokenizer.json", "model.safetensors"].map((file) => [file, readFileSync(join(MINILM, file))]));
    const config = { ...JSON.parse(readFileSync(join(MINILM, "config.json"), "utf8")), architectures: ["BertForSequenceClassification"], id2label: { 0: "LABEL_0" } };
    const crossHub = await startFakeHub([{ id: "cross-encoder/tiny", refs: { main: commit }, commits: { [commit]: { ...files, "config.json": JSON.stringify(config) } } }]);
    try {
      useHub({ HF_HUB_CACHE: join(dir, "hub"), HF_ENDPOINT: crossHub.endpoint });
      await downloadModel("cross-encoder/tiny", { quiet: true });
      const model = hubModelConfig("cross-encoder/tiny");
      expect(CrossEncoder.is(model)).toBe(true);
      expect(model.encoder).toMatchObject({ id: "cross-encoder/tiny" });
    } finally {
      await crossHub.close();
    }
  }, 300_000);
});
