//! Micro-batching measured: prints markdown tables.
//!
//! 1. On a simulated 1 GiB device with heterogeneous sequence lengths (cost
//!    a·bs·l² + b·bs·l + c with ±5 % noise): micro-batches per outer batch, use of the budget
//!    (75 % of the free memory), and out-of-memory events for the predictive batcher's three packers and the
//!    power-adaptative batcher; the fitted model's held-out relative error.
//! 2. With `--hf DIR`, the pretrained cross-encoder of a Hugging Face model directory (e.g.
//!    all-MiniLM-L6-v2; `node scripts/minilm.mjs` provisions it) trained through the runtime,
//!    on the CPU measured through `/proc` or on CUDA through the caching allocator: the
//!    predictive batcher's predicted against the measured peak at dimensions that were not
//!    probed.
//!
//! `cargo run --release -p xpm-torch-core --example batching_sim -- --hf DIR` (both tables,
//! CPU), or `batching_sim cuda --hf DIR [--precision bf16-mixed]` (the second table on the
//! first GPU; `scripts/gpu/suite.sh` runs it).
// An example may stop at the first failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use tch::{Device, Kind, Tensor};
use xpm_torch_core::batching::SimulatedDevice;
use xpm_torch_core::batching::{
    BatchDims, Batcher, Combine, CostModel, Dims, Formula, MicroBatchable,
};
use xpm_torch_core::config::{
    AdaptivePackerConfig, AnyBatchDimsProvider, AnyBatcher, AnyMicroBatchPacker,
    BatchDimsProviderConfig, FormulaTerm, PowerAdaptativeBatcherConfig, PredictiveBatcherConfig,
    ProbePointConfig, Typed, UniformPackerConfig,
};
use xpm_torch_core::config::{AnyModule, FabricConfigurationConfig};
use xpm_torch_core::data::{EncodedRows, EncodedTexts, ScoreInput};
use xpm_torch_core::models::PlacedModel;
use xpm_torch_core::models::{build, Model};
use xpm_torch_core::rng::Rng;
use xpm_torch_core::runtime::memory::{CpuMemory, CudaMemory, MemoryProbe};
use xpm_torch_core::runtime::{Hardware, Runtime};
use xpm_torch_core::Result;

const MIB: f64 = (1u64 << 20) as f64;
const CAPACITY: u64 = 1 << 30;
const RESIDENT: u64 = 256 << 20;
const BATCH: usize = 64;
const OUTER_BATCHES: usize = 200;
/// Bytes per bs·l² (attention scores), per bs·l (activations), and fixed (workspace).
const TRUTH: [f64; 3] = [64.0, 12_288.0, 50.0 * MIB];

/// Records that are only lengths.
struct Lengths(Vec<u64>);

impl MicroBatchable for Lengths {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn select(&self, indices: &[usize]) -> Result<Self> {
        Ok(Lengths(indices.iter().map(|i| self.0[*i]).collect()))
    }
}

fn dims(bs: u64, l: u64) -> Dims {
    Dims::from([("bs".to_string(), bs), ("l".to_string(), l)])
}

fn length_dims(batch: &Lengths) -> Result<BatchDims> {
    BatchDims::new("bs", batch.0.len()).with("l", Combine::Max, batch.0.clone())
}

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The terms of `a*bs*l**2 + b*bs*l + c`, as TypeScript expands it.
fn square_terms() -> Vec<FormulaTerm> {
    vec![
        FormulaTerm::of("a", &[("bs", 1), ("l", 2)]),
        FormulaTerm::of("b", &[("bs", 1), ("l", 1)]),
        FormulaTerm::of("c", &[]),
    ]
}

fn model(coefficients: [f64; 3]) -> CostModel {
    let f = Formula::new(
        &square_terms(),
        &names(&["a", "b", "c"]),
        &names(&["bs", "l"]),
        "truth",
    )
    .unwrap();
    let mut m = CostModel::new(f, "bs", "truth").unwrap();
    let mut c = coefficients.to_vec();
    c.push(0.0);
    m.set_coefficients(c).unwrap();
    m
}

