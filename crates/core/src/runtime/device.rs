//! `fabric_config.accelerator` and `devices` resolved against the visible hardware
//! ([`Accelerator`], [`Hardware`], [`resolve_devices`]).

use tch::Device;

use super::cuda::cuda_device_count;

use crate::config;
use crate::{Error, Result};

/// `fabric_config.accelerator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accelerator {
    /// CUDA when a device is visible, else the CPU.
    Auto,
    /// The CPU.
    Cpu,
    /// A CUDA GPU (`cuda` or `gpu`); an error when none is available.
    Cuda,
}

impl From<config::Accelerator> for Accelerator {
    fn from(setting: config::Accelerator) -> Self {
        match setting {
            config::Accelerator::Auto => Accelerator::Auto,
            config::Accelerator::Cpu => Accelerator::Cpu,
            config::Accelerator::Cuda | config::Accelerator::Gpu => Accelerator::Cuda,
        }
    }
}

/// What is visible to this process: the number of CUDA devices (0 without CUDA), and whether
/// the CPU has native bfloat16 instructions (see [`super::cpu_bf16_features`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hardware {
    /// CUDA devices libtorch can use.
    pub cuda_devices: usize,
    /// Whether the CPU computes bfloat16 natively (else libtorch emulates it, slower than
    /// float32).
    pub native_cpu_bf16: bool,
}

impl Hardware {
    /// `cuda_devices` GPUs beside a CPU with native bfloat16: the machine tests describe.
    #[cfg(test)]
    pub(crate) const fn with_gpus(cuda_devices: usize) -> Self {
        Hardware {
            cuda_devices,
            native_cpu_bf16: true,
        }
    }

    /// Opens the CUDA library (see [`super::cuda_library`]) and counts the devices; 0 when CUDA
    /// is unusable.
    pub fn detect() -> Self {
        Hardware {
            cuda_devices: cuda_device_count(),
            native_cpu_bf16: super::native_cpu_bf16(),
        }
    }

    /// What `accelerator` needs to know: nothing about CUDA for the CPU (no CUDA library is
    /// opened), else [`Hardware::detect`].
    pub fn for_accelerator(accelerator: Accelerator) -> Self {
        match accelerator {
            Accelerator::Cpu => Hardware {
                cuda_devices: 0,
                native_cpu_bf16: super::native_cpu_bf16(),
            },
            Accelerator::Auto | Accelerator::Cuda => Self::detect(),
        }
    }
}

/// `fabric_config.devices`: `auto`, a count (`-1` for all) or a list of indices (`0,2` or
/// `[0, 2]`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum DeviceRequest {
    Auto,
    All,
    Count(usize),
    Indices(Vec<usize>),
}

fn parse_devices(text: &str, path: &str) -> Result<DeviceRequest> {
    let text = text.trim();
    let invalid = || {
        Error::config(
            path,
            format!(
                "cannot read devices {text:?}; write auto, a count (-1 for all) or a list of \
                 device indices such as 0,1"
            ),
        )
    };
    if text == "auto" {
        return Ok(DeviceRequest::Auto);
    }
    if text == "-1" {
        return Ok(DeviceRequest::All);
    }
    let list = text.strip_prefix('[').and_then(|t| t.strip_suffix(']'));
    if list.is_some() || text.contains(',') {
        let indices = list
            .unwrap_or(text)
            .split(',')
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
            .map(|s| s.parse::<usize>().map_err(|_| invalid()))
            .collect::<Result<Vec<_>>>()?;
        if indices.is_empty() {
            return Err(Error::config(path, "lists no device"));
        }
        return Ok(DeviceRequest::Indices(indices));
    }
    match text.parse::<usize>().map_err(|_| invalid())? {
        0 => Err(Error::config(path, "must be at least 1 device")),
        n => Ok(DeviceRequest::Count(n)),
    }
}

