//! The CUDA library of xpm-torch (`libxpm_torch_cuda.so`, built from `crates/cuda`), opened at
//! run time and only when CUDA is asked for: device queries, the caching allocator's statistics
//! and the NCCL process group. The addon and the core's binaries never link against CUDA, so
//! they keep loading on machines without the CUDA libraries.
//!
//! Opening it first loads `libc10_cuda` and `libtorch_cuda` from the directory libtorch was
//! loaded from, globally: libtorch registers CUDA when `libtorch_cuda` is loaded, unless
//! something asked libtorch about CUDA before (it then keeps answering "no CUDA" for good). So
//! nothing in the core may query CUDA through tch before [`cuda_library`] has run.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};

/// The file name of the CUDA library, beside the addon or the executable.
pub const CUDA_LIBRARY_FILE: &str = "libxpm_torch_cuda.so";
/// Names an explicit CUDA library file (the GPU suite carries it beside its binaries).
pub const CUDA_LIBRARY_ENV: &str = "XPM_TORCH_CUDA_LIBRARY";
/// The command that installs libtorch's CUDA libraries.
pub const SETUP_CUDA_COMMAND: &str = "npx xpm-torch setup --cuda";

/// Why CUDA cannot be used in this process.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaUnavailable {
    /// libtorch's own CUDA part cannot load: its CUDA libraries are not installed beside it.
    #[error(
        "libtorch's CUDA libraries are missing: {file} cannot be loaded ({message}); run \
         `{SETUP_CUDA_COMMAND}` (or point XPM_TORCH_LIBTORCH at a torch 2.11 with CUDA)"
    )]
    Libtorch {
        /// The libtorch file that failed to load.
        file: String,
        /// The loader's explanation (the first missing dependency).
        message: String,
    },
    /// xpm-torch's CUDA library was not found or does not load.
    #[error(
        "xpm-torch's CUDA library {CUDA_LIBRARY_FILE} is unusable: {message}; rebuild it \
         (`npm run build` in a clone) or set {CUDA_LIBRARY_ENV} to its path"
    )]
    Library {
        /// Where it was looked for, or the loader's explanation.
        message: String,
    },
    /// Everything loads, but the CUDA runtime sees no usable GPU.
    #[error("no CUDA GPU is usable: {0} (check the NVIDIA driver with nvidia-smi, and CUDA_VISIBLE_DEVICES)")]
    NoDevice(String),
}

type Status = *mut c_char;

/// The entry points of the CUDA library (see `crates/cuda/xpm_torch_cuda.cpp`).
#[derive(Debug)]
pub struct CudaLibrary {
    devices: usize,
    file: PathBuf,
    free_message: unsafe extern "C" fn(Status),
    device_count: unsafe extern "C" fn(*mut c_int) -> Status,
    versions: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status,
    nccl_version: unsafe extern "C" fn(*mut c_char, c_int) -> Status,
    properties:
        unsafe extern "C" fn(c_int, *mut c_char, c_int, *mut u64, *mut c_int, *mut c_int) -> Status,
    memory: unsafe extern "C" fn(c_int, *mut u64) -> Status,
    reset_peak: unsafe extern "C" fn(c_int) -> Status,
    empty_cache: unsafe extern "C" fn() -> Status,
    memory_fraction: unsafe extern "C" fn(c_int, f64) -> Status,
    synchronize: unsafe extern "C" fn(c_int) -> Status,
    nccl_backend: NcclBackendFactory,
}

/// `xpm_cuda_nccl_backend`: makes the NCCL backend of one rank over a c10d store.
pub(crate) type NcclBackendFactory =
    unsafe extern "C" fn(*mut c_void, c_int, c_int, c_int, i64, *mut *mut c_void) -> Status;

/// One CUDA device as the runtime describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaDevice {
    /// The device index.
    pub index: usize,
    /// The product name.
    pub name: String,
    /// Total memory in bytes.
    pub total_memory: u64,
    /// Compute capability (major, minor).
    pub capability: (i32, i32),
}

