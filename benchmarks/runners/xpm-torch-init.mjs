#!/usr/bin/env node
// The model xpm-torch's text-ranking job starts from for a seed — the pretrained encoder with
// the new head the Learner draws from its seed:
//   --out DIR     written as a Hugging Face directory, for the reference loop to start from
//                 (runners/text_ranking_torch.py --init DIR);
//   --heads N     the heads of seeds 0..N-1 only, one JSON line each ({seed, weight, bias}) on
//                 standard output, for the statistics of the draw (hard_negatives_ingredients.py).
//
// Usage: node benchmarks/runners/xpm-torch-init.mjs --data DIR --model DIR (--seed N --out DIR | --heads N)
import { mkdtempSync, openSync, readSync, closeSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { loadModel } from "../../dist/index.js";
import { textRankingLearner } from "../text-ranking-job.mjs";

const argv = process.argv.slice(2);
const get = (name) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? argv[i + 1] : undefined;
};
const [data, model, seed, out, heads] = [get("data"), get("model"), get("seed"), get("out"), get("heads")];
if (!data || !model || !((seed !== undefined && out) || heads)) {
  console.error("usage: xpm-torch-init.mjs --data DIR --model DIR (--seed N --out DIR | --heads N)");
  process.exit(2);
}

const start = (s) => loadModel(textRankingLearner({ data, model, seed: s, epochs: 1, stepsPerEpoch: 60, threads: 1 }));

/** Float32 tensors of a safetensors file, by name, reading only those asked for. */
function tensors(file, names) {
  const fd = openSync(file, "r");
  try {
    const size = Buffer.alloc(8);
    readSync(fd, size, 0, 8, 0);
    const headerLength = Number(size.readBigUInt64LE());
    const header = Buffer.alloc(headerLength);
    readSync(fd, header, 0, headerLength, 8);
    const entries = JSON.parse(header.toString("utf8"));
    return Object.fromEntries(
      names.map((name) => {
        const [from, to] = entries[name].data_offsets;
        const bytes = Buffer.alloc(to - from);
        readSync(fd, bytes, 0, to - from, 8 + headerLength + from);
        return [name, Array.from(new Float32Array(bytes.buffer, bytes.byteOffset, (to - from) / 4))];
      }),
    );
  } finally {
    closeSync(fd);
  }
}

if (heads) {
  for (let s = 0; s < Number(heads); s++) {
    const parent = mkdtempSync(join(tmpdir(), "xpm-head-"));
    const dir = join(parent, "model");
    try {
      start(s).saveHuggingFace(dir);
      const t = tensors(join(dir, "model.safetensors"), ["classifier.weight", "classifier.bias"]);
      console.log(JSON.stringify({ seed: s, weight: t["classifier.weight"], bias: t["classifier.bias"] }));
    } finally {
      rmSync(parent, { recursive: true, force: true });
    }
  }
} else {
  start(Number(seed)).saveHuggingFace(out);
  console.log(out);
}
