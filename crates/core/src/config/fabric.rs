use serde::{Deserialize, Serialize};

use super::tagged::config_types;

/// `xpm_torch.configuration.FabricConfiguration`: precision and devices of a run.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct FabricConfiguration {
    /// `32-true`, `16-mixed`, `bf16-mixed`, ...
    pub precision: String,
    /// Precision of float32 matrix products (`highest`, `high`, `medium`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_fp32_precision: Option<String>,
    /// Number of nodes.
    pub num_nodes: u64,
    /// Devices per node.
    pub devices: String,
    /// Distribution strategy.
    pub strategy: String,
    /// `auto`, `cpu`, `cuda` or `gpu`.
    pub accelerator: String,
    /// Intra-op CPU threads (a Meta field of this port: it does not change identifiers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_threads: Option<u64>,
    /// libtorch's deterministic algorithms (a Meta field of this port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deterministic: Option<bool>,
}

config_types! {
    FabricConfiguration = "xpm_torch.configuration.FabricConfiguration",
}
