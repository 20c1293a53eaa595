//! The listening socket of a data-parallel run's rendezvous, bound by the launcher.
use std::net::TcpListener;
use std::os::fd::IntoRawFd;

use napi_derive::napi;

/// A socket listening on a port the system chose; rank 0 inherits it as its store's socket.
#[napi(object)]
pub struct RendezvousSocket {
    /// The descriptor, owned by the caller from now on (close it once handed to rank 0).
    pub fd: i32,
    pub port: u32,
}

/// Binds a listening socket on `host` with a port chosen by the system. The launcher keeps it
/// open until rank 0 has inherited it, so no other process can take the port in between.
#[napi(catch_unwind)]
pub fn bind_rendezvous_socket(host: String) -> napi::Result<RendezvousSocket> {
    let fail =
        |e: std::io::Error| napi::Error::from_reason(format!("cannot listen on {host}: {e}"));
    let listener = TcpListener::bind((host.as_str(), 0)).map_err(fail)?;
    let port = listener.local_addr().map_err(fail)?.port();
    Ok(RendezvousSocket {
        fd: listener.into_raw_fd(),
        port: u32::from(port),
    })
}
