//! [`Runtime`]: a validated `FabricConfigurationConfig` (device, dtypes, strategy, libtorch settings),
//! applied to the process and used to move batches to the device (pinned, asynchronous copies).

use tch::{Device, Tensor};

use super::cuda::cuda_library;
use super::device::{resolve_devices, Accelerator, Hardware};
use super::ffi::{
    deterministic, float32_matmul_precision, set_deterministic, set_float32_matmul_precision,
};
use super::{AutocastGuard, LossScaler, MatmulPrecision, Precision};
use crate::config::FabricConfigurationConfig;
use crate::{Error, Result};

/// A CPU batch tensor on `device` (CUDA) without waiting: from pinned host memory (where the
/// data producer leaves batches, see `Staging::Pinned`; other tensors are staged there first),
/// copied on the current stream while the CPU goes on; kernels queued after it on that stream
/// see the data, and libtorch's caching host allocator keeps the pinned block until the copy is
/// done. (`_pin_memory` rather than `pin_memory(device)`, which warns on every call in 2.11.)
fn to_cuda_async(tensor: &Tensor, device: Device) -> Result<Tensor> {
    let pinned = pinned_for(tensor, device)?;
    Ok(pinned.f_to_device_(device, pinned.kind(), true, false)?)
}

/// `tensor` in page-locked host memory for copies to `device` (CUDA): itself when it is there
/// already, else a pinned copy. Only for a process whose CUDA library is loaded.
///
/// # Errors
/// A libtorch error (e.g. no page-locked memory left).
pub fn pinned_for(tensor: &Tensor, device: Device) -> Result<Tensor> {
    if tensor.f_is_pinned(device)? {
        return Ok(tensor.shallow_clone());
    }
    Ok(tensor.f_internal_pin_memory(device)?)
}

/// Where the run's `FabricConfigurationConfig` sits in the learner configuration.
pub const FABRIC_PATH: &str = "learner.fabric_config";

/// The `strategy` of distributed data-parallel runs.
pub const DDP: &str = "ddp";

/// The `strategy` that picks ddp for several processes, one process otherwise (Lightning's
/// default).
pub const AUTO_STRATEGY: &str = "auto";

/// The environment variable libtorch (OpenMP) already reads for its thread count; when it is
/// set and `num_threads` is not, it is left to decide.
const OMP_NUM_THREADS: &str = "OMP_NUM_THREADS";

/// A validated `FabricConfigurationConfig`: the device, dtypes and libtorch settings of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Runtime {
    /// The device this process trains on.
    pub device: Device,
    /// Every device the configuration asks for (one per process of a distributed run).
    pub devices: Vec<Device>,
    /// Parameter dtype, autocast and loss scaling.
    pub precision: Precision,
    /// libtorch's float32 matmul precision.
    pub matmul_precision: MatmulPrecision,
    /// Intra-op threads to set, or `None` to leave libtorch's choice (`OMP_NUM_THREADS`).
    pub num_threads: Option<usize>,
    /// libtorch's deterministic algorithms.
    pub deterministic: bool,
}

/// The warning for bfloat16 on a CPU that emulates it: a bfloat16 precision there runs slower
/// than `32-true`, the opposite of what it is chosen for. `None` elsewhere.
pub fn emulated_bf16_warning(
    precision: Precision,
    device: Device,
    native_cpu_bf16: bool,
    path: &str,
) -> Option<String> {
    let bf16 = matches!(precision, Precision::MixedBf16 | Precision::TrueBf16);
    (bf16 && device == Device::Cpu && !native_cpu_bf16).then(|| {
        format!(
            "{path}: {} on a CPU without native bfloat16 instructions (none of avx512_bf16, \
             amx_bf16 or bf16 in /proc/cpuinfo; `xpm-torch doctor` says so too): libtorch \
             emulates bfloat16 there, slower than float32; use 32-true on this machine",
            precision.name()
        )
    })
}

