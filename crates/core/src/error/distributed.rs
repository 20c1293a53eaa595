//! [`DistributedError`]: the failures of a distributed run (launch environment, rendezvous,
//! collectives), with the ranks and peers involved.

/// What went wrong in a distributed run; part of [`crate::Error::Distributed`].
#[derive(Debug, thiserror::Error)]
pub enum DistributedError {
    /// The launch environment is missing a variable or is inconsistent.
    #[error("distributed environment: {variable}: {message}")]
    Env {
        /// The environment variable at fault.
        variable: String,
        /// What is wrong and what to set.
        message: String,
    },
    /// Joining the process group failed (the store or a peer could not be reached in time).
    #[error("rank {rank} of {world}: rendezvous at {master} failed: {message}")]
    Rendezvous {
        /// This process's rank.
        rank: usize,
        /// The number of ranks expected.
        world: usize,
        /// `MASTER_ADDR:MASTER_PORT`.
        master: String,
        /// libtorch's explanation.
        message: String,
    },
    /// A collective failed: a peer died, hung past the timeout, or the ranks disagree.
    #[error("rank {rank} of {world}: {operation} failed: {message}")]
    Collective {
        /// This process's rank.
        rank: usize,
        /// The number of ranks.
        world: usize,
        /// The collective (`all_reduce`, `broadcast`, `barrier`, ...).
        operation: &'static str,
        /// Ranks known to have exited, when they could be found.
        dead_ranks: Vec<usize>,
        /// Which peer failed, when known, then libtorch's explanation.
        message: String,
    },
}