fn predictive(packer: AnyMicroBatchPacker, probes: &[(u64, u64)]) -> AnyBatcher {
    AnyBatcher::PredictiveBatcher(PredictiveBatcherConfig {
        formula: "a*bs*l**2 + b*bs*l + c".into(),
        formula_terms: square_terms(),
        coefficient_names: names(&["a", "b", "c"]),
        variable_names: names(&["bs", "l"]),
        batch_size_variable: "bs".into(),
        memory_fraction: 0.75,
        extra_overhead_bytes: 0,
        min_batch_size: 1,
        dims_provider: AnyBatchDimsProvider::BatchDimsProvider(BatchDimsProviderConfig {
            probe_dims: probes
                .iter()
                .map(|(bs, l)| {
                    Typed(ProbePointConfig {
                        values: BTreeMap::from([("bs".into(), *bs), ("l".into(), *l)]),
                    })
                })
                .collect(),
        }),
        packer,
    })
}

/// Outer batches of lengths log-uniform in [16, 512].
fn outer_batches(seed: u64) -> Vec<Lengths> {
    let mut rng = Rng::new(seed);
    (0..OUTER_BATCHES)
        .map(|_| {
            Lengths(
                (0..BATCH)
                    .map(|_| (16f64 * 32f64.powf(rng.uniform())).round() as u64)
                    .collect(),
            )
        })
        .collect()
}

struct Row {
    name: &'static str,
    micro_per_outer: f64,
    mean_use: f64,
    peak_use: f64,
    ooms: usize,
    held_out_error: Option<(f64, f64)>,
}

fn simulate(name: &'static str, config: &AnyBatcher) -> Row {
    let device = SimulatedDevice::new(CAPACITY, RESIDENT, model(TRUTH), 0.05, 11);
    let mut batcher = Batcher::new(config, BATCH, Box::new(device.clone()), "batcher").unwrap();
    batcher
        .probe(|_| Ok(()), || Ok(()), &mut |w| eprintln!("warning: {w}"))
        .unwrap();
    let held_out_error = batcher.cost_model().map(|fitted| {
        let mut rng = Rng::new(5);
        let errors: Vec<f64> = (0..500)
            .map(|_| {
                let d = dims(1 + rng.below(BATCH) as u64, 16 + rng.below(497) as u64);
                let truth = model(TRUTH).predict(&d).unwrap();
                (fitted.predict(&d).unwrap() - truth).abs() / truth
            })
            .collect();
        let mean = errors.iter().sum::<f64>() / errors.len() as f64;
        (mean, errors.iter().copied().fold(0.0, f64::max))
    });
    let probe_charges = device.stats().unwrap().charged.len();
    let ooms_before = device.stats().unwrap().out_of_memory;
    let mut micro = 0;
    let mut ooms = 0;
    for batch in outer_batches(42) {
        let report = batcher
            .process(&batch, &length_dims, |_, _| Ok(()), || Ok(()), &mut |_| {})
            .unwrap();
        micro += report.micro_batches;
        ooms += report.out_of_memory;
    }
    let stats = device.stats().unwrap();
    assert_eq!(stats.out_of_memory - ooms_before, ooms);
    let budget = (CAPACITY - RESIDENT) as f64 * 0.75;
    // Only the charges of micro-batches that ran (probes and failed attempts excluded).
    let charged = &stats.charged[probe_charges..];
    Row {
        name,
        micro_per_outer: micro as f64 / OUTER_BATCHES as f64,
        mean_use: charged.iter().sum::<f64>() / charged.len() as f64 / budget,
        peak_use: charged.iter().copied().fold(0.0, f64::max) / budget,
        ooms,
        held_out_error,
    }
}

