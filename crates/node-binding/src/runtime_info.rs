//! What `xpm-torch doctor` reports of the loaded libtorch.

use napi_derive::napi;
use serde_json::json;

/// What the loaded libtorch offers, as JSON, for `xpm-torch doctor`: CUDA, its devices and
/// versions, thread pools, CPU back-ends, the CPU's native bfloat16 features.
#[napi(catch_unwind)]
pub fn runtime_info() -> String {
    // First: the CUDA library loads libtorch_cuda before anything asks libtorch about CUDA.
    let gpus = xpm_torch_core::runtime::cuda_report();
    let cuda = tch::Cuda::is_available();
    json!({
        "gpus": gpus,
        "cudaBuilt": tch::utils::has_cuda(),
        "cudaAvailable": cuda,
        "cudaDevices": if cuda { tch::Cuda::device_count() } else { 0 },
        "cudnnAvailable": cuda && tch::Cuda::cudnn_is_available(),
        "threads": tch::get_num_threads(),
        "interopThreads": tch::get_num_interop_threads(),
        "openmp": tch::utils::has_openmp(),
        "mkl": tch::utils::has_mkl(),
        "mkldnn": tch::utils::has_mkldnn(),
        "cpuBf16": xpm_torch_core::runtime::cpu_bf16_features(),
    })
    .to_string()
}
