use serde::{Deserialize, Serialize};

use super::tagged::config_enum;
use super::ModelConfig;

config_enum! {
    /// Learner-level hooks.
    #[derive(Debug, Clone, PartialEq)]
    pub enum HookConfig {
        /// Clips each optimizer's gradients to a global L2 norm.
        GradientClipping(GradientClippingConfig) = "xpm_torch.optim.GradientClippingHook",
        /// Logs the gradient size every step.
        GradientLog(GradientLogConfig) = "xpm_torch.optim.GradientLogHook",
    }
}

/// `xpm_torch.optim.GradientClippingHook`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GradientClippingConfig {
    /// Largest global L2 norm.
    pub max_norm: f64,
    /// The hook's version (a constant of the Python class, `"1"`).
    pub version: String,
}

/// `xpm_torch.optim.GradientLogHook`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GradientLogConfig {
    /// The TensorBoard tag.
    pub name: String,
}

/// `xpm_torch.trainers.hooks.LayerFreezer`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LayerFreezerConfig {
    /// The parameters to freeze.
    pub selector: ParametersIteratorConfig,
}

/// `xpm_torch.trainers.hooks.LayerSharer`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LayerSharerConfig {
    /// The parameters shared.
    pub source: ParametersIteratorConfig,
    /// The parameters replaced by them, in the same order.
    pub target: ParametersIteratorConfig,
}

config_enum! {
    /// Parameter selectors.
    #[derive(Debug, Clone, PartialEq)]
    pub enum ParametersIteratorConfig {
        /// Names matching a regular expression (and not a negative one).
        Regex(RegexIteratorConfig) = "xpm_torch.parameters.RegexParametersIterator",
        /// The complement of another selection.
        Inverse(Box<InverseIteratorConfig>) = "xpm_torch.parameters.InverseParametersIterator",
        /// A selection over a part of a model, extended to the whole model.
        Sub(Box<SubIteratorConfig>) = "xpm_torch.parameters.SubParametersIterator",
    }
}

/// `xpm_torch.parameters.RegexParametersIterator`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegexIteratorConfig {
    /// Selects the names it is found in (empty: every name).
    pub regex: String,
    /// Deselects the names it is found in (empty: none).
    #[serde(default)]
    pub negative_regex: String,
    /// The model whose parameters are selected (names are relative to it).
    pub model: ModelConfig,
}

/// `xpm_torch.parameters.InverseParametersIterator`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InverseIteratorConfig {
    /// The selection to invert.
    pub iterator: ParametersIteratorConfig,
}

/// `xpm_torch.parameters.SubParametersIterator`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SubIteratorConfig {
    /// The model whose parameters are gathered.
    pub model: ModelConfig,
    /// The selection over a part of `model`.
    pub iterator: ParametersIteratorConfig,
    /// Whether the parameters outside the part are selected.
    pub default: bool,
}

/// When a hook written in TypeScript runs (the `kind` of its stand-in).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JsHookKind {
    /// Before and after each optimizer step.
    Step,
    /// Before and after the run is built (and restored).
    Initialization,
}