fn simulated_table() {
    let probes = [
        (1, 64),
        (1, 256),
        (1, 512),
        (4, 64),
        (4, 256),
        (4, 512),
        (16, 64),
        (16, 256),
        (16, 512),
    ];
    let adaptive = |sort_by: Option<&str>| {
        AnyMicroBatchPacker::AdaptivePacker(AdaptivePackerConfig {
            sort_by: sort_by.map(str::to_string),
        })
    };
    let rows = [
        simulate(
            "Predictive, Uniform",
            &predictive(
                AnyMicroBatchPacker::UniformPacker(UniformPackerConfig {}),
                &probes,
            ),
        ),
        simulate("Predictive, Adaptive", &predictive(adaptive(None), &probes)),
        simulate(
            "Predictive, Adaptive(sort_by=\"l\")",
            &predictive(adaptive(Some("l")), &probes),
        ),
        simulate(
            "PowerAdaptative",
            &AnyBatcher::PowerAdaptativeBatcher(PowerAdaptativeBatcherConfig {}),
        ),
    ];
    println!(
        "Simulated device: {} MiB, {} MiB resident, batches of {BATCH} records with lengths \
         log-uniform in [16, 512], {OUTER_BATCHES} outer batches, cost {}·bs·l² + {}·bs·l + {} MiB, \
         noise ±5 %, memory_fraction 0.75 (budget {:.0} MiB).\n",
        CAPACITY >> 20,
        RESIDENT >> 20,
        TRUTH[0],
        TRUTH[1],
        TRUTH[2] / MIB,
        (CAPACITY - RESIDENT) as f64 * 0.75 / MIB
    );
    // PowerAdaptative knows no budget: it fills the device until it fails, so its use of the
    // predictive batcher's budget may pass 100 %.
    println!("| batcher | micro-batches / outer batch | mean budget use per micro-batch | peak budget use | OOM events |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.2} | {:.1} % | {:.1} % | {} |",
            r.name,
            r.micro_per_outer,
            100.0 * r.mean_use,
            100.0 * r.peak_use,
            r.ooms
        );
    }
    if let Some((mean, max)) = rows[0].held_out_error {
        println!(
            "\nFitted on {} probes: held-out relative error over 500 random (bs, l): mean {:.2} %, max {:.2} %.\n",
            probes.len(),
            100.0 * mean,
            100.0 * max
        );
    }
}

/// A pretrained cross-encoder seen through the runtime (placed on its device, forward under
/// its autocast), and random batches of its vocabulary.
struct CrossEncoderStep {
    model: PlacedModel,
    vocab: i64,
    device: Device,
}

impl CrossEncoderStep {
    fn new(dir: &str, device: Device, precision: &str) -> Self {
        let json = format!(
            r#"{{"__xpmtype__":"xpm_torch.models.CrossEncoder","encoder":{{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"measured","path":{dir:?}}},"max_length":512}}"#
        );
        let config: AnyModule = serde_json::from_str(&json).unwrap();
        let model = build(&config, &mut Rng::new(1), "model").unwrap();
        let fabric = FabricConfigurationConfig {
            precision: precision.parse().unwrap(),
            torch_fp32_precision: None,
            num_nodes: 1,
            devices: "auto".into(),
            strategy: xpm_torch_core::config::Strategy::Auto,
            accelerator: if device.is_cuda() { "cuda" } else { "cpu" }
                .parse()
                .unwrap(),
            num_threads: None,
            deterministic: None,
        };
        let hardware = Hardware {
            cuda_devices: usize::from(device.is_cuda()),
            native_cpu_bf16: xpm_torch_core::runtime::native_cpu_bf16(),
        };
        let (runtime, _) = Runtime::for_hardware(&fabric, hardware).unwrap();
        let text = std::fs::read_to_string(format!("{dir}/config.json")).unwrap();
        let vocab = serde_json::from_str::<serde_json::Value>(&text).unwrap()["vocab_size"]
            .as_i64()
            .unwrap();
        CrossEncoderStep {
            model: PlacedModel::new(model, runtime).unwrap(),
            vocab,
            device,
        }
    }

    /// One forward and backward of `bs` pairs of `l` tokens (no padding), as a training step
    /// computes them.
    fn run(&self, bs: i64, l: i64) -> Result<()> {
        // Ids from the CPU like a batch, above the special tokens.
        let ids = Tensor::f_randint_low(100, self.vocab, [bs, l], (Kind::Int64, Device::Cpu))?;
        let rows = EncodedRows {
            type_ids: ids.f_zeros_like()?,
            mask: ids.f_ones_like()?,
            ids,
            pad_id: 0,
        };
        let scores = self
            .model
            .forward(&ScoreInput::Encoded(EncodedTexts::Pairs(rows)))?;
        scores.f_square()?.f_mean(Kind::Float)?.f_backward()?;
        Ok(())
    }

