//! The GPU suite's tests (issue "GPUs for real"): they need a CUDA GPU and fail without one, so
//! they are ignored in `npm test`; `scripts/gpu/suite.sh` runs them with `--ignored` on a GPU
//! machine, against that machine's torch 2.11 (`LD_LIBRARY_PATH`) and the CUDA library
//! (`XPM_TORCH_CUDA_LIBRARY`). One process runs them one at a time (`--test-threads=1`): the
//! memory budget test caps the allocator process-wide.
// A failed expectation is the verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::AtomicBool;

use tch::{Device, Kind, Tensor};
use xpm_torch_core::config::parse_learner;
use xpm_torch_core::config::FabricConfigurationConfig;
use xpm_torch_core::data::{
    Batch, BatchSource, LtrDataset, PairwiseSampler, PointwiseBatch, ScoreInput, Shard, Staging,
};
use xpm_torch_core::distributed::{Backend, DistEnv, DistOptions, ProcessGroup, ReduceOp};
use xpm_torch_core::learner::{learn, LearnOutput, NoObserver};
use xpm_torch_core::rng::Rng;
use xpm_torch_core::runtime::memory::{is_out_of_memory, CudaMemory, MemoryProbe};
use xpm_torch_core::runtime::{cuda_library, CudaLibrary, Hardware, LossScaler, Runtime};

#[path = "support/demo_config.rs"]
mod demo_config;
use demo_config::learner_json;

/// The CUDA library; a test of this suite fails, saying why, where CUDA is unusable.
fn cuda() -> &'static CudaLibrary {
    // Loading libtorch_cpu first (a tensor), so the library finds libtorch's directory.
    let _ = Tensor::from(0.0f32);
    match cuda_library() {
        Ok(library) => library,
        Err(reason) => panic!("the GPU suite needs CUDA: {reason}"),
    }
}

fn train(json: &str) -> LearnOutput {
    let config = parse_learner(json).expect("a valid configuration");
    learn(&config, &mut NoObserver, &AtomicBool::new(false)).expect("training ends")
}

/// Both runs trained as many epochs, each epoch's losses within `tolerance`.
fn assert_same_losses(a: (&LearnOutput, &str), b: (&LearnOutput, &str), tolerance: f64) {
    assert_eq!(a.0.epochs.len(), b.0.epochs.len());
    for (x, y) in a.0.epochs.iter().zip(&b.0.epochs) {
        assert!(
            (x.loss - y.loss).abs() <= tolerance,
            "epoch {}: {} {} {} {}",
            x.epoch,
            a.1,
            x.loss,
            b.1,
            y.loss
        );
    }
}

fn accuracy(out: &LearnOutput) -> f64 {
    out.epochs.last().expect("an epoch").metrics["heldout/pairwise_accuracy"]
}

#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn the_library_describes_the_gpus_and_versions() {
    let library = cuda();
    assert!(library.device_count() >= 1);
    let gpu = library.device(0).unwrap();
    assert!(
        !gpu.name.is_empty() && gpu.total_memory > 1 << 30,
        "{gpu:?}"
    );
    assert!(gpu.capability.0 >= 5, "{gpu:?}");
    let versions = library.versions().unwrap();
    assert!(versions.driver >= versions.runtime, "{versions:?}");
    assert!(versions.nccl.starts_with("2."), "{versions:?}");
    eprintln!("{gpu:?} {versions:?}");
}

#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn the_memory_probe_follows_allocations_peaks_and_the_cache() {
    let library = cuda();
    let mut probe = CudaMemory::new(0).unwrap();
    probe.empty_cache().unwrap();
    probe.reset_peak().unwrap();
    let start = probe.allocated_bytes().unwrap();
    let big = Tensor::f_ones([1 << 24], (Kind::Float, Device::Cuda(0))).unwrap();
    assert!(probe.allocated_bytes().unwrap() >= start + (1 << 26));
    drop(big);
    assert!(probe.peak_bytes().unwrap() >= start + (1 << 26));
    assert!(probe.allocated_bytes().unwrap() < start + (1 << 26));
    let cached = library.memory(0).unwrap().reserved;
    probe.empty_cache().unwrap();
    assert!(library.memory(0).unwrap().reserved < cached);
    probe.reset_peak().unwrap();
    assert!(probe.peak_bytes().unwrap() < start + (1 << 26));
}

/// TF32 off (`torch_fp32_precision: highest`): the float32 CUDA run must match the CPU's.
#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn thirty_two_true_on_cuda_matches_the_cpu_losses() {
    cuda();
    let exact = r#","torch_fp32_precision":"highest""#;
    let on_cpu = train(&learner_json("32-true", "cpu", exact, 3));
    let on_gpu = train(&learner_json("32-true", "cuda", exact, 3));
    assert_same_losses((&on_cpu, "cpu"), (&on_gpu, "cuda"), 1e-4);
}