impl CudaDevice {
    /// bfloat16 arithmetic in hardware: compute capability 8.0 (Ampere) and later.
    pub fn supports_bf16(&self) -> bool {
        self.capability.0 >= 8
    }
}

/// Versions of the CUDA stack this process runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaVersions {
    /// The driver's CUDA version (e.g. 13000 for 13.0), 0 without a driver.
    pub driver: i32,
    /// The CUDA runtime's version.
    pub runtime: i32,
    /// The NCCL version libtorch was built with.
    pub nccl: String,
}

/// One reading of the CUDA caching allocator of a device (bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaMemoryStats {
    /// Held by tensors now.
    pub allocated: u64,
    /// Highest `allocated` since the last peak reset.
    pub peak_allocated: u64,
    /// Held by the caching allocator (allocated or cached).
    pub reserved: u64,
    /// Highest `reserved` since the last peak reset.
    pub peak_reserved: u64,
    /// Free on the device, outside the cache.
    pub device_free: u64,
    /// The device's total memory.
    pub device_total: u64,
}

/// The CUDA library, opened on the first call (libtorch_cuda first), or why CUDA is unusable.
/// The answer is kept for the life of the process.
///
/// # Errors
/// [`CudaUnavailable`] saying what is missing: libtorch's CUDA libraries, this library, or a GPU.
pub fn cuda_library() -> Result<&'static CudaLibrary, CudaUnavailable> {
    static LIBRARY: OnceLock<Result<CudaLibrary, CudaUnavailable>> = OnceLock::new();
    LIBRARY.get_or_init(open).as_ref().map_err(Clone::clone)
}

/// The number of usable CUDA devices: 0 when CUDA is unusable for any reason.
pub fn cuda_device_count() -> usize {
    cuda_library().map_or(0, |l| l.devices)
}

/// The directory this process loaded `libtorch_cpu.so` from.
fn libtorch_dir() -> Option<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.ends_with("/libtorch_cpu.so"))
        .and_then(|path| Path::new(path).parent().map(Path::to_path_buf))
}

/// The file holding this code: the addon, or the executable for the runner and the tests.
fn own_file() -> Option<PathBuf> {
    // SAFETY: Dl_info is plain data (pointers and an integer); all zeroes is a valid value.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    let address = own_file as *const c_void;
    // SAFETY: dladdr only reads the address and fills `info`.
    if unsafe { libc::dladdr(address, &mut info) } == 0 || info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated path owned by the loader.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy();
    std::fs::canonicalize(name.as_ref()).ok()
}

