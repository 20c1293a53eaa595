use napi_derive::napi;
use serde_json::json;

/// What the loaded libtorch offers, as JSON, for `xpm-torch doctor`: CUDA and its devices,
/// thread pools, CPU back-ends.
#[napi(catch_unwind)]
pub fn runtime_info() -> String {
    let cuda = tch::Cuda::is_available();
    json!({
        "cudaBuilt": tch::utils::has_cuda(),
        "cudaAvailable": cuda,
        "cudaDevices": if cuda { tch::Cuda::device_count() } else { 0 },
        "cudnnAvailable": cuda && tch::Cuda::cudnn_is_available(),
        "threads": tch::get_num_threads(),
        "interopThreads": tch::get_num_interop_threads(),
        "openmp": tch::utils::has_openmp(),
        "mkl": tch::utils::has_mkl(),
        "mkldnn": tch::utils::has_mkldnn(),
    })
    .to_string()
}