#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn bf16_and_16_mixed_learn_as_well_as_32_true() {
    cuda();
    let reference = accuracy(&train(&learner_json("32-true", "cuda", "", 8)));
    assert!(reference > 0.8, "32-true learns: {reference}");
    for precision in ["bf16-mixed", "16-mixed"] {
        let got = accuracy(&train(&learner_json(precision, "cuda", "", 8)));
        assert!(
            (got - reference).abs() <= 0.01,
            "{precision}: {got} vs 32-true {reference}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn the_scaler_skips_a_step_with_inf_gradients_and_backs_off() {
    cuda();
    let device = Device::Cuda(0);
    let weight = Tensor::f_ones([4], (Kind::Float, device))
        .unwrap()
        .set_requires_grad(true);
    let mut scaler = LossScaler::new(device).unwrap();
    let before = scaler.scale_value().unwrap();
    // A finite step.
    (&weight * 2.0)
        .sum(Kind::Float)
        .f_mul(scaler.scale())
        .unwrap()
        .backward();
    assert!(scaler.unscale(std::slice::from_ref(&weight)).unwrap());
    assert_eq!(Vec::<f32>::try_from(weight.grad()).unwrap(), [2.0; 4]);
    scaler.update().unwrap();
    // An injected inf: the step is to be skipped and the scale halves.
    let _ = weight.grad().f_zero_().unwrap();
    let inf = Tensor::from_slice(&[1.0f32, f32::INFINITY, 1.0, 1.0]).to_device(device);
    (&weight * inf)
        .sum(Kind::Float)
        .f_mul(scaler.scale())
        .unwrap()
        .backward();
    assert!(!scaler.unscale(std::slice::from_ref(&weight)).unwrap());
    scaler.update().unwrap();
    assert_eq!(scaler.scale_value().unwrap(), before / 2.0);
}

/// A batch far above a memory budget set here hits a real CUDA out-of-memory; the
/// power-adaptative batcher frees the cache and replays it in micro-batches, and the run's
/// losses are those of the same batch trained whole without a budget.
#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn a_real_out_of_memory_is_replayed_in_micro_batches_with_the_same_losses() {
    let library = cuda();
    let big = |batcher: &str| {
        learner_json("32-true", "cuda", r#","torch_fp32_precision":"highest""#, 1)
            .replace(r#""batch_size":128"#, r#""batch_size":65536"#)
            .replace(r#""steps_per_epoch":100"#, r#""steps_per_epoch":2"#)
            .replace("xpm_torch.batchers.Batcher", batcher)
    };
    let whole = train(&big("xpm_torch.batchers.Batcher"));
    // First a direct check that the budget produces a real, recognised out-of-memory.
    let total = library.memory(0).unwrap().device_total as f64;
    library.empty_cache().unwrap();
    library
        .set_memory_fraction(0, (96u64 << 20) as f64 / total)
        .unwrap();
    let err = Tensor::f_zeros([1 << 28], (Kind::Float, Device::Cuda(0))).unwrap_err();
    assert!(is_out_of_memory(&err.into()), "a CUDA out-of-memory");
    let replayed = train(&big("xpm_torch.batchers.PowerAdaptativeBatcher"));
    library.set_memory_fraction(0, 1.0).unwrap();
    assert!(
        replayed
            .warnings
            .iter()
            .any(|w| w.contains("micro-batches")),
        "{:?}",
        replayed.warnings
    );
    let (a, b) = (whole.epochs[0].loss, replayed.epochs[0].loss);
    assert!(
        (a - b).abs() <= 1e-4 * a.abs().max(1.0),
        "whole {a} replayed {b}"
    );
}

/// NCCL with one rank on one GPU: the group forms, collectives keep the values (CPU ones
/// travel through the GPU), gradient sync divides by the world of 1.
#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn nccl_world_one_forms_and_its_collectives_keep_values() {
    cuda();
    let group = ProcessGroup::with_options(
        &DistEnv::single(),
        DistOptions {
            backend: Backend::Nccl { device: 0 },
            ..DistOptions::default()
        },
    )
    .unwrap();
    let on_gpu = Tensor::from_slice(&[1.0f32, 2.0, 3.0]).to_device(Device::Cuda(0));
    group
        .all_reduce(std::slice::from_ref(&on_gpu), ReduceOp::Sum)
        .unwrap();
    assert_eq!(
        Vec::<f32>::try_from(on_gpu.to_device(Device::Cpu)).unwrap(),
        [1.0, 2.0, 3.0]
    );
    group.broadcast(std::slice::from_ref(&on_gpu), 0).unwrap();
    group.barrier().unwrap();
    assert!(group.any_flag(true).unwrap());
    assert!(!group.any_flag(false).unwrap());
    let param = Tensor::f_ones([3], (Kind::Float, Device::Cuda(0)))
        .unwrap()
        .set_requires_grad(true);
    (&param * 4.0).sum(Kind::Float).backward();
    group
        .all_reduce_gradients(std::slice::from_ref(&param))
        .unwrap();
    assert_eq!(
        Vec::<f32>::try_from(param.grad().to_device(Device::Cpu)).unwrap(),
        [4.0; 3]
    );
}

/// `strategy: "ddp"` alone on one GPU: `learn()` trains through an NCCL group of one, writes its
/// checkpoints, and ends with the losses of the run without a group.
#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn ddp_on_one_gpu_trains_through_nccl_and_checkpoints() {
    cuda();
    let exact = r#","torch_fp32_precision":"highest","deterministic":true"#;
    let plain = train(&learner_json("32-true", "cuda", exact, 2));
    let dir = std::env::temp_dir().join(format!("xpm-gpu-ddp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let ddp_json = learner_json("32-true", "cuda", exact, 2)
        .replace(r#""strategy":"auto""#, r#""strategy":"ddp""#)
        .replace(
            r#""checkpoint_interval":1,"#,
            &format!(
                r#""checkpoint_interval":1,"checkpointspath":"{}","#,
                dir.display()
            ),
        );
    assert!(ddp_json.contains(r#""strategy":"ddp""#));
    let ddp = train(&ddp_json);
    assert!(!ddp.checkpoints.is_empty(), "{:?}", ddp.checkpoints);
    assert!(ddp
        .checkpoints
        .values()
        .all(|c| std::path::Path::new(c).exists()));
    assert_same_losses((&plain, "alone"), (&ddp, "ddp"), 1e-6);
}

/// Batches go to the GPU through pinned host memory and a non-blocking copy: what arrives is
/// the batch, also when the host tensor is reused right after.
#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn batches_reach_the_gpu_unchanged_through_pinned_memory() {
    cuda();
    let fabric = FabricConfigurationConfig {
        precision: xpm_torch_core::config::Precision::V32True,
        torch_fp32_precision: None,
        num_nodes: 1,
        devices: "auto".into(),
        strategy: xpm_torch_core::config::Strategy::Auto,
        accelerator: xpm_torch_core::config::Accelerator::Cuda,
        num_threads: None,
        deterministic: None,
    };
    let (runtime, _) = Runtime::for_hardware(
        &fabric,
        Hardware {
            cuda_devices: 1,
            native_cpu_bf16: true,
        },
    )
    .unwrap();
    let mut host = Tensor::f_arange(1 << 20, (Kind::Float, Device::Cpu)).unwrap();
    let on_gpu = runtime.input(&host).unwrap();
    let _ = host.f_fill_(-1.0).unwrap();
    assert_eq!(on_gpu.device(), Device::Cuda(0));
    let back = on_gpu.to_device(Device::Cpu);
    let expected = Tensor::f_arange(1 << 20, (Kind::Float, Device::Cpu)).unwrap();
    assert!(back.equal(&expected));
}

/// The data producer thread leaves the batches of a CUDA run in pinned memory (for pairwise
/// batches, the positive and negative rows joined as one forward takes them), so that the training thread copies them to the GPU asynchronously
/// without staging them first; what arrives is the batch.
#[test]
#[ignore = "needs a CUDA GPU: scripts/gpu/suite.sh runs it"]
fn the_producer_thread_leaves_batches_pinned_and_joined() {
    cuda();
    let data = LtrDataset {
        features: (0..80).map(|x| x as f32 / 7.0).collect(),
        num_features: 2,
        relevance: (0..40).map(|x| (x % 3) as u8).collect(),
        query_bounds: vec![0, 10, 20, 30, 40],
    };
    let sampler = || Box::new(PairwiseSampler::new(&data, Rng::new(3), Shard::WHOLE, "s").unwrap());
    let device = Device::Cuda(0);
    let mut pinned = BatchSource::new(sampler(), 6, 2, Staging::for_device(device));
    let mut plain = BatchSource::new(sampler(), 6, 0, Staging::Host);
    for _ in 0..3 {
        let (Batch::Pairwise(p), Batch::Pairwise(h)) =
            (pinned.next_batch().unwrap(), plain.next_batch().unwrap())
        else {
            panic!("pairwise batches expected")
        };
        let (Some(ScoreInput::Features(joined)), Some(ScoreInput::Features(expected))) =
            (&p.joined, &h.joined)
        else {
            panic!("joined feature rows expected")
        };
        assert!(
            joined.is_pinned(device),
            "the joined rows are in pinned memory"
        );
        let on_gpu = joined.to_device_(device, joined.kind(), true, false);
        assert!(on_gpu.to_device(Device::Cpu).equal(expected));
    }
    // Other batches: every tensor.
    let records = Batch::Pointwise(PointwiseBatch {
        input: ScoreInput::Features(Tensor::ones([4, 2], (Kind::Float, Device::Cpu))),
        relevance: Tensor::zeros([4], (Kind::Float, Device::Cpu)),
    });
    let Batch::Pointwise(staged) = records.staged(Staging::Pinned(device)).unwrap() else {
        panic!("a pointwise batch expected")
    };
    let ScoreInput::Features(input) = &staged.input else {
        panic!("features expected")
    };
    assert!(input.is_pinned(device) && staged.relevance.is_pinned(device));
}
