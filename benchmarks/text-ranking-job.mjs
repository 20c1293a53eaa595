#!/usr/bin/env node
// One MiniLM cross-encoder fine-tuning on the data of text-ranking-data.mjs, validated by
// re-ranking the dev run (MRR@10) before the first step and after every epoch. Prints one JSON
// object: the MRR@10 before training and after each epoch, the training losses, and the process's peak resident
// memory (VmHWM) when the first validation started (setup and training only) and at the end
// (with validation).
//
// Usage: node benchmarks/text-ranking-job.mjs --data DIR --model DIR [--seed 0] [--epochs 3]
//   [--steps-per-epoch 20] [--threads 2] [--max-length 128] [--no-start-validation]
//   [--workspace DIR] [--progress] [--batch-size 16] [--loss pairwise|listnet] [--slate-length 4]
//   [--precision 32-true|bf16-mixed] [--fp32-matmul highest|high|medium]
// --loss listnet trains on slates instead of triplets: SlateSampler over the training queries'
// judged candidates (qrels.train.tsv, run.train.trec: a positive and its hard negatives), a
// batch of --batch-size slates, ListNetLoss (a loss comparing the documents of a slate).
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import {
  AdamW,
  CrossEncoder,
  FabricConfiguration,
  HFEncoder,
  IdTripletFile,
  IdTripletSampler,
  Learner,
  LinearWithWarmup,
  ListNetLoss,
  LossTrainer,
  PairwiseCrossEntropyLoss,
  ParameterOptimizer,
  Random,
  RankingValidationListener,
  SlateSampler,
  TextCollection,
  TextRerankingDataset,
  TrecQrels,
  TrecRun,
  learn,
} from "../dist/index.js";

function options(argv) {
  // The last of a repeated option wins, as with argparse: seeds.mjs puts a campaign's own
  // options (`--model` of another head) after its common ones.
  const get = (name, fallback) => {
    const i = argv.lastIndexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : fallback;
  };
  const data = get("data");
  const model = get("model");
  if (!data || !model) throw new Error("usage: text-ranking-job.mjs --data DIR --model DIR [--seed N] [--epochs N] [--steps-per-epoch N] [--threads N]");
  return {
    data,
    model,
    seed: Number(get("seed", 0)),
    epochs: Number(get("epochs", 3)),
    stepsPerEpoch: Number(get("steps-per-epoch", 20)),
    threads: Number(get("threads", 2)),
    maxLength: Number(get("max-length", 128)),
    startValidation: !argv.includes("--no-start-validation"),
    workspace: get("workspace", mkdtempSync(join(tmpdir(), "xpm-text-ranking-"))),
    progress: argv.includes("--progress"),
    batchSize: Number(get("batch-size", 16)),
    loss: get("loss", "pairwise"),
    slateLength: Number(get("slate-length", 4)),
    precision: get("precision"),
    fp32Matmul: get("fp32-matmul"),
  };
}

/** The training data and its loss: triplets and pairwise cross-entropy, or slates and ListNet. */
function samplerAndLoss(job, file, documents) {
  if ((job.loss ?? "pairwise") === "pairwise") {
    const sampler = IdTripletSampler.C({
      queries: file("train-queries", "queries.train.tsv"),
      documents,
      triplets: IdTripletFile.C({ id: "triples", path: join(job.data, "triples.train.tsv") }),
    });
    return { sampler, loss: PairwiseCrossEntropyLoss.C({}) };
  }
  if (job.loss !== "listnet") throw new Error(`--loss ${job.loss}: pairwise or listnet`);
  const sampler = SlateSampler.C({
    dataset: TextRerankingDataset.C({
      queries: file("train-queries", "queries.train.tsv"),
      documents,
      qrels: TrecQrels.C({ id: "train-qrels", path: join(job.data, "qrels.train.tsv") }),
      run: TrecRun.C({ id: "train-run", path: join(job.data, "run.train.trec") }),
    }),
    slate_length: job.slateLength ?? 4,
  });
  return { sampler, loss: ListNetLoss.C({}) };
}

/** The Learner: pairwise cross-entropy (or ListNet), AdamW 3e-5 (decay 0.01), 10 % linear warm-up then linear decay. */
export function textRankingLearner(job) {
  const file = (id, name) => TextCollection.C({ id, path: join(job.data, name) });
  const documents = file("passages", "collection.tsv");
  const { sampler, loss } = samplerAndLoss(job, file, documents);
  const total = job.epochs * job.stepsPerEpoch;
  return Learner.C({
    random: Random.C({ seed: job.seed }),
    model: CrossEncoder.C({ encoder: HFEncoder.C({ id: "all-MiniLM-L6-v2", path: job.model }), max_length: job.maxLength ?? 128 }),
    trainer: LossTrainer.C({
      sampler,
      batch_size: job.batchSize ?? 16,
      hooks: [loss],
    }),
    optimizers: [
      ParameterOptimizer.C({
        optimizer: AdamW.C({ lr: 3e-5, weight_decay: 0.01 }),
        scheduler: LinearWithWarmup.C({ num_warmup_steps: Math.round(total / 10) }),
      }),
    ],
    max_epochs: job.epochs,
    steps_per_epoch: job.stepsPerEpoch,
    validate_at_start: job.startValidation ?? true,
    fabric_config: FabricConfiguration.C({
      num_threads: job.threads,
      ...(job.precision ? { precision: job.precision } : {}),
      ...(job.fp32Matmul ? { torch_fp32_precision: job.fp32Matmul } : {}),
    }),
    listeners: [
      RankingValidationListener.C({
        id: "dev",
        dataset: TextRerankingDataset.C({
          queries: file("dev-queries", "queries.dev.tsv"),
          documents,
          qrels: TrecQrels.C({ id: "qrels", path: join(job.data, "qrels.dev.tsv") }),
          run: TrecRun.C({ id: "run", path: join(job.data, "run.dev.trec") }),
        }),
        metrics: { "mrr@10": true },
      }),
    ],
  });
}

/** Peak resident memory of this process so far, in MiB (Linux). */
function peakMiB() {
  const line = readFileSync("/proc/self/status", "utf8").split("\n").find((l) => l.startsWith("VmHWM:"));
  return Number(line?.split(/\s+/)[1] ?? Number.NaN) / 1024;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const job = options(process.argv.slice(2));
  let trainingPeak;
  // The peak so far at each validation's start and each epoch's end (before its checkpoint).
  const peaks = [];
  const result = await learn(textRankingLearner(job), {
    workspace: job.workspace,
    quiet: !job.progress,
    onValidation: (v) => {
      if (v.done !== 0) return;
      if (v.epoch > 0) trainingPeak ??= peakMiB();
      peaks.push([`epoch ${v.epoch} validation starts`, peakMiB()]);
    },
    onEpoch: (e) => peaks.push([`epoch ${e.epoch} ends`, peakMiB()]),
  });
  console.log(
    JSON.stringify({
      seed: job.seed,
      mrr10: [result.start_metrics?.["dev/mrr@10"], ...result.epochs.map((e) => e.metrics["dev/mrr@10"])],
      losses: result.epochs.map((e) => e.loss),
      stepsPerSecond: result.epochs.map((e) => e.stepsPerSecond),
      validationSeconds: result.epochs.map((e) => e.validationSeconds),
      peakTrainingMiB: trainingPeak,
      peakMiB: peakMiB(),
      peaks,
      jobDir: result.jobDir,
    }),
  );
}
