//! How Rust and our C++ (`cpp/`: what tch does not expose) pass tensors and errors: tensor
//! handles, and the C strings our C++ returns for a libtorch exception.

use std::ffi::{c_char, c_void, CStr};

use tch::Tensor;

use crate::Result;

extern "C" {
    fn xpm_free_message(message: *mut c_char);
}

/// tch's handles (`at::Tensor*`) of `tensors`, valid while they live: how tensors cross to our
/// C++ code (cpp/ffi.h reads them).
pub(crate) fn handles(tensors: &[Tensor]) -> Vec<*mut c_void> {
    tensors.iter().map(|t| t.as_ptr() as *mut c_void).collect()
}

/// The message one of our C++ libraries returned (null: none), copied, then freed by `free`, that
/// library's own function.
pub(crate) fn take_message(
    message: *mut c_char,
    free: unsafe extern "C" fn(*mut c_char),
) -> Option<String> {
    if message.is_null() {
        return None;
    }
    // SAFETY: a non-null result is a NUL-terminated string malloc'ed by the library, ours to free.
    let text = unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: freed once, by the library that allocated it.
    unsafe { free(message) };
    Some(text)
}

/// Turns the shim's returned message (null on success) into a result.
pub(crate) fn checked(message: *mut c_char) -> Result<()> {
    take_message(message, xpm_free_message)
        .map_or(Ok(()), |text| Err(tch::TchError::Torch(text).into()))
}
