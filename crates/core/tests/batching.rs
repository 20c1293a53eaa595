//! Micro-batching on a real (tiny) tch model: with per-record losses normalised by the outer
//! batch's record count, every split gives the gradients, and so the weights, of no split.
// A test may stop at the first failure, helpers included.
#![allow(clippy::unwrap_used)]

use std::cell::RefCell;
use std::collections::BTreeMap;

use tch::{Device, Kind, Tensor};
use xpm_torch_core::batching::SimulatedDevice;
use xpm_torch_core::batching::{BatchDims, Batcher, Combine, CostModel, Formula, MicroBatchable};
use xpm_torch_core::config::{
    AdaptivePackerConfig, AnyBatchDimsProvider, AnyBatcher, AnyMicroBatchPacker,
    BatchDimsProviderConfig, BatcherConfig, FormulaTerm, PowerAdaptativeBatcherConfig,
    PredictiveBatcherConfig, ProbePointConfig, Typed, UniformPackerConfig,
};
use xpm_torch_core::{Error, Result};

const FEATURES: i64 = 5;

/// Records with features, a target and a length (what memory depends on).
struct Records {
    x: Tensor,
    y: Tensor,
    lengths: Vec<u64>,
}

impl MicroBatchable for Records {
    fn len(&self) -> usize {
        self.lengths.len()
    }
    fn select(&self, indices: &[usize]) -> Result<Self> {
        let idx: Vec<i64> = indices.iter().map(|i| *i as i64).collect();
        let idx = Tensor::f_from_slice(&idx)?;
        Ok(Records {
            x: self.x.f_index_select(0, &idx)?,
            y: self.y.f_index_select(0, &idx)?,
            lengths: indices.iter().map(|i| self.lengths[*i]).collect(),
        })
    }
}

fn record_dims(batch: &Records) -> Result<BatchDims> {
    BatchDims::new("bs", batch.lengths.len()).with("l", Combine::Max, batch.lengths.clone())
}

fn records(n: usize, seed: i64) -> Records {
    tch::manual_seed(seed);
    let opts = (Kind::Double, Device::Cpu);
    let lengths = (0..n).map(|i| 8 + ((i * 37 + 11) % 57) as u64).collect();
    Records {
        x: Tensor::randn([n as i64, FEATURES], opts),
        y: Tensor::randn([n as i64], opts),
        lengths,
    }
}

/// A linear model `x·w + b` with its gradients.
struct Linear {
    w: Tensor,
    b: Tensor,
}

impl Linear {
    fn new() -> Self {
        let w = Tensor::from_slice(&[0.3, -0.2, 0.5, 0.1, -0.4]).set_requires_grad(true);
        let b = Tensor::from_slice(&[0.05]).set_requires_grad(true);
        Linear { w, b }
    }

    /// Forward and backward of a micro-batch: squared errors summed, over the outer count.
    fn step(&self, batch: &Records, outer: usize) -> Result<()> {
        let pred = batch.x.f_mv(&self.w)?.f_add(&self.b)?;
        let loss = pred
            .f_sub(&batch.y)?
            .f_square()?
            .f_sum(Kind::Double)?
            .f_div_scalar(outer as f64)?;
        loss.f_backward()?;
        Ok(())
    }

    fn zero_grad(&self) {
        let mut w = self.w.shallow_clone();
        let mut b = self.b.shallow_clone();
        w.zero_grad();
        b.zero_grad();
    }

    fn grads(&self) -> Vec<f64> {
        let mut out = Vec::<f64>::try_from(self.w.grad()).unwrap();
        out.extend(Vec::<f64>::try_from(self.b.grad()).unwrap());
        out
    }

    /// Weights after one SGD step with the accumulated gradients.
    fn stepped(&self, lr: f64) -> Vec<f64> {
        let _guard = tch::no_grad_guard();
        let w = &self.w - self.w.grad() * lr;
        let b = &self.b - self.b.grad() * lr;
        let mut out = Vec::<f64>::try_from(w).unwrap();
        out.extend(Vec::<f64>::try_from(b).unwrap());
        out
    }
}

fn truth() -> CostModel {
    let names = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let terms = [FormulaTerm::of("a", &[("bs", 1), ("l", 2)])];
    let f = Formula::new(&terms, &names(&["a"]), &names(&["bs", "l"]), "truth").unwrap();
    let mut m = CostModel::new(f, "bs", "truth").unwrap();
    m.set_coefficients(vec![1.0, 0.0]).unwrap();
    m
}

