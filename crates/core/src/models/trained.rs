//! [`TrainedModel`]: a trained model opened for scoring (evaluation mode, on a chosen device),
//! and [`score_rows`], which scores batches without gradients for it and for listeners.

use std::path::Path;

use super::{build, load_weights, Model, PlacedModel, ScoringScope, MODEL_INIT_STREAM};
use crate::config::AnyModule;
use crate::data::{longest_first, BatchLimit, EncodedRows, ScoreInput, TextEncoding, TokenTable};
use crate::rng::Rng;
use crate::runtime::memory::{
    install_cpu_tensor_cache, release_cpu_tensor_cache, release_idle_cpu_tensors,
};
use crate::runtime::{emulated_bf16_warning, native_cpu_bf16, Precision, Runtime};
use crate::text::TextInput;
use crate::{Error, Result};

/// A trained model opened for scoring: built from its configuration, weights loaded, in
/// evaluation mode (no dropout).
pub struct TrainedModel {
    model: Box<dyn Model>,
    device: tch::Device,
    /// How a pretrained text model encodes texts (its tokenizers).
    text: Option<TextEncoding>,
    config: AnyModule,
    /// Intra-op threads of its scoring (per thread in libtorch: set on the thread that scores).
    threads: Option<i32>,
    /// What it drew rather than loaded (see [`Model::new_weights`]).
    new_weights: Vec<String>,
    /// What the user should know of how it scores (bfloat16 emulated by this CPU).
    warnings: Vec<String>,
}

/// Restores the calling thread's intra-op thread count when dropped.
struct ThreadCount(i32);

impl Drop for ThreadCount {
    fn drop(&mut self) {
        tch::set_num_threads(self.0);
    }
}

/// How [`TrainedModel::open_with`] opens a model.
#[derive(Debug, Clone, Copy)]
pub struct OpenOptions<'a> {
    /// The weights to load (a `model.safetensors`); without, the model as its configuration
    /// builds it: a pretrained text model with its Hugging Face weights.
    pub weights: Option<&'a Path>,
    /// Where the parameters go (see [`scoring_device`]).
    pub device: tch::Device,
    /// The seed of what the configuration draws (a new head), as a Learner with
    /// `random.seed` = `seed` draws it: the model such a run starts from.
    pub seed: u64,
    /// Intra-op CPU threads while scoring and embedding (default: the process's).
    pub num_threads: Option<i32>,
    /// The precision of its forwards (see [`inference_precision`]).
    pub precision: Precision,
}

/// The precision a model scores in, by its `FabricConfiguration` spelling: `32-true`, or
/// `bf16-mixed` (float32 parameters, forwards under bfloat16 autocast, as a run's validation
/// in that precision scores; outputs in float32).
///
/// # Errors
/// [`Error::Config`] (path `precision`) for another name.
pub fn inference_precision(name: &str) -> Result<Precision> {
    match name {
        "32-true" => Ok(Precision::True32),
        "bf16-mixed" => Ok(Precision::MixedBf16),
        other => Err(Error::config(
            "precision",
            format!(
                "{other:?} is not a precision models score in: use \"32-true\" or \"bf16-mixed\""
            ),
        )),
    }
}

/// The device `name` names: `cpu`, `cuda`, `cuda:<n>`, or `auto` (the first GPU when there is
/// one, else the CPU).
///
/// # Errors
/// [`Error::Config`] (path `device`) for another name or a GPU this machine does not have.
pub fn scoring_device(name: &str) -> Result<tch::Device> {
    // Through the CUDA library: asking libtorch first would turn CUDA off for the process.
    let gpus = crate::runtime::cuda_device_count;
    let cuda = |index: usize| {
        let gpus = gpus();
        if index < gpus {
            Ok(tch::Device::Cuda(index))
        } else {
            Err(Error::config(
                "device",
                format!(
                    "CUDA device {index} is not available (this machine has {gpus}): score on \
                     \"cpu\" or \"auto\""
                ),
            ))
        }
    };
    match name {
        "cpu" => Ok(tch::Device::Cpu),
        "auto" => Ok(if gpus() > 0 {
            tch::Device::Cuda(0)
        } else {
            tch::Device::Cpu
        }),
        "cuda" => cuda(0),
        other => match other.strip_prefix("cuda:").and_then(|n| n.parse().ok()) {
            Some(index) => cuda(index),
            None => Err(Error::config(
                "device",
                format!("unknown device {other:?}: use cpu, cuda, cuda:<n> or auto"),
            )),
        },
    }
}

