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
