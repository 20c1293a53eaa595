//! The Rust half of `benchmarks/`: writes the shared synthetic LTR data as LETOR files, and runs
//! the side-by-side training job as a loop written directly against tch (the limit the
//! framework is measured against).
//!
//! ```text
//! side_by_side data  <dir> <features> <train queries> <held-out queries> <docs per query>
//! side_by_side train <train.letor> <heldout.letor> <features> <hidden,dims> <batch> <steps> <epochs> <lr> <seed> <optimizer>
//! side_by_side learner <train.letor> <heldout.letor> <features> <hidden,dims> <batch> <steps> <epochs> <lr> <seed>
//! side_by_side tokenize <model dir> <triplets.tsv> <pairs per batch> <rounds> <max length>
//! ```
//!
//! `learner` runs the framework's own loop (`learn()`) on the job's configuration, as the
//! TypeScript `learn()` hands it over, without Node: the gap between the two is the binding's.
//!
//! `<optimizer>` is `nn-adam`, tch's own Adam (libtorch's C++ `torch::optim::Adam`: what a tch
//! user reaches for), or `fused-adam`, the core's Adam over libtorch's fused kernel: the same
//! kernels as the framework's step with none of its loop, so the gap to it is the framework's
//! overhead.
//!
//! `train` prints one JSON line: training seconds (the loop only), the mean loss of each epoch,
//! the pairwise accuracy on the held-out file.
//!
//! `tokenize` encodes the (query, positive) and (query, negative) pairs of a text triplet file
//! `rounds` times, in batches, as the `TextTripletSampler` does for a cross-encoder (the
//! `tokenizers` crate, truncation longest first, padding to the batch's longest, the tensors),
//! and prints the pair count, the real token count and the seconds (`benchmarks/minilm.py`).
// A benchmark driver may stop at the first failure, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use tch::nn::{self, Init, OptimizerConfig};
use tch::{Device, Kind, Tensor};
use xpm_torch_core::config::{parse_learner, AdamConfig, SyntheticLtrDatasetConfig};
use xpm_torch_core::data::{read_letor, synthetic_ltr, LtrDataset};
use xpm_torch_core::learner::{learn, NoObserver};
use xpm_torch_core::optim::{self, Optimizer};

/// The planted signal shared by the training and held-out files.
const SIGNAL_SEED: u64 = 2026;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("data") if args.len() == 6 => write_data(&args[1..]),
        Some("train") if args.len() == 11 => train(&args[1..]),
        Some("learner") if args.len() == 10 => learner(&args[1..]),
        Some("tokenize") if args.len() == 6 => tokenize(&args[1..]),
        _ => {
            eprintln!("usage: side_by_side data <dir> <features> <train queries> <held-out queries> <docs per query>\n       side_by_side train <train> <heldout> <features> <hidden,dims> <batch> <steps> <epochs> <lr> <seed> nn-adam|fused-adam\n       side_by_side learner <train> <heldout> <features> <hidden,dims> <batch> <steps> <epochs> <lr> <seed>\n       side_by_side tokenize <model dir> <triplets.tsv> <pairs per batch> <rounds> <max length>");
            std::process::exit(2);
        }
    }
}

fn number<T: std::str::FromStr>(text: &str, what: &str) -> T {
    text.parse()
        .unwrap_or_else(|_| panic!("{what}: {text:?} is not a number"))
}

fn write_data(args: &[String]) {
    let dir = Path::new(&args[0]);
    std::fs::create_dir_all(dir).expect("creating the data directory");
    let num_features = number(&args[1], "features");
    let docs_per_query = number(&args[4], "docs per query");
    for (name, seed, queries) in [("train", 1, &args[2]), ("heldout", 2, &args[3])] {
        let config = SyntheticLtrDatasetConfig {
            signal_seed: SIGNAL_SEED,
            seed,
            num_queries: number(queries, "queries"),
            docs_per_query,
            num_features,
            noise: 0.3,
        };
        let data = synthetic_ltr(&config);
        let path = dir.join(format!("{name}.letor"));
        std::fs::write(&path, letor_text(&data)).expect("writing the LETOR file");
    }
}

/// LETOR lines; `{}` prints the shortest text that reads back as the same f32.
fn letor_text(data: &LtrDataset) -> String {
    let mut text = String::new();
    for (q, bounds) in data.query_bounds.windows(2).enumerate() {
        for doc in bounds[0]..bounds[1] {
            write!(text, "{} qid:{}", data.relevance[doc], q + 1).unwrap();
            let row = &data.features[doc * data.num_features..(doc + 1) * data.num_features];
            for (i, v) in row.iter().enumerate() {
                write!(text, " {}:{}", i + 1, v).unwrap();
            }
            text.push('\n');
        }
    }
    text
}

/// Features tensor and the `P × 2` (preferred, other) row pairs of a LETOR file.
fn load(path: &str, num_features: usize) -> (Tensor, Tensor) {
    let data = read_letor(Path::new(path), Some(num_features))
        .unwrap()
        .dataset;
    let pairs: Vec<i64> = data
        .preference_pairs()
        .into_iter()
        .flat_map(|(p, n)| [i64::from(p), i64::from(n)])
        .collect();
    let pairs = Tensor::from_slice(&pairs).view([-1, 2]);
    (data.features_tensor().unwrap(), pairs)
}