impl Runtime {
    /// Validates `config` against the hardware libtorch sees; returns the runtime and the
    /// warnings to report (deprecated spellings).
    ///
    /// # Errors
    /// [`Error::Config`] naming `learner.fabric_config.<field>`: a device request that cannot be
    /// read or met, CUDA requested but unusable (saying what is missing: libtorch's CUDA
    /// libraries, xpm-torch's CUDA library, or a GPU), `16-mixed` without CUDA, zero threads.
    /// (An unknown precision, strategy or accelerator is refused by the schema's value rules.)
    pub fn from_config(config: &FabricConfigurationConfig) -> Result<(Runtime, Vec<String>)> {
        Self::for_local_rank(config, 0)
    }

    /// [`Runtime::from_config`] for the process of `local_rank` on its node: under ddp on
    /// CUDA, each process of a node takes the GPU of its local rank.
    ///
    /// # Errors
    /// As [`Runtime::from_config`].
    pub fn for_local_rank(
        config: &FabricConfigurationConfig,
        local_rank: usize,
    ) -> Result<(Runtime, Vec<String>)> {
        let accelerator = Accelerator::from(config.accelerator);
        // The CPU asks nothing about CUDA: no CUDA library is opened.
        let hardware = Hardware::for_accelerator(accelerator);
        if accelerator == Accelerator::Cuda {
            if let Err(reason) = cuda_library() {
                return Err(Error::config(
                    format!("{FABRIC_PATH}.accelerator"),
                    format!("CUDA was requested but is unusable here: {reason}; or use accelerator \"cpu\""),
                ));
            }
        }
        Self::for_rank(config, hardware, local_rank)
    }

    /// [`Runtime::from_config`] against given hardware, for local rank 0.
    ///
    /// # Errors
    /// As [`Runtime::from_config`].
    pub fn for_hardware(
        config: &FabricConfigurationConfig,
        hardware: Hardware,
    ) -> Result<(Runtime, Vec<String>)> {
        Self::for_rank(config, hardware, 0)
    }

    /// [`Runtime::for_hardware`] for the process of local rank `local_rank`, which trains on
    /// the `local_rank`-th of the requested devices under ddp.
    ///
    /// # Errors
    /// As [`Runtime::from_config`]; also [`Error::Config`] at `devices` when a node runs more
    /// ranks on CUDA than it was given devices.
    pub fn for_rank(
        config: &FabricConfigurationConfig,
        hardware: Hardware,
        local_rank: usize,
    ) -> Result<(Runtime, Vec<String>)> {
        let path = |field: &str| format!("{FABRIC_PATH}.{field}");
        let mut warnings = Vec::new();
        let (precision, warning) = Precision::of(config.precision, &path("precision"));
        warnings.extend(warning);
        let matmul_precision = config
            .torch_fp32_precision
            .map_or(precision.default_matmul_precision(), MatmulPrecision::of);
        let devices = resolve_devices(
            Accelerator::from(config.accelerator),
            &config.devices,
            hardware,
            FABRIC_PATH,
        )?;
        // As Lightning, "auto" means ddp as soon as there is more than one process.
        let ddp = config.strategy.as_str() == DDP || devices.len() > 1 || config.num_nodes > 1;
        // Under ddp every process trains on one of the devices: on CUDA its local rank's GPU
        // (NCCL needs one GPU per rank), on the CPU the CPU.
        let device = match devices.as_slice() {
            [Device::Cuda(_), ..] if ddp => *devices.get(local_rank).ok_or_else(|| {
                Error::config(
                    path("devices"),
                    format!(
                        "local rank {local_rank} has no CUDA device: {} given to this node; \
                         start at most one process per device",
                        devices.len()
                    ),
                )
            })?,
            _ => devices[0],
        };
        if precision == Precision::Mixed16 && device == Device::Cpu {
            return Err(Error::config(
                path("precision"),
                "16-mixed (float16 autocast with loss scaling) needs a CUDA device; on the CPU \
                 use bf16-mixed",
            ));
        }
        if let Some(warning) = emulated_bf16_warning(
            precision,
            device,
            hardware.native_cpu_bf16,
            &path("precision"),
        ) {
            warnings.push(warning);
        }
        let num_threads = match config.num_threads {
            Some(n) => Some(n as usize),
            None if std::env::var_os(OMP_NUM_THREADS).is_some() => None,
            None => Some(default_threads()),
        };
        Ok((
            Runtime {
                device,
                devices,
                precision,
                matmul_precision,
                num_threads,
                deterministic: config.deterministic.unwrap_or(false),
            },
            warnings,
        ))
    }

