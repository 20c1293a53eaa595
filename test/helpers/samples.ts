// One configuration of every buildable class, with every parameter away from its default, for
// the contract and params.json round-trip tests.
import { TYPE_KEY, type AnyConfigClass, configClassOf } from "../../ts/config/class.js";
import * as c from "../../ts/config/classes/index.js";
import { ConfigError } from "../../ts/errors.js";
import { sealedSet } from "../../ts/config/types.js";

const dataset = (seed: number) =>
  c.SyntheticLtrDataset.C({ signal_seed: 3, seed, num_queries: 7, docs_per_query: 5, num_features: 4, noise: 0.25 });
const ranking = (id: string, seed: number) =>
  c.RankingValidationListener.C({
    id,
    dataset: dataset(seed),
    metrics: { "ndcg@5": true, mrr: false, pairwise_accuracy: true, map: false, "precision@3": false, "recall@3": false, "err@5": true },
    warmup: 1,
    validation_interval: 2,
    early_stop: 4,
  });
const msmarco = (name: string) => c.TextCollection.C({ id: `msmarco/${name}`, path: `/data/${name}.tsv` });
const reranking = () =>
  c.TextRerankingDataset.C({
    queries: msmarco("queries.dev"),
    documents: msmarco("collection"),
    qrels: c.TrecQrels.C({ id: "msmarco/dev/qrels", path: "/data/qrels.dev.tsv" }),
    run: c.TrecRun.C({ id: "msmarco/dev/bm25", path: "/data/run.dev.trec" }),
    depth: 100,
    batch_size: 32,
  });
const synthetic = () =>
  c.SyntheticTokenTriplets.C({ seed: 4, num_triplets: 50, vocab_size: 300, query_length: 3, min_length: 5, max_length: 20 });
const hinge = () => c.HingeLoss.C({ weight: 0.5, margin: 2 });
const probes = () =>
  c.BatchDimsProvider.C({
    probe_dims: sealedSet(
      c.ProbePoint.C({ values: { bs: 1, l: 64 } }),
      c.ProbePoint.C({ values: { bs: 2, l: 128 } }),
      c.ProbePoint.C({ values: { bs: 4, l: 64 } }),
    ),
  });
const predictive = () =>
  c.PredictiveBatcher.C({
    formula: "c + b*bs*l + a*bs*l**2",
    coefficient_names: ["a", "b", "c"],
    variable_names: ["bs", "l"],
    batch_size_variable: "bs",
    memory_fraction: 0.5,
    extra_overhead_bytes: 1024,
    min_batch_size: 2,
    dims_provider: probes(),
    packer: c.AdaptivePacker.C({ sort_by: "l" }),
  });
const lossTrainer = () =>
  c.LossTrainer.C({
    hooks: [hinge(), c.PairwiseCrossEntropyLoss.C({ weight: 0.25 })],
    model: c.MlpScorer.C({ input_dim: 4, hidden_dims: [3] }),
    batcher: predictive(),
    sampler: c.PairwiseSampler.C({ dataset: dataset(1) }),
    batch_size: 64,
    num_workers: 0,
  });
const validationLoss = () =>
  c.TrainerValidationLoss.C({
    id: "val",
    data: dataset(9),
    batcher: c.PowerAdaptativeBatcher.C({}),
    batch_size: 32,
    trainer: lossTrainer(),
    warmup: 2,
    validation_interval: 2,
    early_stop: 4,
  });
const fabric = () =>
  c.FabricConfiguration.C({
    precision: "bf16-mixed",
    torch_fp32_precision: "medium",
    num_nodes: 2,
    devices: "4",
    strategy: "ddp",
    accelerator: "cpu",
    num_threads: 3,
    deterministic: true,
  });
const parameterOptimizer = () =>
  c.ParameterOptimizer.C({
    optimizer: c.AdamW.C({ lr: 2e-4, weight_decay: 0.05, eps: 1e-6, betas: [0.8, 0.95] }),
    scheduler: c.CosineWithWarmup.C({ num_warmup_steps: 10, num_cycles: 1.5 }),
    module: c.MlpScorer.C({ input_dim: 4, hidden_dims: [3] }),
    filter: c.RegexParameterFilter.C({ includes: ["weight$"], excludes: ["bias"] }),
  });

