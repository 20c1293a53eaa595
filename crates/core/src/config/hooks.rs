use serde::{Deserialize, Serialize};

use super::tagged::config_enum;

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
    }
}

/// `xpm_torch.parameters.RegexParametersIterator`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RegexIteratorConfig {
    /// Selects names it fully matches.
    pub regex: String,
    /// Deselects names it fully matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub negative_regex: Option<String>,
}

/// `xpm_torch.parameters.InverseParametersIterator`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InverseIteratorConfig {
    /// The selection to invert.
    pub iterator: ParametersIteratorConfig,
}

/// A training hook written in JavaScript: the loop asks the JavaScript side to run it.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct JsHookConfig {
    /// How the JavaScript side finds it.
    pub key: String,
    /// The hook's own type id (for messages).
    pub class: String,
    /// `step` (around each optimizer step) or `initialization` (around building the run).
    pub kind: JsHookKind,
}

/// When a JavaScript hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JsHookKind {
    /// Before and after each optimizer step.
    Step,
    /// Before and after the run is built (and restored).
    Initialization,
}