fn predictive(packer: AnyMicroBatchPacker) -> AnyBatcher {
    let probe = |bs: u64, l: u64| {
        Typed(ProbePointConfig {
            values: BTreeMap::from([("bs".into(), bs), ("l".into(), l)]),
        })
    };
    AnyBatcher::PredictiveBatcher(PredictiveBatcherConfig {
        formula: "a*bs*l**2 + b*bs*l + c".into(),
        formula_terms: vec![
            FormulaTerm::of("a", &[("bs", 1), ("l", 2)]),
            FormulaTerm::of("b", &[("bs", 1), ("l", 1)]),
            FormulaTerm::of("c", &[]),
        ],
        coefficient_names: vec!["a".into(), "b".into(), "c".into()],
        variable_names: vec!["bs".into(), "l".into()],
        batch_size_variable: "bs".into(),
        memory_fraction: 0.5,
        extra_overhead_bytes: 0,
        min_batch_size: 1,
        dims_provider: AnyBatchDimsProvider::BatchDimsProvider(BatchDimsProviderConfig {
            probe_dims: vec![probe(1, 16), probe(2, 32), probe(4, 64), probe(2, 8)],
        }),
        packer,
    })
}

/// Gradients and stepped weights after processing one outer batch with `config`, and the
/// number of micro-batches it took.
fn train(config: &AnyBatcher, batch: &Records) -> (Vec<f64>, Vec<f64>, usize) {
    let model = Linear::new();
    // Budget: half of 2·(4·64²), i.e. four records of the longest length; the unsplit batch
    // gets a device it fits on.
    let capacity = match config {
        AnyBatcher::PredictiveBatcher(_) => 2 * 4 * 64 * 64,
        _ => u64::MAX / 2,
    };
    let device = SimulatedDevice::new(capacity, 0, truth(), 0.0, 1);
    let mut batcher = Batcher::new(config, 32, Box::new(device.clone()), "batcher").unwrap();
    batcher
        .probe(
            |dims| {
                let probe = records(dims["bs"] as usize, 99);
                model.step(&probe, probe.len())
            },
            || {
                model.zero_grad();
                Ok(())
            },
            &mut |w| panic!("{w}"),
        )
        .unwrap();
    let report = batcher
        .process(
            batch,
            &record_dims,
            |micro, outer| model.step(micro, outer),
            || {
                model.zero_grad();
                Ok(())
            },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(device.stats().unwrap().out_of_memory, 0);
    (model.grads(), model.stepped(0.1), report.micro_batches)
}

fn assert_close(a: &[f64], b: &[f64], what: &str) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-6, "{what}: {a:?} vs {b:?}");
    }
}

#[test]
fn any_split_gives_the_gradients_of_no_split() {
    let batch = records(32, 7);
    let (grads, weights, n) = train(&AnyBatcher::Batcher(BatcherConfig {}), &batch);
    assert_eq!(n, 1);
    let adaptive = |sort_by: Option<&str>| {
        AnyMicroBatchPacker::AdaptivePacker(AdaptivePackerConfig {
            sort_by: sort_by.map(str::to_string),
        })
    };
    for (name, packer) in [
        (
            "uniform",
            AnyMicroBatchPacker::UniformPacker(UniformPackerConfig {}),
        ),
        ("adaptive", adaptive(None)),
        ("adaptive sorted", adaptive(Some("l"))),
    ] {
        let (g, w, micro) = train(&predictive(packer), &batch);
        assert!(micro > 1, "{name}: {micro} micro-batch(es)");
        assert_close(&g, &grads, name);
        assert_close(&w, &weights, name);
    }
}

#[test]
fn an_out_of_memory_replay_gives_the_gradients_of_no_split() {
    let batch = records(16, 3);
    let (grads, weights, _) = train(&AnyBatcher::Batcher(BatcherConfig {}), &batch);
    let model = Linear::new();
    let device = SimulatedDevice::new(u64::MAX / 2, 0, truth(), 0.0, 1);
    let mut batcher = Batcher::new(
        &AnyBatcher::PowerAdaptativeBatcher(PowerAdaptativeBatcherConfig {}),
        16,
        Box::new(device),
        "batcher",
    )
    .unwrap();
    let calls = RefCell::new(Vec::new());
    let report = batcher
        .process(
            &batch,
            &record_dims,
            |micro, outer| {
                model.step(micro, outer)?;
                calls.borrow_mut().push(micro.len());
                // The first attempt fails after its backward pass: its gradients must go.
                if calls.borrow().len() == 1 {
                    return Err(Error::from(tch::TchError::Torch(
                        "CUDA out of memory. Tried to allocate 2.00 GiB".into(),
                    )));
                }
                Ok(())
            },
            || {
                model.zero_grad();
                Ok(())
            },
            &mut |_| {},
        )
        .unwrap();
    assert_eq!(report.out_of_memory, 1);
    assert_eq!(report.micro_batches, 2);
    assert_eq!(*calls.borrow(), [16, 8, 8]);
    assert_eq!(batcher.micro_batch_size(), Some(8));
    assert_close(&model.grads(), &grads, "power-adaptative");
    assert_close(&model.stepped(0.1), &weights, "power-adaptative");
}