struct Mlp {
    layers: Vec<(Tensor, Tensor)>,
}

impl Mlp {
    /// `nn.Linear`'s default distribution: weights and biases uniform in ±1/sqrt(fan_in).
    fn new(vs: &nn::VarStore, widths: &[i64]) -> Self {
        let root = vs.root();
        let layers = widths
            .windows(2)
            .enumerate()
            .map(|(i, pair)| {
                let bound = 1.0 / (pair[0] as f64).sqrt();
                let init = Init::Uniform {
                    lo: -bound,
                    up: bound,
                };
                (
                    root.var(&format!("w{i}"), &[pair[1], pair[0]], init),
                    root.var(&format!("b{i}"), &[pair[1]], init),
                )
            })
            .collect();
        Mlp { layers }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let last = self.layers.len() - 1;
        let mut x = x.shallow_clone();
        for (i, (w, b)) in self.layers.iter().enumerate() {
            x = x.linear(w, Some(b));
            if i < last {
                x = x.relu();
            }
        }
        x.squeeze_dim(-1)
    }
}

/// The two optimizers a raw loop may use; both are `torch.optim.Adam`'s defaults.
enum Adam {
    Tch(nn::Optimizer),
    Fused(optim::Adam),
}

impl Adam {
    fn new(name: &str, vs: &nn::VarStore, lr: f64) -> Self {
        match name {
            "nn-adam" => Adam::Tch(nn::Adam::default().build(vs, lr).unwrap()),
            "fused-adam" => {
                let config = AdamConfig {
                    lr,
                    weight_decay: 0.0,
                    eps: 1e-8,
                    betas: (0.9, 0.999),
                };
                Adam::Fused(optim::Adam::new(config, false, vs.trainable_variables()).unwrap())
            }
            other => panic!("optimizer: {other:?} is neither nn-adam nor fused-adam"),
        }
    }

    fn zero_grad(&mut self) {
        match self {
            Adam::Tch(opt) => opt.zero_grad(),
            Adam::Fused(opt) => optim::zero_grad(opt.parameters()).unwrap(),
        }
    }

    fn step(&mut self, lr: f64) {
        match self {
            Adam::Tch(opt) => opt.step(),
            Adam::Fused(opt) => opt.step(lr).unwrap(),
        }
    }
}

fn train(args: &[String]) {
    let num_features: usize = number(&args[2], "features");
    let hidden: Vec<i64> = args[3]
        .split(',')
        .map(|d| number(d, "hidden dims"))
        .collect();
    let batch: i64 = number(&args[4], "batch");
    let steps: u64 = number(&args[5], "steps");
    let epochs: u64 = number(&args[6], "epochs");
    let lr: f64 = number(&args[7], "lr");
    tch::manual_seed(number(&args[8], "seed"));
    if let Ok(threads) = std::env::var("OMP_NUM_THREADS") {
        tch::set_num_threads(number(&threads, "OMP_NUM_THREADS"));
    }

    let (features, pairs) = load(&args[0], num_features);
    let (heldout_features, heldout_pairs) = load(&args[1], num_features);
    let vs = nn::VarStore::new(Device::Cpu);
    let widths: Vec<i64> = std::iter::once(num_features as i64)
        .chain(hidden)
        .chain(std::iter::once(1))
        .collect();
    let model = Mlp::new(&vs, &widths);
    let mut opt = Adam::new(&args[9], &vs, lr);

    let num_pairs = pairs.size()[0];
    let steps_per_epoch = steps / epochs;
    let mut order = Tensor::randperm(num_pairs, (Kind::Int64, Device::Cpu));
    let mut cursor = 0;
    let mut epoch_losses = Vec::new();
    let started = Instant::now();
    for _ in 0..epochs {
        let mut loss_sum = Tensor::zeros([], (Kind::Float, Device::Cpu));
        for _ in 0..steps_per_epoch {
            if cursor + batch > num_pairs {
                order = Tensor::randperm(num_pairs, (Kind::Int64, Device::Cpu));
                cursor = 0;
            }
            let chosen = pairs.index_select(0, &order.narrow(0, cursor, batch));
            cursor += batch;
            let positive = features.index_select(0, &chosen.select(1, 0));
            let negative = features.index_select(0, &chosen.select(1, 1));
            let margin = model.forward(&negative) - model.forward(&positive) + 1.0;
            let loss = margin.clamp_min(0.0).mean(Kind::Float);
            opt.zero_grad();
            loss.backward();
            opt.step(lr);
            loss_sum += loss.detach();
        }
        epoch_losses.push(loss_sum.double_value(&[]) / steps_per_epoch as f64);
    }
    let seconds = started.elapsed().as_secs_f64();

    let accuracy = tch::no_grad(|| {
        let scores = model.forward(&heldout_features);
        let positive = scores.index_select(0, &heldout_pairs.select(1, 0));
        let negative = scores.index_select(0, &heldout_pairs.select(1, 1));
        positive
            .gt_tensor(&negative)
            .to_kind(Kind::Double)
            .mean(Kind::Double)
            .double_value(&[])
    });
    let losses: Vec<String> = epoch_losses.iter().map(|l| format!("{l}")).collect();
    println!(
        "{{\"steps\":{},\"train_seconds\":{seconds},\"epoch_losses\":[{}],\"heldout_pairwise_accuracy\":{accuracy},\"threads\":{}}}",
        steps_per_epoch * epochs,
        losses.join(","),
        tch::get_num_threads()
    );
}