impl TrainedModel {
    /// Builds the model `config_json` describes (a model configuration as the TypeScript side
    /// writes it) and loads `weights` (a `model.safetensors`).
    ///
    /// # Errors
    /// [`Error::Config`] for a configuration that is not a model (path `model`),
    /// [`Error::Checkpoint`] for weights that do not fit (see [`load_weights`]).
    pub fn open(config_json: &str, weights: &Path) -> Result<Self> {
        Self::open_with(
            config_json,
            OpenOptions {
                weights: Some(weights),
                device: tch::Device::Cpu,
                seed: 0,
                num_threads: None,
                precision: Precision::True32,
            },
        )
    }

    /// [`TrainedModel::open`] as `options` say (see [`scoring_device`] for the device).
    ///
    /// # Errors
    /// As [`TrainedModel::open`]; [`Error::Config`] (path `num_threads`) for a thread count
    /// below 1; a libtorch error while moving the parameters.
    pub fn open_with(config_json: &str, options: OpenOptions<'_>) -> Result<Self> {
        let OpenOptions {
            weights,
            device,
            seed,
            num_threads,
            precision,
        } = options;
        if num_threads.is_some_and(|n| n < 1) {
            return Err(Error::config("num_threads", "must be at least 1"));
        }
        // Large tensors through the core's cache, handed back batch by batch: through glibc,
        // each freed batch raises its mapping threshold, and the next batches' tensors stay
        // in its heaps once freed (embedding 2,000 texts kept 80 MiB more resident).
        install_cpu_tensor_cache()?;
        let config = crate::config::parse_model(config_json)?;
        let mut model = build(&config, &mut Rng::derive(seed, MODEL_INIT_STREAM), "model")?;
        // Weights loaded from a file replace every parameter, those drawn included.
        let new_weights = match weights {
            Some(weights) => {
                load_weights(model.as_ref(), weights)?;
                Vec::new()
            }
            None => model.new_weights(),
        };
        let text = super::hf::text_encoding(&config, "model")?;
        model.set_training(false);
        let warnings = emulated_bf16_warning(precision, device, native_cpu_bf16(), "precision")
            .into_iter()
            .collect();
        // On its device, in its precision's dtypes, forwards under its autocast: as a run's
        // validation scores.
        let runtime = Runtime {
            device,
            devices: vec![device],
            precision,
            matmul_precision: precision.default_matmul_precision(),
            num_threads: None,
            deterministic: false,
        };
        let model: Box<dyn Model> = Box::new(PlacedModel::new(model, runtime)?);
        Ok(TrainedModel {
            model,
            device,
            text,
            config,
            threads: num_threads,
            new_weights,
            warnings,
        })
    }

    /// The parameters drawn new rather than read from its files (a cross-encoder's head over
    /// an encoder saved without one): its scores mean nothing through them.
    pub fn new_weights(&self) -> &[String] {
        &self.new_weights
    }

    /// What the user should know of how it scores: bfloat16 asked for on a CPU that emulates it.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Sets this model's thread count on the calling thread, which is about to score, until
    /// the guard drops (the thread may be Node's own, or a worker shared with other models).
    fn use_threads(&self) -> ThreadCount {
        let before = tch::get_num_threads();
        if let Some(n) = self.threads {
            tch::set_num_threads(n);
        }
        ThreadCount(before)
    }

    /// Saves a text model as Hugging Face directories under `out` (see
    /// [`super::hf::save_hf_directories`]).
    ///
    /// # Errors
    /// As [`super::hf::save_hf_directories`].
    pub fn save_hf(&self, out: &Path) -> Result<()> {
        super::hf::save_hf_directories(self.model.as_ref(), &self.config, out)
    }

    fn encoding(&self) -> Result<&TextEncoding> {
        self.text.as_ref().ok_or_else(|| {
            Error::config(
                "model",
                "this model does not read texts: scoring texts needs a CrossEncoder or a BiEncoder",
            )
        })
    }

