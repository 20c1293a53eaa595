//! Per-step overhead of the learner against the same forward, backward and optimizer calls
//! written directly against tch: an MLP 16→64→32→1, pairwise hinge loss, Adam, batches of 128
//! preference pairs gathered from a fixed feature matrix.
//!
//! `cargo bench -p xpm-torch-core --bench step_overhead`; overhead per step =
//! (learner/500 − learner/1) / 499 − direct/500 / 500.
// A benchmark may stop at the first failure.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::atomic::AtomicBool;

use criterion::{criterion_group, criterion_main, Criterion};
use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};
use xpm_torch_core::config::parse_learner;
use xpm_torch_core::learner::{learn, NoObserver};

const BATCH: i64 = 128;
const FEATURES: i64 = 16;

fn learner_json(steps: u64) -> String {
    let data = r#"{"__xpmtype__":"xpm_torch.data.SyntheticLtrDataset","signal_seed":1,"seed":1,"num_queries":400,"docs_per_query":20,"num_features":16,"noise":0.3}"#;
    format!(
        r#"{{"__xpmtype__":"xpm_torch.learner.Learner",
        "random":{{"__xpmtype__":"xpm_torch.base.Random","seed":0}},
        "trainer":{{"__xpmtype__":"xpm_torch.trainers.LossTrainer",
            "hooks":[{{"__xpmtype__":"xpm_torch.losses.pairwise.HingeLoss","weight":1.0,"margin":1.0}}],
            "batcher":{{"__xpmtype__":"xpm_torch.batchers.Batcher"}},
            "sampler":{{"__xpmtype__":"xpm_torch.samplers.PairwiseSampler","dataset":{data}}},
            "batch_size":{BATCH},"num_workers":0}},
        "model":{{"__xpmtype__":"xpm_torch.models.MlpScorer","input_dim":{FEATURES},"hidden_dims":[64,32]}},
        "max_epochs":1,"steps_per_epoch":{steps},
        "optimizers":[{{"__xpmtype__":"xpm_torch.optim.ParameterOptimizer",
            "optimizer":{{"__xpmtype__":"xpm_torch.optim.Adam","lr":0.003,"weight_decay":0.0,"eps":1e-8,"betas":[0.9,0.999]}},
            "filter":{{"__xpmtype__":"xpm_torch.optim.ParameterFilter"}}}}],
        "listeners":[],"checkpoint_interval":1,"hooks":[],
        "fabric_config":{{"__xpmtype__":"xpm_torch.configuration.FabricConfiguration","precision":"32-true",
            "num_nodes":1,"devices":"auto","strategy":"auto","accelerator":"auto"}}}}"#
    )
}

fn direct(steps: usize) {
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let root = vs.root();
    let model = nn::seq()
        .add(nn::linear(&root / "l0", FEATURES, 64, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(&root / "l1", 64, 32, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(&root / "l2", 32, 1, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 0.003).unwrap();
    let features = Tensor::randn([8000, FEATURES], (Kind::Float, Device::Cpu));
    for _ in 0..steps {
        let pos = features.index_select(
            0,
            &Tensor::randint(8000, [BATCH], (Kind::Int64, Device::Cpu)),
        );
        let neg = features.index_select(
            0,
            &Tensor::randint(8000, [BATCH], (Kind::Int64, Device::Cpu)),
        );
        let s_pos = model.forward(&pos).squeeze_dim(-1);
        let s_neg = model.forward(&neg).squeeze_dim(-1);
        let loss = (s_neg - s_pos + 1.0).clamp_min(0.0).sum(Kind::Float) / BATCH as f64;
        opt.zero_grad();
        loss.backward();
        opt.step();
    }
}

fn benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("step_overhead");
    group.sample_size(10);
    for steps in [1u64, 500] {
        let config = parse_learner(&learner_json(steps)).unwrap();
        group.bench_function(format!("learner/{steps}"), |b| {
            b.iter(|| black_box(learn(&config, &mut NoObserver, &AtomicBool::new(false)).unwrap()))
        });
    }
    group.bench_function("direct/500", |b| b.iter(|| direct(500)));
    group.finish();
}

criterion_group!(step_overhead, benches);
criterion_main!(step_overhead);