/// The job's Learner configuration in the wire format the TypeScript side writes.
fn learner_json(args: &[String], workdir: &Path) -> String {
    let letor = |id: &str, path: &str| {
        format!(
            r#"{{"__xpmtype__":"xpm_torch.data.LetorDataset","id":"{id}","path":{},"num_features":{}}}"#,
            serde_json::Value::from(path),
            args[2]
        )
    };
    let epochs: u64 = number(&args[6], "epochs");
    let steps: u64 = number(&args[5], "steps");
    let dir = |name: &str| serde_json::Value::from(workdir.join(name).display().to_string());
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":{seed}}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
            "sampler":{{"__xpmtype__":"xpm_torch.samplers.PairwiseSampler","dataset":{train}}},
            "batch_size":{batch},"num_workers":0}},
        "model":{{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":{features},"hidden_dims":[{hidden}]}},
        "max_epochs":{epochs},"steps_per_epoch":{per_epoch},
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.Adam","lr":{lr},"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}},
            "filter":{{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}}}],
        "listeners":[{{"__xpmtype__":"xpm_torch.listeners.RankingValidationListener","id":"heldout","dataset":{heldout},
            "metrics":{{"pairwise_accuracy":false}},"warmup":-1,"validation_interval":{epochs},"early_stop":0}}],
        "checkpoint_interval":{epochs},"logpath":{logs},"checkpointspath":{checkpoints},"hooks":[],
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"32-true",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"auto"}}}}"#,
        seed = args[8],
        train = letor("bench/train", &args[0]),
        heldout = letor("bench/heldout", &args[1]),
        batch = args[4],
        features = args[2],
        hidden = args[3],
        per_epoch = steps / epochs,
        lr = args[7],
        logs = dir("runs"),
        checkpoints = dir("checkpoints"),
    )
}

fn learner(args: &[String]) {
    let workdir = std::env::temp_dir().join(format!("xpm-torch-bench-{}", std::process::id()));
    let config = parse_learner(&learner_json(args, &workdir)).unwrap();
    let output = learn(&config, &mut NoObserver, &AtomicBool::new(false));
    let _ = std::fs::remove_dir_all(&workdir);
    let output = output.unwrap();
    let per_epoch = config.steps_per_epoch as f64;
    let seconds: f64 = output
        .epochs
        .iter()
        .map(|e| per_epoch / e.steps_per_second)
        .sum();
    let losses: Vec<String> = output
        .epochs
        .iter()
        .map(|e| format!("{}", e.loss))
        .collect();
    let last = output.epochs.last().unwrap();
    println!(
        "{{\"steps\":{},\"train_seconds\":{seconds},\"epoch_losses\":[{}],\"heldout_pairwise_accuracy\":{}}}",
        last.step,
        losses.join(","),
        last.metrics["heldout/pairwise_accuracy"]
    );
}

fn tokenize(args: &[String]) {
    use std::sync::Arc;
    use xpm_torch_core::data::{ScoreInput, TextEncoding};
    use xpm_torch_core::text::TextTokenizer;

    let tokenizer = TextTokenizer::from_dir(Path::new(&args[0]), number(&args[4], "max length"))
        .expect("reading the tokenizer");
    let encoding = TextEncoding::Pairs(Arc::new(tokenizer));
    let text = std::fs::read_to_string(&args[1]).expect("reading the triplets");
    let (mut queries, mut documents) = (Vec::new(), Vec::new());
    for line in text.lines().filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 3, "a triplet line has three fields: {line:?}");
        for document in &fields[1..] {
            queries.push(fields[0]);
            documents.push(*document);
        }
    }
    let batch: usize = number(&args[2], "pairs per batch");
    let rounds: usize = number(&args[3], "rounds");
    let (mut pairs, mut tokens) = (0usize, 0i64);
    let started = Instant::now();
    for _ in 0..rounds {
        for (q, d) in queries.chunks(batch).zip(documents.chunks(batch)) {
            let (input, _) = encoding.encode(q, d).expect("encoding");
            let ScoreInput::Encoded(e) = input else {
                unreachable!("a cross-encoder's encoding gives encoded texts")
            };
            pairs += q.len();
            tokens += e.lengths().unwrap().sum(Kind::Int64).int64_value(&[]);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    println!("{{\"pairs\": {pairs}, \"tokens\": {tokens}, \"seconds\": {seconds}}}");
}
