#!/usr/bin/env node
// Embeds texts with all-MiniLM-L6-v2 through transformers.js (ONNX Runtime for Node), a batch at
// a time, mean pooling then L2 normalisation (as xpm-torch's BiEncoder does by default and the
// model's sentence-transformers modules do); see embed-measure.mjs for what it prints. The
// package comes from --modules DIR (a node_modules folder's parent), the ONNX model from
// --model DIR (runners/export_onnx.py writes it).
import { createRequire } from "node:module";
import { basename, dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

import { measure } from "./embed-measure.mjs";

const argv = process.argv.slice(2);
const modules = argv[argv.indexOf("--modules") + 1];
if (!argv.includes("--modules")) throw new Error("usage: --modules DIR --model DIR --texts FILE ...");
const entry = createRequire(join(modules, "package.json")).resolve("@huggingface/transformers");
const { env, pipeline } = await import(pathToFileURL(entry).href);

await measure(
  "transformers.js",
  argv,
  (job) => {
    env.localModelPath = `${dirname(job.model)}/`;
    env.allowRemoteModels = false;
    return pipeline("feature-extraction", basename(job.model), {
      dtype: "fp32",
      session_options: { intraOpNumThreads: job.threads, interOpNumThreads: 1 },
    });
  },
  async (extractor, batch) => (await extractor(batch, { pooling: "mean", normalize: true })).tolist(),
);