    /// Applies the libtorch settings. The thread count holds for the calling thread (OpenMP
    /// keeps it per thread): call this on the training thread. Matmul precision and
    /// determinism are process-wide.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn apply(&self) -> Result<()> {
        if let Some(n) = self.num_threads {
            tch::set_num_threads(i32::try_from(n).unwrap_or(i32::MAX));
        }
        set_float32_matmul_precision(self.matmul_precision.name())?;
        set_deterministic(self.deterministic)
    }

    /// A batch tensor on the run's device, floating-point ones in the parameter dtype;
    /// a shallow copy when nothing changes.
    ///
    /// # Errors
    /// A libtorch error (e.g. out of device memory).
    pub fn input(&self, tensor: &Tensor) -> Result<Tensor> {
        let moved = if tensor.device() == self.device {
            tensor.shallow_clone()
        } else if let (Device::Cuda(_), Device::Cpu) = (self.device, tensor.device()) {
            to_cuda_async(tensor, self.device)?
        } else {
            tensor.f_to_device(self.device)?
        };
        let kind = self.precision.parameter_kind();
        if moved.is_floating_point() && moved.kind() != kind {
            Ok(moved.f_to_kind(kind)?)
        } else {
            Ok(moved)
        }
    }

    /// A model output in the dtype losses are computed in.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn output(&self, tensor: &Tensor) -> Result<Tensor> {
        let kind = self.precision.output_kind();
        if tensor.is_floating_point() && tensor.kind() != kind {
            Ok(tensor.f_to_kind(kind)?)
        } else {
            Ok(tensor.shallow_clone())
        }
    }

    /// Autocast for the forward under mixed precision; `None` otherwise.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn autocast(&self) -> Result<Option<AutocastGuard>> {
        self.precision
            .autocast_kind()
            .map(|kind| AutocastGuard::new(self.device, kind))
            .transpose()
    }

    /// The loss scaler `16-mixed` needs; `None` for every other precision.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn loss_scaler(&self) -> Result<Option<LossScaler>> {
        if self.precision.needs_loss_scaler() {
            Ok(Some(LossScaler::new(self.device)?))
        } else {
            Ok(None)
        }
    }
}

/// The float32 matmul precision libtorch currently applies (process-wide).
///
/// # Errors
/// A libtorch error.
pub fn current_matmul_precision() -> Result<MatmulPrecision> {
    Ok(match float32_matmul_precision()? {
        0 => MatmulPrecision::Highest,
        1 => MatmulPrecision::High,
        _ => MatmulPrecision::Medium,
    })
}

/// Whether libtorch's deterministic algorithms are on (process-wide).
///
/// # Errors
/// A libtorch error.
pub fn deterministic_algorithms() -> Result<bool> {
    deterministic()
}

