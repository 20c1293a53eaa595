//! `fabric_config.precision` and `torch_fp32_precision`: the dtypes of parameters, autocast and
//! outputs, and whether a loss scaler is needed ([`Precision`], [`MatmulPrecision`]).

use tch::Kind;

use crate::config;

/// `fabric_config.precision`: in which dtype parameters live and the forward runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// `32-true`: everything in float32.
    True32,
    /// `64-true`: parameters, batches and losses in float64.
    True64,
    /// `bf16-true`: parameters and batches in bfloat16.
    TrueBf16,
    /// `16-true`: parameters and batches in float16.
    True16,
    /// `bf16-mixed`: float32 parameters, forward under bfloat16 autocast.
    MixedBf16,
    /// `16-mixed`: float32 parameters, forward under float16 autocast (CUDA only), gradients
    /// through a dynamic loss scaler.
    Mixed16,
}

impl Precision {
    /// The precision a configuration names; a legacy spelling (`32`, `64`, `16`, `bf16`, read
    /// as Lightning reads them) comes back with a deprecation message naming `path`.
    pub fn of(setting: config::Precision, path: &str) -> (Self, Option<String>) {
        use config::Precision as P;
        let (precision, legacy) = match setting {
            P::V32True => (Precision::True32, false),
            P::V64True => (Precision::True64, false),
            P::Bf16True => (Precision::TrueBf16, false),
            P::V16True => (Precision::True16, false),
            P::Bf16Mixed => (Precision::MixedBf16, false),
            P::V16Mixed => (Precision::Mixed16, false),
            P::V32 => (Precision::True32, true),
            P::V64 => (Precision::True64, true),
            P::V16 => (Precision::Mixed16, true),
            P::Bf16 => (Precision::MixedBf16, true),
        };
        let warning = legacy.then(|| {
            format!(
                "{path}: precision {:?} is deprecated, write {:?} (same meaning)",
                setting.as_str(),
                precision.name()
            )
        });
        (precision, warning)
    }

    /// The current spelling.
    pub fn name(self) -> &'static str {
        match self {
            Precision::True32 => "32-true",
            Precision::True64 => "64-true",
            Precision::TrueBf16 => "bf16-true",
            Precision::True16 => "16-true",
            Precision::MixedBf16 => "bf16-mixed",
            Precision::Mixed16 => "16-mixed",
        }
    }

    /// The dtype of parameters and of floating-point batches.
    pub fn parameter_kind(self) -> Kind {
        match self {
            Precision::True64 => Kind::Double,
            Precision::TrueBf16 => Kind::BFloat16,
            Precision::True16 => Kind::Half,
            Precision::True32 | Precision::MixedBf16 | Precision::Mixed16 => Kind::Float,
        }
    }

    /// The autocast dtype of the forward, if any.
    pub fn autocast_kind(self) -> Option<Kind> {
        match self {
            Precision::MixedBf16 => Some(Kind::BFloat16),
            Precision::Mixed16 => Some(Kind::Half),
            _ => None,
        }
    }

    /// The dtype model outputs are handed to losses in: float64 under `64-true`, float32
    /// otherwise (as Lightning does, losses of low-precision forwards are computed in float32).
    pub fn output_kind(self) -> Kind {
        match self {
            Precision::True64 => Kind::Double,
            _ => Kind::Float,
        }
    }

    /// Whether gradients go through a dynamic loss scaler.
    pub fn needs_loss_scaler(self) -> bool {
        self == Precision::Mixed16
    }

    /// The float32 matmul precision when `torch_fp32_precision` is unset, as the reference
    /// does: `medium` under mixed precision, `high` otherwise.
    pub fn default_matmul_precision(self) -> MatmulPrecision {
        match self {
            Precision::MixedBf16 | Precision::Mixed16 => MatmulPrecision::Medium,
            _ => MatmulPrecision::High,
        }
    }
}

/// `fabric_config.torch_fp32_precision`: how float32 matrix products may trade precision for
/// speed (`torch.set_float32_matmul_precision`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatmulPrecision {
    /// Full float32.
    Highest,
    /// TensorFloat32 or bfloat16x3 where available.
    High,
    /// bfloat16 where available.
    Medium,
}

impl MatmulPrecision {
    /// The precision a configuration names.
    pub fn of(setting: config::TorchFp32Precision) -> Self {
        match setting {
            config::TorchFp32Precision::Highest => MatmulPrecision::Highest,
            config::TorchFp32Precision::High => MatmulPrecision::High,
            config::TorchFp32Precision::Medium => MatmulPrecision::Medium,
        }
    }

    /// libtorch's spelling.
    pub fn name(self) -> &'static str {
        match self {
            MatmulPrecision::Highest => "highest",
            MatmulPrecision::High => "high",
            MatmulPrecision::Medium => "medium",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(text: &str) -> (Precision, Option<String>) {
        Precision::of(text.parse().unwrap(), "learner.fabric_config.precision")
    }

    #[test]
    fn current_spellings_read_without_warning() {
        for name in [
            "32-true",
            "64-true",
            "bf16-true",
            "16-true",
            "bf16-mixed",
            "16-mixed",
        ] {
            let (p, warning) = of(name);
            assert_eq!(p.name(), name);
            assert!(warning.is_none());
        }
    }

    #[test]
    fn legacy_spellings_warn_and_map_as_lightning_does() {
        for (legacy, current) in [
            ("32", "32-true"),
            ("64", "64-true"),
            ("16", "16-mixed"),
            ("bf16", "bf16-mixed"),
        ] {
            let (p, warning) = of(legacy);
            assert_eq!(p.name(), current);
            let warning = warning.unwrap();
            assert!(
                warning.starts_with("learner.fabric_config.precision: precision")
                    && warning.contains("deprecated")
                    && warning.contains(current),
                "{warning}"
            );
        }
    }

    #[test]
    fn mixed_precisions_default_to_medium_matmuls() {
        assert_eq!(
            Precision::MixedBf16.default_matmul_precision(),
            MatmulPrecision::Medium
        );
        assert_eq!(
            Precision::True32.default_matmul_precision(),
            MatmulPrecision::High
        );
        assert_eq!(Precision::True64.parameter_kind(), Kind::Double);
        assert_eq!(Precision::MixedBf16.parameter_kind(), Kind::Float);
    }
}