/// The devices a run asks for, resolved against what is visible. `auto` means one device (the
/// first GPU, or the CPU): a single process trains on one device.
///
/// # Errors
/// [`Error::Config`] naming `<prefix>.accelerator` when CUDA is requested but absent, and
/// `<prefix>.devices` when the request cannot be read or names devices that do not exist.
pub fn resolve_devices(
    accelerator: Accelerator,
    devices: &str,
    hardware: Hardware,
    prefix: &str,
) -> Result<Vec<Device>> {
    let devices_path = format!("{prefix}.devices");
    let request = parse_devices(devices, &devices_path)?;
    let use_cuda = match accelerator {
        Accelerator::Cpu => false,
        Accelerator::Auto => hardware.cuda_devices > 0,
        Accelerator::Cuda => {
            if hardware.cuda_devices == 0 {
                return Err(Error::config(
                    format!("{prefix}.accelerator"),
                    "CUDA was requested but no CUDA device is available to libtorch (no GPU, \
                     no driver, or a CPU-only libtorch); use accelerator \"cpu\" or \"auto\"",
                ));
            }
            true
        }
    };
    if !use_cuda {
        return match request {
            DeviceRequest::Auto | DeviceRequest::All => Ok(vec![Device::Cpu]),
            DeviceRequest::Count(n) => Ok(vec![Device::Cpu; n]),
            DeviceRequest::Indices(_) => Err(Error::config(
                devices_path,
                "device indices need a CUDA accelerator; on the CPU give a count",
            )),
        };
    }
    let visible = hardware.cuda_devices;
    let indices: Vec<usize> = match request {
        DeviceRequest::Auto => vec![0],
        DeviceRequest::All => (0..visible).collect(),
        DeviceRequest::Count(n) if n <= visible => (0..n).collect(),
        DeviceRequest::Count(n) => {
            return Err(Error::config(
                devices_path,
                format!("asks for {n} CUDA devices, {visible} are visible"),
            ))
        }
        DeviceRequest::Indices(list) => {
            if let Some(bad) = list.iter().find(|i| **i >= visible) {
                return Err(Error::config(
                    devices_path,
                    format!("CUDA device {bad} does not exist ({visible} are visible)"),
                ));
            }
            list
        }
    };
    Ok(indices.into_iter().map(Device::Cuda).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPU_ONLY: Hardware = Hardware::with_gpus(0);
    const TWO_GPUS: Hardware = Hardware::with_gpus(2);

    fn resolve(acc: &str, dev: &str, hw: Hardware) -> Result<Vec<Device>> {
        let acc: config::Accelerator = acc.parse().unwrap();
        resolve_devices(acc.into(), dev, hw, "learner.fabric_config")
    }

    #[test]
    fn cuda_requested_without_cuda_is_a_clear_error() {
        for acc in ["cuda", "gpu"] {
            let err = resolve(acc, "auto", CPU_ONLY).unwrap_err();
            assert_eq!(err.code(), "ERR_CONFIG");
            let text = err.to_string();
            assert!(
                text.starts_with("learner.fabric_config.accelerator: CUDA was requested")
                    && text.contains("\"cpu\""),
                "{text}"
            );
        }
    }

    #[test]
    fn this_machine_without_cuda_fails_the_same_way() {
        if Hardware::detect().cuda_devices == 0 {
            assert!(resolve("cuda", "auto", Hardware::detect()).is_err());
            assert_eq!(
                resolve("auto", "auto", Hardware::detect()).unwrap(),
                [Device::Cpu]
            );
        }
    }

    #[test]
    fn auto_picks_cuda_when_present_and_one_device() {
        assert_eq!(resolve("auto", "auto", CPU_ONLY).unwrap(), [Device::Cpu]);
        assert_eq!(
            resolve("auto", "auto", TWO_GPUS).unwrap(),
            [Device::Cuda(0)]
        );
        assert_eq!(resolve("cpu", "auto", TWO_GPUS).unwrap(), [Device::Cpu]);
    }

    #[test]
    fn counts_and_lists() {
        assert_eq!(
            resolve("cuda", "-1", TWO_GPUS).unwrap(),
            [Device::Cuda(0), Device::Cuda(1)]
        );
        assert_eq!(resolve("gpu", "[1]", TWO_GPUS).unwrap(), [Device::Cuda(1)]);
        assert_eq!(
            resolve("cuda", "1, 0", TWO_GPUS).unwrap(),
            [Device::Cuda(1), Device::Cuda(0)]
        );
        assert_eq!(resolve("cpu", "2", CPU_ONLY).unwrap().len(), 2);
        let text = resolve("cuda", "3", TWO_GPUS).unwrap_err().to_string();
        assert!(
            text.starts_with("learner.fabric_config.devices: asks for 3"),
            "{text}"
        );
        assert!(resolve("cuda", "[2]", TWO_GPUS).is_err());
        assert!(resolve("cpu", "[0]", CPU_ONLY).is_err());
        assert!(resolve("cpu", "0", CPU_ONLY).is_err());
        assert!(resolve("cpu", "two", CPU_ONLY).is_err());
    }
}