/// Where the CUDA library is looked for, in order.
fn library_candidates() -> Vec<PathBuf> {
    if let Some(explicit) = std::env::var_os(CUDA_LIBRARY_ENV) {
        return vec![PathBuf::from(explicit)];
    }
    let mut out = Vec::new();
    if let Some(dir) = own_file().as_deref().and_then(Path::parent) {
        out.push(dir.join(CUDA_LIBRARY_FILE));
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .as_deref()
        .and_then(Path::parent)
    {
        out.push(dir.join(CUDA_LIBRARY_FILE));
    }
    out.dedup();
    out
}

fn load_global(file: &Path) -> Result<Library, String> {
    // SAFETY: loading runs the library's initialisers; these are libtorch's and ours.
    unsafe { Library::open(Some(file), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| {
        // libloading keeps the loader's own text (the missing file) in the source.
        std::error::Error::source(&e).map_or_else(|| e.to_string(), ToString::to_string)
    })
}

/// The first line of a loader message, without the file name it repeats.
fn loader_reason(message: &str) -> String {
    message.lines().next().unwrap_or(message).trim().to_string()
}

fn open() -> Result<CudaLibrary, CudaUnavailable> {
    let torch = libtorch_dir().ok_or_else(|| CudaUnavailable::Libtorch {
        file: "libtorch_cpu.so".into(),
        message: "libtorch is not loaded in this process".into(),
    })?;
    for name in ["libc10_cuda.so", "libtorch_cuda.so"] {
        let file = torch.join(name);
        if !file.exists() {
            return Err(CudaUnavailable::Libtorch {
                file: file.display().to_string(),
                message: "no such file: this libtorch is built without CUDA".into(),
            });
        }
        // Never closed: libtorch_cuda registers CUDA with libtorch for the life of the process.
        std::mem::forget(
            load_global(&file).map_err(|message| CudaUnavailable::Libtorch {
                file: file.display().to_string(),
                message: loader_reason(&message),
            })?,
        );
    }
    let candidates = library_candidates();
    let Some(file) = candidates.iter().find(|f| f.exists()).cloned() else {
        let looked: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
        return Err(CudaUnavailable::Library {
            message: format!("not found (looked for {})", looked.join(", ")),
        });
    };
    let library = load_global(&file).map_err(|message| CudaUnavailable::Library {
        message: loader_reason(&message),
    })?;
    let mut loaded =
        bind(&library, file).map_err(|message| CudaUnavailable::Library { message })?;
    std::mem::forget(library);
    let mut count: c_int = 0;
    // SAFETY: the out-pointer is valid for the call.
    let status = unsafe { (loaded.device_count)(&mut count) };
    if let Some(message) = loaded.take(status) {
        return Err(CudaUnavailable::NoDevice(message));
    }
    if count <= 0 {
        return Err(CudaUnavailable::NoDevice(
            "the CUDA runtime counts 0 devices".into(),
        ));
    }
    loaded.devices = usize::try_from(count).unwrap_or(0);
    Ok(loaded)
}

fn bind(library: &Library, file: PathBuf) -> Result<CudaLibrary, String> {
    fn symbol<T: Copy>(library: &Library, name: &str) -> Result<T, String> {
        // SAFETY: each name is an `extern "C"` function of crates/cuda with the type given at
        // the call site; the library is never closed, so the pointer stays valid.
        unsafe { library.get::<T>(name.as_bytes()) }
            .map(|s| *s)
            .map_err(|e| format!("{name}: {e} (a library from another xpm-torch version?)"))
    }
    Ok(CudaLibrary {
        devices: 0,
        file,
        free_message: symbol(library, "xpm_cuda_free_message")?,
        device_count: symbol(library, "xpm_cuda_device_count")?,
        versions: symbol(library, "xpm_cuda_versions")?,
        nccl_version: symbol(library, "xpm_cuda_nccl_version")?,
        properties: symbol(library, "xpm_cuda_device_properties")?,
        memory: symbol(library, "xpm_cuda_memory")?,
        reset_peak: symbol(library, "xpm_cuda_reset_peak")?,
        empty_cache: symbol(library, "xpm_cuda_empty_cache")?,
        memory_fraction: symbol(library, "xpm_cuda_set_memory_fraction")?,
        synchronize: symbol(library, "xpm_cuda_synchronize")?,
        nccl_backend: symbol(library, "xpm_cuda_nccl_backend")?,
    })
}

fn c_index(device: usize) -> crate::Result<c_int> {
    c_int::try_from(device).map_err(|_| torch_error(format!("no CUDA device {device}")))
}

fn torch_error(text: String) -> crate::Error {
    tch::TchError::Torch(text).into()
}

/// The text of a NUL-terminated buffer.
fn buffer_text(buffer: &[u8]) -> String {
    let end = buffer.iter().position(|b| *b == 0).unwrap_or(buffer.len());
    String::from_utf8_lossy(&buffer[..end]).into_owned()
}

impl CudaLibrary {
    /// The library file that was opened.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The number of usable CUDA devices (at least 1).
    pub fn device_count(&self) -> usize {
        self.devices
    }

    /// The message of a failed call, freed on the C++ side.
    fn take(&self, status: Status) -> Option<String> {
        crate::ffi::take_message(status, self.free_message)
    }

    fn checked(&self, status: Status) -> crate::Result<()> {
        self.take(status)
            .map_or(Ok(()), |text| Err(torch_error(text)))
    }

    /// Name, memory and compute capability of device `device`.
    ///
    /// # Errors
    /// The CUDA runtime's error (no such device).
    pub fn device(&self, device: usize) -> crate::Result<CudaDevice> {
        let mut name = [0u8; 256];
        let (mut total, mut major, mut minor) = (0u64, 0, 0);
        // SAFETY: the buffer and out-pointers are valid for the call; the capacity is the buffer's.
        self.checked(unsafe {
            (self.properties)(
                c_index(device)?,
                name.as_mut_ptr().cast(),
                name.len() as c_int,
                &mut total,
                &mut major,
                &mut minor,
            )
        })?;
        Ok(CudaDevice {
            index: device,
            name: buffer_text(&name),
            total_memory: total,
            capability: (major, minor),
        })
    }

    /// Driver, runtime and NCCL versions.
    ///
    /// # Errors
    /// The CUDA runtime's error.
    pub fn versions(&self) -> crate::Result<CudaVersions> {
        let (mut driver, mut runtime) = (0, 0);
        // SAFETY: the out-pointers are valid for the call.
        self.checked(unsafe { (self.versions)(&mut driver, &mut runtime) })?;
        let mut nccl = [0u8; 64];
        // SAFETY: the buffer is valid for the call; the capacity is its length.
        self.checked(unsafe {
            (self.nccl_version)(nccl.as_mut_ptr().cast(), nccl.len() as c_int)
        })?;
        Ok(CudaVersions {
            driver,
            runtime,
            nccl: buffer_text(&nccl),
        })
    }

    /// The caching allocator's statistics and the device's free and total memory.
    ///
    /// # Errors
    /// The CUDA runtime's error (no such device).
    pub fn memory(&self, device: usize) -> crate::Result<CudaMemoryStats> {
        let mut out = [0u64; 6];
        // SAFETY: `out` has the six slots the library writes.
        self.checked(unsafe { (self.memory)(c_index(device)?, out.as_mut_ptr()) })?;
        Ok(CudaMemoryStats {
            allocated: out[0],
            peak_allocated: out[1],
            reserved: out[2],
            peak_reserved: out[3],
            device_free: out[4],
            device_total: out[5],
        })
    }

    /// Starts the peak statistics of `device` afresh.
    ///
    /// # Errors
    /// The CUDA runtime's error.
    pub fn reset_peak(&self, device: usize) -> crate::Result<()> {
        // SAFETY: a plain value; the library catches every exception.
        self.checked(unsafe { (self.reset_peak)(c_index(device)?) })
    }

    /// Returns the allocator's cached, unused blocks to the driver.
    ///
    /// # Errors
    /// The CUDA runtime's error.
    pub fn empty_cache(&self) -> crate::Result<()> {
        // SAFETY: no arguments; the library catches every exception.
        self.checked(unsafe { (self.empty_cache)() })
    }

    /// Caps the allocator of `device` at `fraction` of its memory (a budget for tests).
    ///
    /// # Errors
    /// libtorch's error for a fraction outside (0, 1].
    pub fn set_memory_fraction(&self, device: usize, fraction: f64) -> crate::Result<()> {
        // SAFETY: plain values; the library catches every exception.
        self.checked(unsafe { (self.memory_fraction)(c_index(device)?, fraction) })
    }

    /// Waits for all work queued on `device`.
    ///
    /// # Errors
    /// The CUDA runtime's error (an earlier kernel failed).
    pub fn synchronize(&self, device: usize) -> crate::Result<()> {
        // SAFETY: a plain value; the library catches every exception.
        self.checked(unsafe { (self.synchronize)(c_index(device)?) })
    }

    /// The NCCL backend factory, for the distributed shim.
    pub(crate) fn nccl_backend_factory(&self) -> NcclBackendFactory {
        self.nccl_backend
    }
}

/// `major.minor` of a CUDA version number (13000 → "13.0").
fn cuda_version_text(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

/// What `xpm-torch doctor` shows about CUDA, as JSON: `usable`, `problem` (why not), the
/// library file, driver, runtime and NCCL versions, and each GPU's name, memory, compute
/// capability and bf16 support. Opens the CUDA library (see [`cuda_library`]).
pub fn cuda_report() -> serde_json::Value {
    let library = match cuda_library() {
        Ok(library) => library,
        Err(reason) => return serde_json::json!({ "usable": false, "problem": reason.to_string() }),
    };
    let devices: Vec<serde_json::Value> = (0..library.device_count())
        .map(|i| match library.device(i) {
            Ok(d) => serde_json::json!({
                "index": d.index,
                "name": d.name,
                "memoryBytes": d.total_memory,
                "capability": format!("{}.{}", d.capability.0, d.capability.1),
                "bf16": d.supports_bf16(),
            }),
            Err(e) => serde_json::json!({ "index": i, "problem": e.to_string() }),
        })
        .collect();
    let versions = library.versions();
    serde_json::json!({
        "usable": true,
        "library": library.file().display().to_string(),
        "driver": versions.as_ref().map(|v| cuda_version_text(v.driver)).ok(),
        "runtime": versions.as_ref().map(|v| cuda_version_text(v.runtime)).ok(),
        "nccl": versions.as_ref().map(|v| v.nccl.clone()).ok(),
        "problem": versions.err().map(|e| e.to_string()),
        "devices": devices,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasons_name_the_fix() {
        let missing = CudaUnavailable::Libtorch {
            file: "torch/lib/libtorch_cuda.so".into(),
            message: "libcusparse.so.12: cannot open shared object file".into(),
        }
        .to_string();
        assert!(
            missing.contains("libcusparse.so.12") && missing.contains(SETUP_CUDA_COMMAND),
            "{missing}"
        );
        let library = CudaUnavailable::Library {
            message: "not found".into(),
        }
        .to_string();
        assert!(
            library.contains(CUDA_LIBRARY_FILE) && library.contains(CUDA_LIBRARY_ENV),
            "{library}"
        );
        let gpu =
            CudaUnavailable::NoDevice("no CUDA-capable device is detected".into()).to_string();
        assert!(
            gpu.starts_with("no CUDA GPU is usable") && gpu.contains("nvidia-smi"),
            "{gpu}"
        );
    }

    #[test]
    fn versions_read_as_cuda_writes_them() {
        assert_eq!(cuda_version_text(13000), "13.0");
        assert_eq!(cuda_version_text(12080), "12.8");
    }

    #[test]
    fn the_report_says_why_cuda_is_unusable() {
        let _ = tch::Tensor::from(1.0f32);
        let report = cuda_report();
        match cuda_library() {
            Err(reason) => {
                assert_eq!(report["usable"], false);
                assert_eq!(report["problem"], reason.to_string());
            }
            Ok(library) => {
                assert_eq!(report["usable"], true);
                assert_eq!(
                    report["devices"].as_array().map(Vec::len),
                    Some(library.device_count())
                );
            }
        }
    }

    #[test]
    fn bf16_needs_ampere() {
        let device = |major| CudaDevice {
            index: 0,
            name: "x".into(),
            total_memory: 1,
            capability: (major, 0),
        };
        assert!(device(8).supports_bf16() && device(9).supports_bf16());
        assert!(!device(7).supports_bf16());
    }

    #[test]
    fn libtorch_is_found_in_this_process() {
        // Loading a tensor maps libtorch_cpu.
        let _ = tch::Tensor::from(1.0f32);
        let dir = libtorch_dir().expect("libtorch_cpu.so is mapped");
        assert!(dir.join("libtorch_cpu.so").exists(), "{}", dir.display());
    }

    #[test]
    fn without_a_gpu_cuda_is_refused_with_the_reason() {
        let _ = tch::Tensor::from(1.0f32);
        match cuda_library() {
            Ok(library) => assert!(library.device_count() >= 1),
            Err(reason) => {
                assert_eq!(cuda_device_count(), 0);
                // The same answer every time, without trying again.
                assert_eq!(cuda_library().unwrap_err(), reason);
            }
        }
    }
}