/// Intra-op threads when neither `num_threads` nor `OMP_NUM_THREADS` says: half the CPUs this
/// process may use (affinity and cgroup quota count, which libtorch's own default of every
/// physical core of the host ignores), at least 1. Half: hyper-threads share a core, and the
/// loop, a data producer and Node need some room. On a loaded two-CPU machine the demo ran at
/// 640 steps/s with one thread against 47 with two (OpenMP threads spin when oversubscribed).
pub fn default_threads() -> usize {
    (std::thread::available_parallelism().map_or(1, usize::from) / 2).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Strategy;

    fn fabric(precision: &str, accelerator: &str) -> FabricConfigurationConfig {
        FabricConfigurationConfig {
            precision: precision.parse().unwrap(),
            torch_fp32_precision: None,
            num_nodes: 1,
            devices: "auto".into(),
            strategy: Strategy::Auto,
            accelerator: accelerator.parse().unwrap(),
            num_threads: None,
            deterministic: None,
        }
    }

    const CPU_ONLY: Hardware = Hardware::with_gpus(0);
    const ONE_GPU: Hardware = Hardware::with_gpus(1);

    #[test]
    fn sixteen_mixed_on_the_cpu_is_a_clear_error() {
        let err = Runtime::for_hardware(&fabric("16-mixed", "auto"), CPU_ONLY).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("learner.fabric_config.precision: 16-mixed")
                && text.contains("CUDA")
                && text.contains("bf16-mixed"),
            "{text}"
        );
        // The legacy "16" means 16-mixed, and fails the same way.
        assert!(Runtime::for_hardware(&fabric("16", "cpu"), CPU_ONLY).is_err());
        let (rt, _) = Runtime::for_hardware(&fabric("16-mixed", "auto"), ONE_GPU).unwrap();
        assert_eq!(rt.device, Device::Cuda(0));
        assert!(rt.precision.needs_loss_scaler());
    }

    #[test]
    fn bf16_on_a_cpu_that_emulates_it_warns_and_names_the_faster_precision() {
        let emulating = Hardware {
            cuda_devices: 1,
            native_cpu_bf16: false,
        };
        for precision in ["bf16-mixed", "bf16-true", "bf16"] {
            let (rt, warnings) =
                Runtime::for_hardware(&fabric(precision, "cpu"), emulating).unwrap();
            assert_eq!(rt.device, Device::Cpu);
            let warning = warnings.last().unwrap();
            assert!(
                warning.starts_with("learner.fabric_config.precision: bf16-")
                    && warning.contains("native bfloat16")
                    && warning.contains("use 32-true"),
                "{warning}"
            );
        }
        // Native bf16, float32, or a GPU: nothing to say.
        for (precision, accelerator, hardware) in [
            ("bf16-mixed", "cpu", CPU_ONLY),
            ("32-true", "cpu", emulating),
            ("bf16-mixed", "cuda", emulating),
        ] {
            let (_, warnings) =
                Runtime::for_hardware(&fabric(precision, accelerator), hardware).unwrap();
            assert!(
                warnings.is_empty(),
                "{precision} on {accelerator}: {warnings:?}"
            );
        }
    }

    #[test]
    fn matmul_precision_defaults_as_the_reference_and_can_be_overridden() {
        let rt = |p: &str, set: Option<&str>| {
            let mut c = fabric(p, "cpu");
            c.torch_fp32_precision = set.map(|s| s.parse().unwrap());
            Runtime::for_hardware(&c, CPU_ONLY)
                .unwrap()
                .0
                .matmul_precision
        };
        assert_eq!(rt("32-true", None), MatmulPrecision::High);
        assert_eq!(rt("64-true", None), MatmulPrecision::High);
        assert_eq!(rt("bf16-mixed", None), MatmulPrecision::Medium);
        assert_eq!(rt("bf16-mixed", Some("highest")), MatmulPrecision::Highest);
    }

    #[test]
    fn legacy_precisions_are_reported_as_warnings() {
        let (rt, warnings) = Runtime::for_hardware(&fabric("bf16", "cpu"), CPU_ONLY).unwrap();
        assert_eq!(rt.precision, Precision::MixedBf16);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].contains("deprecated"), "{warnings:?}");
        let (_, none) = Runtime::for_hardware(&fabric("32-true", "cpu"), CPU_ONLY).unwrap();
        assert!(none.is_empty());
    }

    #[test]
    fn ddp_on_cuda_puts_each_local_rank_on_its_gpu() {
        let mut c = fabric("32-true", "cuda");
        c.strategy = Strategy::Ddp;
        c.devices = "2".into();
        let hw = Hardware::with_gpus(2);
        let (rt, _) = Runtime::for_rank(&c, hw, 0).unwrap();
        assert_eq!((rt.device, rt.devices.len()), (Device::Cuda(0), 2));
        assert_eq!(
            Runtime::for_rank(&c, hw, 1).unwrap().0.device,
            Device::Cuda(1)
        );
        let text = Runtime::for_rank(&c, hw, 2).unwrap_err().to_string();
        assert!(
            text.starts_with("learner.fabric_config.devices: local rank 2 has no CUDA device"),
            "{text}"
        );
        // World size 1 on one GPU.
        c.devices = "1".into();
        assert_eq!(
            Runtime::for_rank(&c, hw, 0).unwrap().0.device,
            Device::Cuda(0)
        );
        // Explicit indices are honoured per local rank.
        c.devices = "[1, 0]".into();
        assert_eq!(
            Runtime::for_rank(&c, hw, 0).unwrap().0.device,
            Device::Cuda(1)
        );
    }

    #[test]
    fn cuda_on_this_machine_is_refused_with_what_is_missing() {
        let Err(reason) = cuda_library() else {
            return; // a GPU machine: the GPU suite covers it
        };
        let err = Runtime::from_config(&fabric("32-true", "cuda")).unwrap_err();
        assert_eq!(err.code(), "ERR_CONFIG");
        let text = err.to_string();
        assert!(
            text.starts_with(
                "learner.fabric_config.accelerator: CUDA was requested but is unusable here: "
            ) && text.contains(&reason.to_string()),
            "{text}"
        );
        // auto falls back to the CPU, and the CPU never opens the CUDA library.
        assert_eq!(
            Runtime::from_config(&fabric("32-true", "auto"))
                .unwrap()
                .0
                .device,
            Device::Cpu
        );
        assert_eq!(
            Runtime::from_config(&fabric("32-true", "cpu"))
                .unwrap()
                .0
                .device,
            Device::Cpu
        );
    }

    #[test]
    fn auto_strategy_means_ddp_for_several_devices() {
        let mut c = fabric("32-true", "cpu");
        c.devices = "2".into();
        // "auto" with two devices: ddp, one process per device, as Lightning.
        let (rt, _) = Runtime::for_hardware(&c, CPU_ONLY).unwrap();
        assert_eq!(rt.devices, [Device::Cpu, Device::Cpu]);
        assert_eq!(rt.device, Device::Cpu);
        // ... and so ddp's device choice applies to it.
        let mut on_gpus = fabric("32-true", "cuda");
        on_gpus.devices = "2".into();
        let (rt, _) = Runtime::for_rank(&on_gpus, Hardware::with_gpus(2), 1).unwrap();
        assert_eq!(rt.device, Device::Cuda(1));
        c.strategy = Strategy::Ddp;
        let (rt, _) = Runtime::for_hardware(&c, CPU_ONLY).unwrap();
        assert_eq!(rt.devices, [Device::Cpu, Device::Cpu]);
    }

    #[test]
    fn num_threads_sets_the_thread_count() {
        let mut c = fabric("32-true", "cpu");
        c.num_threads = Some(3);
        let (rt, _) = Runtime::for_hardware(&c, CPU_ONLY).unwrap();
        assert_eq!(rt.num_threads, Some(3));
    }

    #[test]
    fn inputs_follow_the_parameter_dtype_and_outputs_the_loss_dtype() {
        let (rt, _) = Runtime::for_hardware(&fabric("64-true", "cpu"), CPU_ONLY).unwrap();
        let x = Tensor::ones([2], (tch::Kind::Float, Device::Cpu));
        assert_eq!(rt.input(&x).unwrap().kind(), tch::Kind::Double);
        let index = Tensor::ones([2], (tch::Kind::Int64, Device::Cpu));
        assert_eq!(rt.input(&index).unwrap().kind(), tch::Kind::Int64);
        assert_eq!(rt.output(&x).unwrap().kind(), tch::Kind::Double);
        let (rt, _) = Runtime::for_hardware(&fabric("bf16-true", "cpu"), CPU_ONLY).unwrap();
        assert_eq!(rt.input(&x).unwrap().kind(), tch::Kind::BFloat16);
        let y = x.to_kind(tch::Kind::BFloat16);
        assert_eq!(rt.output(&y).unwrap().kind(), tch::Kind::Float);
        assert!(rt.autocast().unwrap().is_none());
        let (rt, _) = Runtime::for_hardware(&fabric("bf16-mixed", "cpu"), CPU_ONLY).unwrap();
        assert_eq!(rt.input(&x).unwrap().kind(), tch::Kind::Float);
        assert!(rt.autocast().unwrap().is_some());
    }
}