    /// Scores of (`queries[k]`, `documents[k]`) text pairs, tokenised by the model's tokenizer,
    /// in batches within `limit` taken longest first (so that a batch is padded to nearly its
    /// own lengths), returned in the given order.
    ///
    /// # Errors
    /// [`Error::Config`] for a model that does not read texts, unequal counts or a limit of
    /// nothing; a tokenizer or libtorch error.
    pub fn score_texts(
        &self,
        queries: &[String],
        documents: &[String],
        limit: BatchLimit,
    ) -> Result<Vec<f32>> {
        same_count(queries.len(), documents.len())?;
        let encoding = self.encoding()?;
        check_limit(limit)?;
        let _threads = self.use_threads();
        let (queries, documents) = (strs(queries), strs(documents));
        let counts = encoding.token_counts(&queries, &documents)?;
        let mut scores = vec![0f32; queries.len()];
        for batch in limit.batches(&longest_first(&counts), &counts) {
            let q: Vec<&str> = batch.iter().map(|&i| queries[i]).collect();
            let d: Vec<&str> = batch.iter().map(|&i| documents[i]).collect();
            let (input, _) = encoding.encode(&q, &d)?;
            for (&i, score) in batch.iter().zip(self.score(&input, batch.len())?) {
                scores[i] = score;
            }
        }
        Ok(scores)
    }

    /// One vector per text (by the query encoder when `query`), in batches within `limit`
    /// taken longest first, returned in the given order.
    ///
    /// # Errors
    /// [`Error::Config`] for a model that does not embed texts or a limit of nothing; a
    /// tokenizer or libtorch error.
    pub fn embed_texts(
        &self,
        texts: &[String],
        query: bool,
        limit: BatchLimit,
    ) -> Result<Vec<Vec<f32>>> {
        let tokenizer = match self.encoding()? {
            TextEncoding::Separate { query: q, .. } if query => q,
            TextEncoding::Separate { document, .. } => document,
            TextEncoding::Pairs(_) => return Err(Error::config(
                "model",
                "a CrossEncoder scores pairs and does not embed texts: embed() needs a BiEncoder",
            )),
        };
        check_limit(limit)?;
        let _scope = ScoringScope::enter(self.model.as_ref())?;
        let _threads = self.use_threads();
        let texts = strs(texts);
        let counts = tokenizer.token_counts(&singles(&texts))?;
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in limit.batches(&longest_first(&counts), &counts) {
            let inputs: Vec<TextInput> =
                batch.iter().map(|&i| TextInput::Single(texts[i])).collect();
            let rows = EncodedRows::from_batch(&tokenizer.encode_batch(&inputs)?)?
                .map(&|t| Ok(t.f_to_device(self.device)?))?;
            let out = self
                .model
                .embed(&rows, query)?
                .f_to_device(tch::Device::Cpu)?
                .f_to_kind(tch::Kind::Float)?
                .f_contiguous()?;
            let width = out.size().get(1).copied().unwrap_or(0) as usize;
            let flat = Vec::<f32>::try_from(out.f_flatten(0, -1)?)?;
            for (&i, vector) in batch.iter().zip(flat.chunks(width.max(1))) {
                vectors[i] = vector.to_vec();
            }
            release_idle_cpu_tensors();
        }
        release_cpu_tensor_cache();
        Ok(vectors)
    }

    /// Scores of every row of `input`, `batch_size` rows at a time, without gradients.
    ///
    /// # Errors
    /// [`Error::Config`] when the model cannot score this kind of input; a libtorch error.
    pub fn score(&self, input: &ScoreInput, batch_size: usize) -> Result<Vec<f32>> {
        let _threads = self.use_threads();
        let scores = score_rows(self.model.as_ref(), self.device, input, batch_size);
        release_cpu_tensor_cache();
        scores
    }
}

/// Scores of every row of `input` by `model` on `device`, `batch_size` rows at a time, in
/// inference mode where the model allows it (see [`ScoringScope`]): for a model opened for scoring, or the model being trained (listeners
/// written in TypeScript score with it between epochs).
///
/// # Errors
/// [`Error::Config`] when the model cannot score this kind of input; a libtorch error.
pub fn score_rows(
    model: &dyn Model,
    device: tch::Device,
    input: &ScoreInput,
    batch_size: usize,
) -> Result<Vec<f32>> {
    let _scope = ScoringScope::enter(model)?;
    let rows = input.len();
    let mut scores = Vec::with_capacity(rows.max(0) as usize);
    let step = batch_size.max(1) as i64;
    let mut start = 0;
    while start < rows {
        let end = (start + step).min(rows);
        let index = tch::Tensor::f_arange_start(start, end, (tch::Kind::Int64, tch::Device::Cpu))?;
        let batch = input.select(&index)?.to_device(device)?;
        let out = model
            .forward(&batch)?
            .f_to_device(tch::Device::Cpu)?
            .f_to_kind(tch::Kind::Float)?;
        scores.extend(Vec::<f32>::try_from(&out)?);
        release_idle_cpu_tensors();
        start = end;
    }
    Ok(scores)
}

