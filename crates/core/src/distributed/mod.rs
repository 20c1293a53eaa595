//! Data-parallel training on libtorch's own distributed engine (c10d): the launch environment,
//! the rendezvous on a TCPStore, the Gloo process group and its collectives, and DDP's
//! gradient synchronisation. The C++ side is `cpp/dist.cpp`.

mod env;
mod error;
mod ffi;
mod group;
mod hostlist;
mod peers;

pub use env::*;
pub use error::*;
pub use group::*;