    fn zero_grad(&self) -> Result<()> {
        for p in self.model.named_parameters() {
            let mut grad = p.tensor.grad();
            if grad.defined() {
                let _ = grad.f_zero_()?;
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let count: i64 = self
            .model
            .named_parameters()
            .iter()
            .map(|p| p.tensor.numel() as i64)
            .sum();
        format!("{:.1} M parameters", count as f64 / 1e6)
    }

    fn on_cuda(&self) -> bool {
        self.device.is_cuda()
    }
}

fn probe_of(device: Device) -> Box<dyn MemoryProbe> {
    match device {
        Device::Cuda(index) => Box::new(CudaMemory::new(index).unwrap()),
        _ => Box::new(CpuMemory::new(None).unwrap()),
    }
}

/// The predictive batcher fitted on probes of the cross-encoder in `dir`, then its predictions
/// against the measured peak at dimensions that were not probed.
fn measured_table(device: Device, dir: &str, precision: &str) {
    // Probes first: on CUDA this opens the CUDA library before anything asks tch about CUDA.
    let batcher_probe = probe_of(device);
    let mut probe = probe_of(device);
    let step = CrossEncoderStep::new(dir, device, precision);
    let probes = [(1, 128), (1, 512), (2, 256), (4, 512), (8, 128), (8, 256)];
    let config = predictive(
        AnyMicroBatchPacker::UniformPacker(UniformPackerConfig {}),
        &probes,
    );
    let label = if step.on_cuda() { "cuda" } else { "cpu" };
    let mut batcher = Batcher::new(&config, 64, batcher_probe, label).unwrap();
    // Warm-up: the first step allocates the gradients and libtorch's lasting buffers, which are
    // not the batch's cost.
    step.run(2, 64).unwrap();
    batcher
        .probe(
            |d| step.run(d["bs"] as i64, d["l"] as i64),
            || step.zero_grad(),
            &mut |w| eprintln!("warning: {w}"),
        )
        .unwrap();
    let fitted = batcher.cost_model().unwrap().clone();
    let measured = if step.on_cuda() {
        "CUDA, peak allocated memory of the caching allocator"
    } else {
        "CPU, peak resident memory (VmHWM)"
    };
    println!(
        "{measured} above the start, cross-encoder from {dir} ({}, {precision}); fitted on {} \
         probes, coefficients {:?}.\n",
        step.describe(),
        probes.len(),
        fitted.coefficients().unwrap()
    );
    println!("| bs | l | predicted MiB | measured MiB | relative error |");
    println!("|---|---|---|---|---|");
    for (bs, l) in [(3u64, 384u64), (6, 192), (2, 448), (12, 96), (5, 320)] {
        probe.empty_cache().unwrap();
        probe.reset_peak().unwrap();
        let start = probe.allocated_bytes().unwrap();
        step.run(bs as i64, l as i64).unwrap();
        let measured = probe.peak_bytes().unwrap().saturating_sub(start) as f64;
        step.zero_grad().unwrap();
        let predicted = fitted.predict(&dims(bs, l)).unwrap();
        println!(
            "| {bs} | {l} | {:.1} | {:.1} | {:+.1} % |",
            predicted / MIB,
            measured / MIB,
            100.0 * (predicted - measured) / measured
        );
    }
}

const USAGE: &str = "usage: batching_sim [cuda] [--hf DIR] [--precision P]";

fn main() {
    let mut cuda = false;
    let mut dir = None;
    let mut precision = "32-true".to_string();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "cuda" => cuda = true,
            "--hf" => dir = Some(args.next().expect(USAGE)),
            "--precision" => precision = args.next().expect(USAGE),
            _ => panic!("{USAGE}"),
        }
    }
    if !cuda {
        simulated_table();
    }
    match dir {
        Some(dir) => {
            let device = if cuda { Device::Cuda(0) } else { Device::Cpu };
            measured_table(device, &dir, &precision);
        }
        None => println!(
            "\n(no measured table: pass --hf DIR, a Hugging Face BERT-like model directory)"
        ),
    }
}