fn strs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

fn singles<'a>(texts: &[&'a str]) -> Vec<TextInput<'a>> {
    texts.iter().map(|t| TextInput::Single(t)).collect()
}

/// `rows` feature vectors of `width` values stored row after row, as model input.
///
/// # Errors
/// [`Error::Config`] (path `records`) when the counts disagree; a libtorch error.
pub fn features_input(values: &[f32], rows: usize, width: usize) -> Result<ScoreInput> {
    if values.len() != rows * width {
        return Err(Error::config(
            "records",
            format!(
                "{} values for {rows} rows of {width} features",
                values.len()
            ),
        ));
    }
    Ok(ScoreInput::Features(
        tch::Tensor::f_from_slice(values)?.f_view([rows as i64, width as i64])?,
    ))
}

/// Refuses a batch limit that admits nothing.
fn check_limit(limit: BatchLimit) -> Result<()> {
    if limit.rows == 0 {
        return Err(Error::config("batchSize", "must be at least 1"));
    }
    if limit.tokens == Some(0) {
        return Err(Error::config("maxBatchTokens", "must be at least 1"));
    }
    Ok(())
}

/// Refuses query and document lists of different lengths.
fn same_count(queries: usize, documents: usize) -> Result<()> {
    if queries == documents {
        return Ok(());
    }
    Err(Error::config(
        "records",
        format!("{queries} queries but {documents} documents"),
    ))
}

/// (query, document) token-id pairs as model input (0 is padding).
///
/// # Errors
/// [`Error::Config`] (path `records`) for unequal counts or an empty sequence; a libtorch error.
pub fn text_input(queries: &[Vec<i64>], documents: &[Vec<i64>]) -> Result<ScoreInput> {
    same_count(queries.len(), documents.len())?;
    let table = |rows: &[Vec<i64>], what: &str| -> Result<TokenTable> {
        let mut table = TokenTable::new();
        for (i, row) in rows.iter().enumerate() {
            if row.is_empty() || row.iter().any(|id| *id < 0) {
                return Err(Error::config(
                    format!("records[{i}].{what}"),
                    "needs at least one token id, each 0 or more",
                ));
            }
            table.push(row.iter().copied());
        }
        Ok(table)
    };
    let (q, d) = (table(queries, "query")?, table(documents, "document")?);
    Ok(ScoreInput::Text {
        query: q.batch(0..q.len())?,
        document: d.batch(0..d.len())?,
    })
}

#[cfg(test)]
mod device_tests {
    use super::*;

    #[test]
    fn devices_are_named_and_absent_gpus_refused() {
        assert_eq!(scoring_device("cpu").unwrap(), tch::Device::Cpu);
        let auto = scoring_device("auto").unwrap();
        assert_eq!(auto.is_cuda(), crate::runtime::cuda_device_count() > 0);
        let err = scoring_device("cuda:99").unwrap_err().to_string();
        assert!(
            err.starts_with("device: CUDA device 99 is not available"),
            "{err}"
        );
        let err = scoring_device("tpu").unwrap_err().to_string();
        assert!(err.contains("unknown device \"tpu\""), "{err}");
    }
}

#[cfg(test)]
mod open_tests {
    use super::*;

    const MLP: &str = r#"{"__xpmtype__":"xpm_torch.models.MLP","input_dim":4,"hidden_dims":[8],"activation":"relu","dropout":0.0,"layer_norm":false}"#;

    fn open(seed: u64, num_threads: Option<i32>) -> Result<TrainedModel> {
        TrainedModel::open_with(
            MLP,
            OpenOptions {
                weights: None,
                device: tch::Device::Cpu,
                seed,
                num_threads,
                precision: Precision::True32,
            },
        )
    }

    fn first_weights(model: &TrainedModel) -> Vec<f32> {
        let p = &model.model.named_parameters()[0].tensor;
        Vec::<f32>::try_from(p.f_flatten(0, -1).unwrap()).unwrap()
    }

