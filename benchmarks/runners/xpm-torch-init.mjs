#!/usr/bin/env node
// The model xpm-torch's text-ranking job starts from for a seed — the pretrained encoder with
// the new head the Learner draws from its seed — written as a Hugging Face directory: for the
// reference loop to start from (runners/text_ranking_torch.py --init DIR), and for the
// statistics of the draw (hard_negatives_ingredients.py).
//
// Usage: node benchmarks/runners/xpm-torch-init.mjs --data DIR --model DIR --seed N --out DIR
import { loadModel } from "../../dist/index.js";
import { textRankingLearner } from "../text-ranking-job.mjs";

const argv = process.argv.slice(2);
const get = (name) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const [data, model, seed, out] = [get("data"), get("model"), get("seed"), get("out")];
if (!data || !model || seed === undefined || !out) {
  console.error("usage: xpm-torch-init.mjs --data DIR --model DIR --seed N --out DIR");
  process.exit(2);
}
const learner = textRankingLearner({ data, model, seed: Number(seed), epochs: 1, stepsPerEpoch: 60, threads: 1 });
loadModel(learner).saveHuggingFace(out);
console.log(out);
