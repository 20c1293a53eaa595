#!/usr/bin/env node
// Embeds texts with all-MiniLM-L6-v2 through xpm-torch (a BiEncoder: mean pooling, then L2
// normalisation, its default), a batch at a time as a user's loop would (or --call N texts per
// call), in --precision (32-true or bf16-mixed); see embed-measure.mjs for what it prints.
import { BiEncoder, HFEncoder, loadModel } from "../../dist/index.js";
import { measure } from "./embed-measure.mjs";

await measure(
  "xpm-torch",
  process.argv.slice(2),
  (job) =>
    loadModel(BiEncoder.C({ encoder: HFEncoder.C({ id: "all-MiniLM-L6-v2", path: job.model }), max_length: 128 }), {
      device: "cpu",
      batchSize: job.batch,
      numThreads: job.threads,
      precision: job.precision,
    }),
  (model, batch) => model.embed(batch),
);