    #[test]
    fn scoring_runs_on_the_thread_count_asked_for_and_gives_the_thread_its_own_back() {
        tch::set_num_threads(2);
        let model = open(0, Some(1)).unwrap();
        {
            let _threads = model.use_threads();
            assert_eq!(tch::get_num_threads(), 1);
        }
        assert_eq!(tch::get_num_threads(), 2);
        let err = open(0, Some(0)).err().unwrap().to_string();
        assert_eq!(err, "num_threads: must be at least 1");
    }

    use crate::runtime::InferenceMode;

    /// A model that scores zeros and records whether it scored in inference mode.
    struct Probe(std::sync::Mutex<Vec<bool>>);

    impl Model for Probe {
        fn forward(&self, input: &ScoreInput) -> Result<tch::Tensor> {
            self.0.lock().unwrap().push(InferenceMode::is_enabled());
            Ok(tch::Tensor::f_zeros(
                [input.len()],
                (tch::Kind::Float, tch::Device::Cpu),
            )?)
        }

        fn named_parameters(&self) -> Vec<super::super::NamedParameter> {
            Vec::new()
        }

        fn share(&mut self, _: &str, _: &str) -> Result<()> {
            Ok(())
        }
    }

    #[test]
    fn rows_are_scored_in_inference_mode() {
        let probe = Probe(Default::default());
        let input = features_input(&[0.0; 10], 5, 2).unwrap();
        let scores = score_rows(&probe, tch::Device::Cpu, &input, 2).unwrap();
        assert_eq!(scores, vec![0.0; 5]);
        assert_eq!(*probe.0.lock().unwrap(), vec![true; 3]);
        assert!(!InferenceMode::is_enabled());
    }

    #[test]
    fn what_a_configuration_draws_comes_from_the_seed_as_a_learner_draws_it() {
        let (a, b, c) = (
            open(3, None).unwrap(),
            open(3, None).unwrap(),
            open(4, None).unwrap(),
        );
        assert_eq!(first_weights(&a), first_weights(&b));
        assert_ne!(first_weights(&a), first_weights(&c));
        let config = crate::config::parse_model(MLP).unwrap();
        let learner = build(&config, &mut Rng::derive(3, MODEL_INIT_STREAM), "m").unwrap();
        let p = &learner.named_parameters()[0].tensor;
        assert_eq!(
            first_weights(&a),
            Vec::<f32>::try_from(p.f_flatten(0, -1).unwrap()).unwrap()
        );
    }
}

#[cfg(test)]
mod length_order_tests {
    use super::*;

    fn open(model: &str) -> TrainedModel {
        open_in(model, Precision::True32)
    }

    fn open_in(model: &str, precision: Precision) -> TrainedModel {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hf/bert");
        let config = format!(
            r#"{{"__xpmtype__":"xpm_torch.models.{model}","encoder":{{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"tiny-bert","path":"{dir}"}},"max_length":48}}"#
        );
        TrainedModel::open_with(
            &config,
            OpenOptions {
                weights: None,
                device: tch::Device::Cpu,
                seed: 3,
                num_threads: Some(1),
                precision,
            },
        )
        .unwrap()
    }

    /// Texts of very different lengths, long and short mixed.
    fn texts() -> Vec<String> {
        (0..11)
            .map(|i| "the city of paris and its river ".repeat((i * 7) % 5 + 1) + &i.to_string())
            .collect()
    }