/** A sample per buildable class, by type id. */
export const SAMPLES: Record<string, () => object> = {
  "xpm_torch.base.Random": () => c.Random.C({ seed: 42 }),
  "xpm_torch.learner.CheckpointSettings": () => c.CheckpointSettings.C({ epoch: 3 }),
  "xpm_torch.configuration.FabricConfiguration": fabric,
  "xpm_torch.losses.pairwise.HingeLoss": hinge,
  "xpm_torch.losses.pairwise.CrossEntropyLoss": () => c.PairwiseCrossEntropyLoss.C({ weight: 2 }),
  "xpm_torch.losses.pairwise.PointwiseCrossEntropyLoss": () => c.PointwiseCrossEntropyLoss.C({ weight: 3 }),
  "xpm_torch.losses.batchwise.CrossEntropyLoss": () => c.BatchwiseCrossEntropyLoss.C({ weight: 4 }),
  "xpm_torch.losses.batchwise.SoftmaxCrossEntropy": () => c.SoftmaxCrossEntropy.C({ weight: 5 }),
  "xpm_torch.losses.listwise.ListNetLoss": () => c.ListNetLoss.C({ weight: 0.7 }),
  "xpm_torch.losses.listwise.ListMLELoss": () => c.ListMLELoss.C({ weight: 0.8 }),
  "xpm_torch.losses.listwise.RankNetLoss": () => c.RankNetLoss.C({ weight: 0.9, weighting: "squared_label_difference" }),
  "xpm_torch.losses.listwise.LambdaLoss": () =>
    c.LambdaLoss.C({ weight: 1.1, weighing_scheme: "ndcgLoss2PP", k: 5, sigma: 0.5, mu: 4, reduction: "mean", reduction_log: "natural" }),
  "xpm_torch.losses.listwise.ApproxNDCGLoss": () => c.ApproxNDCGLoss.C({ weight: 1.2, alpha: 2.5 }),
  "xpm_torch.losses.listwise.NeuralNDCGLoss": () =>
    c.NeuralNDCGLoss.C({ weight: 1.3, temperature: 0.5, powered_relevancies: false, k: 10 }),
  "xpm_torch.optim.GradientClippingHook": () => c.GradientClippingHook.C({ max_norm: 2.5 }),
  "xpm_torch.optim.GradientLogHook": () => c.GradientLogHook.C({ name: "grad/l2" }),
  "xpm_torch.batchers.Batcher": () => c.Batcher.C({}),
  "xpm_torch.batchers.PowerAdaptativeBatcher": () => c.PowerAdaptativeBatcher.C({}),
  "xpm_torch.batchers.PredictiveBatcher": predictive,
  "xpm_torch.batchers.BatchDimsProvider": probes,
  "xpm_torch.batchers.ProbePoint": () => c.ProbePoint.C({ values: { bs: 3, l: 7 } }),
  "xpm_torch.batchers.UniformPacker": () => c.UniformPacker.C({}),
  "xpm_torch.batchers.AdaptivePacker": () => c.AdaptivePacker.C({ sort_by: "len" }),
  "xpm_torch.trainers.LossTrainer": lossTrainer,
  "xpm_torch.trainers.multiple.MultipleTrainer": () =>
    c.MultipleTrainer.C({ trainers: { main: lossTrainer(), aux: lossTrainer() }, hooks: [hinge()] }),
  "xpm_torch.optim.SGD": () => c.SGD.C({ lr: 0.1, weight_decay: 0.01 }),
  "xpm_torch.optim.Adam": () => c.Adam.C({ lr: 0.02, weight_decay: 0.001, eps: 1e-7, betas: [0.5, 0.9] }),
  "xpm_torch.optim.Adafactor": () =>
    c.Adafactor.C({ lr: 0.01, relative_step: false, weight_decay: 0.1, eps: [1e-20, 1e-2], clip_threshold: 0.5, decay_rate: -0.6, beta1: 0.9, scale_parameter: false }),
  "xpm_torch.optim.AdamW": () => c.AdamW.C({ lr: 0.03, weight_decay: 0.2, eps: 1e-9, betas: [0.7, 0.99] }),
  "xpm_torch.schedulers.LinearWithWarmup": () => c.LinearWithWarmup.C({ num_warmup_steps: 100, min_factor: 0.1 }),
  "xpm_torch.schedulers.CosineWithWarmup": () => c.CosineWithWarmup.C({ num_warmup_steps: 5, num_cycles: 2 }),
  "xpm_torch.schedulers.LinearWithWarmupAndMaxEpochs": () =>
    c.LinearWithWarmupAndMaxEpochs.C({ num_warmup_steps: 1000, min_factor: 0.05, total_training_steps: 35000 }),
  "xpm_torch.optim.ParameterFilter": () => c.ParameterFilter.C({}),
  "xpm_torch.optim.RegexParameterFilter": () => c.RegexParameterFilter.C({ excludes: ["\\.bias$"] }),
  "xpm_torch.optim.ParameterOptimizer": parameterOptimizer,
  "xpm_torch.trainers.validation.TrainerValidationLoss": validationLoss,
  "xpm_torch.validation.ValidationSettings": () => c.ValidationSettings.C({ listener: validationLoss(), key: "loss" }),
  "xpm_torch.module.SimpleModuleLoader": () =>
    c.ModuleLoader.C({
      value: c.MlpScorer.C({ input_dim: 6, hidden_dims: [5] }),
      path: "/runs/best/model.safetensors",
      settings: c.ValidationSettings.C({ listener: ranking("r", 3), key: "ndcg@5" }),
    }),
  "xpm_torch.module.MultipleModel": () =>
    c.MultipleModel.C({
      models: { scorer: c.DRMM.C({ vocab_size: 300, dim: 12, bins: 11, hidden_dims: [6] }), head: c.Linear.C({ input_dim: 3 }) },
      scorer: "scorer",
    }),
  "xpm_torch.models.MlpScorer": () => c.MlpScorer.C({ input_dim: 6, hidden_dims: [5, 4] }),
  "xpm_torch.models.Linear": () => c.Linear.C({ input_dim: 7 }),
  "xpm_torch.models.MLP": () => c.MLP.C({ input_dim: 6, hidden_dims: [5, 4], activation: "tanh", dropout: 0.2, layer_norm: true }),
  "xpm_torch.models.EmbeddingDualEncoder": () => c.EmbeddingDualEncoder.C({ vocab_size: 300, dim: 12, similarity: "cosine" }),
  "xpm_torch.models.DRMM": () => c.DRMM.C({ vocab_size: 300, dim: 12, bins: 11, hidden_dims: [6, 3] }),
  "xpm_torch.models.TransformerCrossEncoder": () =>
    c.TransformerCrossEncoder.C({ vocab_size: 300, dim: 16, heads: 4, layers: 2, ffn_dim: 32, max_length: 64, dropout: 0.05 }),
  "xpm_torch.models.SigmoidOutput": () => c.SigmoidOutput.C({ model: c.Linear.C({ input_dim: 3 }), output: "log-probability" }),
  "xpm_torch.models.TorchScriptModel": () => c.TorchScriptModel.C({ id: "scripted", path: "/models/m.pt", input: "text" }),
  "xpm_torch.data.SyntheticLtrDataset": () => dataset(5),
  "xpm_torch.data.LetorDataset": () => c.LetorDataset.C({ id: "mslr/fold1/train", path: "/data/train.txt", num_features: 136 }),
  "xpm_torch.samplers.PairwiseSampler": () => c.PairwiseSampler.C({ dataset: dataset(6) }),
  "xpm_torch.samplers.PointwiseSampler": () => c.PointwiseSampler.C({ dataset: dataset(10) }),
  "xpm_torch.samplers.BatchwiseSampler": () => c.BatchwiseSampler.C({ dataset: dataset(11), group_size: 3 }),
  "xpm_torch.samplers.SlateSampler": () => c.SlateSampler.C({ dataset: dataset(12), slate_length: 4 }),
  "xpm_torch.data.TokenTripletFile": () => c.TokenTripletFile.C({ id: "msmarco/triples", path: "/data/t.tsv", format: "tsv" }),
  "xpm_torch.data.SyntheticTokenTriplets": synthetic,
  "xpm_torch.samplers.TokenTripletSampler": () => c.TokenTripletSampler.C({ triplets: synthetic() }),
  "xpm_torch.listeners.RankingValidationListener": () => ranking("rank", 7),
  "xpm_torch.models.HFEncoder": () => c.HFEncoder.C({ id: "all-MiniLM-L6-v2", path: "/models/minilm" }),
  "xpm_torch.models.CrossEncoder": () =>
    c.CrossEncoder.C({ encoder: c.HFEncoder.C({ id: "ms-marco-MiniLM-L-6-v2", path: "/models/ce" }), max_length: 256 }),
  "xpm_torch.models.BiEncoder": () =>
    c.BiEncoder.C({
      encoder: c.HFEncoder.C({ id: "docs", path: "/models/docs" }),
      query_encoder: c.HFEncoder.C({ id: "queries", path: "/models/queries" }),
      pooling: "cls",
      normalize: false,
      similarity: "cosine",
      max_length: 128,
    }),
  "xpm_torch.data.TextTripletFile": () => c.TextTripletFile.C({ id: "msmarco/text-triples", path: "/data/t.jsonl", format: "jsonl" }),
  "xpm_torch.samplers.TextTripletSampler": () =>
    c.TextTripletSampler.C({ triplets: c.TextTripletFile.C({ id: "topics", path: "/data/topics.tsv" }) }),
  "xpm_torch.data.TextPairFile": () => c.TextPairFile.C({ id: "msmarco/scored", path: "/data/scored.jsonl", format: "jsonl" }),
  "xpm_torch.samplers.TextPairSampler": () => c.TextPairSampler.C({ pairs: c.TextPairFile.C({ id: "distilled", path: "/data/p.tsv" }) }),
  "xpm_torch.data.TextCollection": () => msmarco("collection"),
  "xpm_torch.data.TrecQrels": () => c.TrecQrels.C({ id: "msmarco/dev/qrels", path: "/data/qrels.dev.tsv" }),
  "xpm_torch.data.TrecRun": () => c.TrecRun.C({ id: "msmarco/dev/bm25", path: "/data/run.dev.bm25.trec" }),
  "xpm_torch.data.IdTripletFile": () => c.IdTripletFile.C({ id: "msmarco/train/triples", path: "/data/qidpidtriples.tsv" }),
  "xpm_torch.samplers.IdTripletSampler": () =>
    c.IdTripletSampler.C({
      queries: msmarco("queries.train"),
      documents: msmarco("collection"),
      triplets: c.IdTripletFile.C({ id: "msmarco/train/triples", path: "/data/triples.tsv" }),
    }),
  "xpm_torch.data.TextRerankingDataset": () => reranking(),
  "xpm_torch.parameters.RegexParametersIterator": () =>
    c.RegexParametersIterator.C({ regex: "layers\\.0\\.", negative_regex: "bias", model: c.Linear.C({ input_dim: 2 }) }),
  "xpm_torch.parameters.InverseParametersIterator": () =>
    c.InverseParametersIterator.C({ iterator: c.RegexParametersIterator.C({ regex: "x", model: c.Linear.C({ input_dim: 2 }) }) }),
  "xpm_torch.parameters.SubParametersIterator": () =>
    c.SubParametersIterator.C({
      model: c.Linear.C({ input_dim: 2 }),
      iterator: c.RegexParametersIterator.C({ regex: "^weight$", model: c.Linear.C({ input_dim: 2 }) }),
      default: true,
    }),
  "xpm_torch.trainers.hooks.LayerFreezer": () =>
    c.LayerFreezer.C({ selector: c.RegexParametersIterator.C({ regex: "^layers\\.0\\.", model: c.MLP.C({ input_dim: 4, hidden_dims: [3, 3] }) }) }),
  "xpm_torch.trainers.hooks.LayerSharer": () =>
    c.LayerSharer.C({
      source: c.RegexParametersIterator.C({ regex: "^layers\\.1\\.weight$", model: c.MLP.C({ input_dim: 4, hidden_dims: [3, 3] }) }),
      target: c.RegexParametersIterator.C({ regex: "^layers\\.2\\.weight$", model: c.MLP.C({ input_dim: 4, hidden_dims: [3, 3] }) }),
    }),
  "xpm_torch.learner.Learner": () =>
    c.Learner.C({
      random: c.Random.C({ seed: 3 }),
      trainer: lossTrainer(),
      model: c.MlpScorer.C({ input_dim: 4, hidden_dims: [8, 8] }),
      max_epochs: 12,
      steps_per_epoch: 34,
      optimizers: [parameterOptimizer(), c.ParameterOptimizer.C({ optimizer: c.SGD.C({ lr: 0.5 }) })],
      listeners: [validationLoss(), ranking("acc", 8)],
      checkpoint_interval: 3,
      checkpoint_keep: 2,
      hooks: [c.GradientClippingHook.C({ max_norm: 1 }), c.GradientLogHook.C({})],
      fabric_config: fabric(),
    }),
};

/** Concrete classes that cannot be built yet, and why. */
export const UNBUILDABLE: Record<string, string> = {
  "xpm_torch.data.InMemoryLtrDataset": "its arrays live in JavaScript: the core receives it as a stand-in (xpm_torch.js.JsObject)",
};

/** The values of a configuration as its class's C() takes them back (constants are not settable). */
export function inputOf(config: object): Record<string, unknown> {
  const cls = configClassOf(config)!;
  return Object.fromEntries(Object.entries(config).filter(([k]) => k !== TYPE_KEY && cls.params[k]?.spec.kind !== "constant"));
}

/** The sample of `typeId` rebuilt with `changes` (`undefined` unsets), or the ConfigError refusing it. */
export function rebuilt(typeId: string, changes: Record<string, unknown>): { config: object } | { error: ConfigError } {
  const sample = SAMPLES[typeId]!();
  const cls = configClassOf(sample) as AnyConfigClass & { C(values: Record<string, unknown>): object };
  try {
    return { config: cls.C({ ...inputOf(sample), ...changes }) };
  } catch (error) {
    if (error instanceof ConfigError) return { error };
    throw error;
  }
}
