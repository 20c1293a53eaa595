#!/usr/bin/env node
// Scores (query, passage) pairs with a cross-encoder through xpm-torch: loadModel of a
// CrossEncoder over the Hugging Face directory --model (its one-label head read from there),
// max_length 128, and `score(pairs)` given every pair in one call (it orders them by length).
// The anchor is score_sentence_transformers.py.
//
// Usage: node score-xpm-torch.mjs --model DIR --pairs FILE [--count 2000] [--batch 32]
//   [--threads 2] [--precision 32-true|bf16-mixed] [--scores FILE]
// --pairs: lines of query<TAB>passage, the first --count taken; --scores: also write the scores
// (the raw logits) there, in the pairs' order, as float32 little-endian (after the measures).
// Prints one JSON line with the fields of embed-measure.mjs, pairs for vectors: runner, call,
// pairs, seconds (the score call only), nodeMiB (before opening), openPeakMiB, openMiB, peakMiB,
// afterMiB (VmHWM and VmRSS, MiB).
import { readFileSync, writeFileSync } from "node:fs";

import { CrossEncoder, HFEncoder, loadModel } from "../../dist/index.js";
import { peakMiB, residentMiB } from "./embed-measure.mjs";

const argv = process.argv.slice(2);
const get = (name, fallback) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : fallback;
};
const [model, file] = [get("model"), get("pairs")];
if (!model || !file) throw new Error("usage: score-xpm-torch.mjs --model DIR --pairs FILE [--count N] [--batch N] [--threads N] [--scores FILE]");
const count = Number(get("count", 2000));
const batchSize = Number(get("batch", 32));
const numThreads = Number(get("threads", 2));
const precision = get("precision", "32-true");

const pairs = readFileSync(file, "utf8")
  .split("\n")
  .filter(Boolean)
  .slice(0, count)
  .map((line) => {
    const [query, document] = line.split("\t");
    return { query, document };
  });
if (pairs.length < count) throw new Error(`${file}: ${pairs.length} pairs, fewer than --count ${count}`);

const nodeMiB = peakMiB();
const scorer = loadModel(CrossEncoder.C({ encoder: HFEncoder.C({ id: "all-MiniLM-L6-v2", path: model }), max_length: 128 }), {
  device: "cpu",
  batchSize,
  numThreads,
  precision,
});
const openPeakMiB = peakMiB();
const openMiB = residentMiB();
const started = performance.now();
const scores = await scorer.score(pairs);
const seconds = (performance.now() - started) / 1000;
console.log(
  JSON.stringify({ runner: precision === "32-true" ? "xpm-torch" : `xpm-torch ${precision}`, call: pairs.length, pairs: scores.length, seconds, nodeMiB, openPeakMiB, openMiB, peakMiB: peakMiB(), afterMiB: residentMiB() }),
);
const scoresFile = get("scores");
if (scoresFile) writeFileSync(scoresFile, Buffer.from(Float32Array.from(scores).buffer));