    fn close(a: &[f32], b: &[f32]) {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-5, "{x} vs {y}");
        }
    }

    #[test]
    fn inputs_run_longest_first_with_equal_counts_in_the_given_order() {
        assert_eq!(longest_first(&[3, 9, 3, 12, 1]), vec![3, 1, 0, 2, 4]);
        assert_eq!(longest_first(&[]), Vec::<usize>::new());
    }

    #[test]
    fn embeddings_in_length_order_come_back_in_the_callers_order_as_one_at_a_time() {
        let model = open("BiEncoder");
        let texts = texts();
        let batched = model
            .embed_texts(&texts, false, BatchLimit::rows(4))
            .unwrap();
        assert_eq!(batched.len(), texts.len());
        for (text, vector) in texts.iter().zip(&batched) {
            close(
                vector,
                &model
                    .embed_texts(std::slice::from_ref(text), false, BatchLimit::rows(1))
                    .unwrap()[0],
            );
        }
    }

    #[test]
    fn scores_in_length_order_come_back_in_the_callers_order_as_one_at_a_time() {
        for kind in ["CrossEncoder", "BiEncoder"] {
            let model = open(kind);
            let queries: Vec<String> = texts().into_iter().rev().collect();
            let documents = texts();
            let batched = model
                .score_texts(&queries, &documents, BatchLimit::rows(4))
                .unwrap();
            let alone: Vec<f32> = queries
                .iter()
                .zip(&documents)
                .flat_map(|(q, d)| {
                    model
                        .score_texts(
                            std::slice::from_ref(q),
                            std::slice::from_ref(d),
                            BatchLimit::rows(1),
                        )
                        .unwrap()
                })
                .collect();
            close(&batched, &alone);
        }
    }

    #[test]
    fn a_token_budget_batches_by_padded_tokens_with_the_same_results() {
        let texts = texts();
        let queries: Vec<String> = texts.iter().rev().cloned().collect();
        // The texts run from 9 to 40 tokens: a budget of 64 puts one long text in a batch and
        // several short ones.
        let budget = BatchLimit {
            rows: 8,
            tokens: Some(64),
        };
        let model = open("BiEncoder");
        let by_rows = model
            .embed_texts(&texts, false, BatchLimit::rows(8))
            .unwrap();
        let by_tokens = model.embed_texts(&texts, false, budget).unwrap();
        close(&by_rows.concat(), &by_tokens.concat());
        let model = open("CrossEncoder");
        close(
            &model
                .score_texts(&queries, &texts, BatchLimit::rows(8))
                .unwrap(),
            &model.score_texts(&queries, &texts, budget).unwrap(),
        );
        let nothing = BatchLimit {
            rows: 8,
            tokens: Some(0),
        };
        let err = model.score_texts(&queries, &texts, nothing).unwrap_err();
        assert_eq!(err.to_string(), "maxBatchTokens: must be at least 1");
        let err = model
            .score_texts(&queries, &texts, BatchLimit::rows(0))
            .unwrap_err();
        assert_eq!(err.to_string(), "batchSize: must be at least 1");
    }

    /// `mixed` within bfloat16's rounding of `full` (5 % of its largest magnitude, at least
    /// `floor`) and not equal to it.
    fn bf16_close(full: &[f32], mixed: &[f32], floor: f32, what: &str) {
        let worst = full
            .iter()
            .zip(mixed)
            .map(|(x, y)| (x - y).abs())
            .fold(0f32, f32::max);
        let scale = full.iter().map(|x| x.abs()).fold(floor, f32::max);
        assert!(
            worst > 0.0 && worst < 0.05 * scale,
            "{what}: largest difference {worst}, scale {scale}"
        );
    }

    #[test]
    fn bf16_mixed_scores_and_embeds_under_autocast_close_to_float32() {
        let texts = texts();
        let queries: Vec<String> = texts.iter().rev().cloned().collect();
        let (full, mixed) = (
            open("BiEncoder"),
            open_in("BiEncoder", Precision::MixedBf16),
        );
        let (a, b) = (
            full.embed_texts(&texts, false, BatchLimit::rows(4))
                .unwrap(),
            mixed
                .embed_texts(&texts, false, BatchLimit::rows(4))
                .unwrap(),
        );
        let (a, b) = (a.concat(), b.concat());
        // bfloat16 keeps 8 bits of mantissa: close, and not the float32 values (autocast ran).
        bf16_close(&a, &b, 0.0, "embeddings");
        for kind in ["CrossEncoder", "BiEncoder"] {
            let (full, mixed) = (open(kind), open_in(kind, Precision::MixedBf16));
            let a = full
                .score_texts(&queries, &texts, BatchLimit::rows(4))
                .unwrap();
            let b = mixed
                .score_texts(&queries, &texts, BatchLimit::rows(4))
                .unwrap();
            bf16_close(&a, &b, 1.0, kind);
        }
        // Its parameters stay float32: only the forwards run in bfloat16.
        let params = mixed.model.named_parameters();
        assert!(params.iter().all(|p| p.tensor.kind() == tch::Kind::Float));
    }

    #[test]
    fn a_model_scores_in_32_true_or_bf16_mixed_only() {
        assert_eq!(inference_precision("32-true").unwrap(), Precision::True32);
        assert_eq!(
            inference_precision("bf16-mixed").unwrap(),
            Precision::MixedBf16
        );
        let err = inference_precision("16-mixed").unwrap_err().to_string();
        assert!(
            err.starts_with("precision: \"16-mixed\"") && err.contains("bf16-mixed"),
            "{err}"
        );
    }
}
