//! The C ABI of `cpp/dist.cpp`. Every function returning `*mut c_char` returns null on success
//! or a message (libtorch's, without its backtrace) that [`take_message`] frees.

use std::ffi::{c_char, c_int, c_void};

/// Opaque: the store, the backend (Gloo or NCCL) and the peers' identities, owned by the C++
/// side.
#[repr(C)]
pub(crate) struct XpmDist {
    _private: [u8; 0],
}

extern "C" {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn xpm_dist_new(
        master_addr: *const c_char,
        master_port: c_int,
        master_listen_fd: c_int,
        rank: c_int,
        world: c_int,
        gloo_interface: *const c_char,
        loopback_device: c_int,
        timeout_ms: i64,
        rendezvous_timeout_ms: i64,
        factory: Option<crate::runtime::NcclBackendFactory>,
        device: c_int,
        out: *mut *mut XpmDist,
    ) -> *mut c_char;
    pub(crate) fn xpm_dist_free(dist: *mut XpmDist);
    pub(crate) fn xpm_dist_peers(dist: *const XpmDist) -> *const c_char;
    pub(crate) fn xpm_dist_all_reduce(
        dist: *mut XpmDist,
        tensors: *const *mut c_void,
        n: c_int,
        op: c_int,
    ) -> *mut c_char;
    pub(crate) fn xpm_dist_broadcast(
        dist: *mut XpmDist,
        tensors: *const *mut c_void,
        n: c_int,
        root: c_int,
    ) -> *mut c_char;
    pub(crate) fn xpm_dist_barrier(dist: *mut XpmDist) -> *mut c_char;
    pub(crate) fn xpm_dist_sync_gradients(
        dist: *mut XpmDist,
        params: *const *mut c_void,
        n: c_int,
        bucket_bytes: i64,
        divisor: f64,
    ) -> *mut c_char;
    fn xpm_dist_free_message(message: *mut c_char);
}

pub(crate) use crate::ffi::handles;

/// The shim's message, if any, as an owned string (the C++ copy is freed).
pub(crate) fn take_message(message: *mut c_char) -> Option<String> {
    crate::ffi::take_message(message, xpm_dist_free_message)
}
