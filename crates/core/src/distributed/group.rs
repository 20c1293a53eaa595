//! [`ProcessGroup`]: membership of a c10d process group (Gloo or NCCL), its collectives, and
//! DDP-style gradient all-reduce in buckets; a failed collective breaks the group for good.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, CString};
use std::ptr::NonNull;
use std::time::{Duration, Instant};

use tch::Tensor;

use super::ffi::{self, XpmDist};
use super::peers::{exited_ranks, parse_peers, Peer};
use super::{DistEnv, DistributedError};
use crate::runtime::cuda_library;
use crate::{Error, Result};

/// The communication backend of a process group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Gloo over TCP: CPU tensors, any machine.
    Gloo,
    /// NCCL, from the CUDA library: one CUDA device per rank, `device` being this rank's. CPU
    /// tensors passed to a collective travel through a copy on that device.
    Nccl {
        /// This rank's CUDA device index.
        device: usize,
    },
}

/// How [`ProcessGroup::all_reduce`] combines the ranks' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceOp {
    /// Element-wise sum.
    Sum,
    /// Element-wise maximum.
    Max,
    /// Element-wise minimum.
    Min,
}

impl ReduceOp {
    fn code(self) -> c_int {
        match self {
            ReduceOp::Sum => 0,
            ReduceOp::Max => 1,
            ReduceOp::Min => 2,
        }
    }
}

/// What [`ProcessGroup::all_reduce_gradients_with`] leaves in each gradient.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradReduction {
    /// The ranks' mean, as PyTorch's DDP does: right when every rank's loss is a mean over an
    /// equal share of the batch.
    Mean,
    /// The ranks' sum: right when each rank already divided its loss by the global item count.
    Sum,
}

/// Collective timeout by default: a peer that stops answering is reported well within a minute
/// (a peer that exits is reported at once, its connections close).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the rendezvous waits for every rank to join by default: processes on other nodes
/// may start later than rank 0.
pub const DEFAULT_RENDEZVOUS_TIMEOUT: Duration = Duration::from_secs(300);
/// Gradient bucket size by default (PyTorch DDP's `bucket_cap_mb=25`).
pub const DEFAULT_BUCKET_BYTES: usize = 25 << 20;

/// Everything [`ProcessGroup::with_options`] can be told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DistOptions {
    /// The communication backend.
    pub backend: Backend,
    /// Longest wait of one collective before it fails.
    pub timeout: Duration,
    /// Longest wait for all ranks to join.
    pub rendezvous_timeout: Duration,
    /// Largest gradient bucket, in bytes.
    pub bucket_bytes: usize,
}

impl Default for DistOptions {
    fn default() -> Self {
        DistOptions {
            backend: Backend::Gloo,
            timeout: DEFAULT_TIMEOUT,
            rendezvous_timeout: DEFAULT_RENDEZVOUS_TIMEOUT,
            bucket_bytes: DEFAULT_BUCKET_BYTES,
        }
    }
}

/// This process's membership of a c10d process group: rendezvous on a TCPStore hosted by rank
/// 0, then Gloo collectives. Every call is collective: all ranks must make the same calls in
/// the same order with tensors of the same shapes and dtypes.
///
/// A failed collective breaks the group; every later call fails at once with the same error
/// (c10d cannot resume a group after a peer is lost).
///
/// ```no_run
/// # use xpm_torch_core::distributed::*;
/// # fn step(params: &[tch::Tensor]) -> xpm_torch_core::Result<()> {
/// let env = DistEnv::from_env()?;
/// let group = ProcessGroup::new(&env, Backend::Gloo, DEFAULT_TIMEOUT)?;
/// // ... forward and backward of every micro-batch of the step, then once:
/// group.all_reduce_gradients(params)?;
/// // ... optimizer step
/// # Ok(()) }
/// ```
pub struct ProcessGroup {
    raw: NonNull<XpmDist>,
    rank: usize,
    world: usize,
    timeout: Duration,
    bucket_bytes: usize,
    peers: Vec<Option<Peer>>,
    /// `(tensors, elements)` of the gradient layout all ranks agreed on, once checked.
    agreed_layout: Cell<Option<(i64, i64)>>,
    broken: RefCell<Option<String>>,
}

// SAFETY: the C++ group is used through `&self` from one thread at a time (the type is not
// `Sync`), and c10d's objects may be moved between threads.
unsafe impl Send for ProcessGroup {}

impl std::fmt::Debug for ProcessGroup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessGroup")
            .field("rank", &self.rank)
            .field("world", &self.world)
            .finish_non_exhaustive()
    }
}

/// How the shim marks a call it refused before sending anything (`kInvalidArgument`).
const INVALID_ARGUMENT: &str = "invalid argument: ";

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX).max(1)
}

fn is_loopback(addr: &str) -> bool {
    addr == "localhost" || addr == "::1" || addr.starts_with("127.")
}

impl ProcessGroup {
    /// Joins the group described by `env` (see [`ProcessGroup::with_options`]) with collectives
    /// failing after `timeout`.
    ///
    /// # Errors
    /// As [`ProcessGroup::with_options`].
    pub fn new(env: &DistEnv, backend: Backend, timeout: Duration) -> Result<Self> {
        Self::with_options(
            env,
            DistOptions {
                backend,
                timeout,
                ..DistOptions::default()
            },
        )
    }

    /// Joins the group: rank 0 hosts the TCPStore on `MASTER_PORT`, every rank connects to it
    /// and the Gloo backend connects all pairs of ranks. Blocks until all `world_size` ranks
    /// have joined or `rendezvous_timeout` has passed.
    ///
    /// With [`Backend::Nccl`] the CUDA library builds the NCCL backend on the same store and
    /// connects it at once.
    ///
    /// Gloo binds to `GLOO_SOCKET_IFNAME` when set, to the loopback interface when the master
    /// address is a loopback one, else to the address this machine's host name resolves to.
    ///
    /// # Errors
    /// [`DistributedError::Rendezvous`] when the store cannot be hosted or reached, or not all
    /// ranks join in time.
    pub fn with_options(env: &DistEnv, options: DistOptions) -> Result<Self> {
        let rendezvous_error = |message: String| -> Error {
            DistributedError::Rendezvous {
                rank: env.rank,
                world: env.world_size,
                master: env.master(),
                message,
            }
            .into()
        };
        let to_c = |text: &str| {
            CString::new(text).map_err(|_| rendezvous_error(format!("{text:?} holds a NUL byte")))
        };
        let addr = to_c(&env.master_addr)?;
        let iface = to_c(env.gloo_interface.as_deref().unwrap_or(""))?;
        let as_int =
            |v: usize| c_int::try_from(v).map_err(|_| rendezvous_error("too many ranks".into()));
        let (factory, device) = match options.backend {
            Backend::Gloo => (None, -1),
            Backend::Nccl { device } => {
                let library = cuda_library()
                    .map_err(|reason| rendezvous_error(format!("NCCL needs CUDA: {reason}")))?;
                let device = c_int::try_from(device)
                    .map_err(|_| rendezvous_error(format!("no CUDA device {device}")))?;
                (Some(library.nccl_backend_factory()), device)
            }
        };
        let mut raw: *mut XpmDist = std::ptr::null_mut();
        // SAFETY: the strings live through the call; `raw` receives an owned group or stays null.
        let message = unsafe {
            ffi::xpm_dist_new(
                addr.as_ptr(),
                c_int::from(env.master_port),
                env.master_listen_fd.unwrap_or(-1),
                as_int(env.rank)?,
                as_int(env.world_size)?,
                iface.as_ptr(),
                c_int::from(is_loopback(&env.master_addr)),
                millis(options.timeout),
                millis(options.rendezvous_timeout),
                factory,
                device,
                &mut raw,
            )
        };
        if let Some(text) = ffi::take_message(message) {
            return Err(rendezvous_error(text));
        }
        let raw = NonNull::new(raw)
            .ok_or_else(|| rendezvous_error("the shim returned no process group".into()))?;
        // SAFETY: `raw` is a live group; the table is a NUL-terminated string it owns.
        let table = unsafe { std::ffi::CStr::from_ptr(ffi::xpm_dist_peers(raw.as_ptr())) }
            .to_string_lossy()
            .into_owned();
        Ok(ProcessGroup {
            raw,
            rank: env.rank,
            world: env.world_size,
            timeout: options.timeout,
            bucket_bytes: options.bucket_bytes.max(1),
            peers: parse_peers(&table),
            agreed_layout: Cell::new(None),
            broken: RefCell::new(None),
        })
    }

    /// This process's global rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.world
    }

    /// Combines each tensor in place with the same tensor on every rank.
    ///
    /// # Errors
    /// [`DistributedError::Collective`] when a peer died or hung, or the ranks' tensors differ.
    pub fn all_reduce(&self, tensors: &[Tensor], op: ReduceOp) -> Result<()> {
        let handles = ffi::handles(tensors);
        let n = self.count(tensors.len(), "all_reduce")?;
        self.run("all_reduce", |raw| unsafe {
            // SAFETY: the handles are live tch tensors for the whole call.
            ffi::xpm_dist_all_reduce(raw, handles.as_ptr(), n, op.code())
        })
    }

    /// Replaces each tensor in place with rank `root`'s.
    ///
    /// # Errors
    /// As [`ProcessGroup::all_reduce`]; also when `root` is not a rank.
    pub fn broadcast(&self, tensors: &[Tensor], root: usize) -> Result<()> {
        let handles = ffi::handles(tensors);
        let n = self.count(tensors.len(), "broadcast")?;
        if root >= self.world {
            return Err(self.usage_error(
                "broadcast",
                format!("root {root} is not a rank of a world of {}", self.world),
            ));
        }
        let root = self.count(root, "broadcast")?;
        self.run("broadcast", |raw| unsafe {
            // SAFETY: the handles are live tch tensors for the whole call.
            ffi::xpm_dist_broadcast(raw, handles.as_ptr(), n, root)
        })
    }

    /// Returns once every rank has called it.
    ///
    /// # Errors
    /// As [`ProcessGroup::all_reduce`].
    pub fn barrier(&self) -> Result<()> {
        // SAFETY: `raw` is a live group.
        self.run("barrier", |raw| unsafe { ffi::xpm_dist_barrier(raw) })
    }

    /// Whether any rank passed `true`: the same answer on every rank, so that all take the
    /// same branch (shrink the batch after an out-of-memory, stop early, skip a step).
    ///
    /// # Errors
    /// As [`ProcessGroup::all_reduce`].
    pub fn any_flag(&self, flag: bool) -> Result<bool> {
        let value = Tensor::f_from_slice(&[i64::from(flag)])?;
        self.all_reduce(std::slice::from_ref(&value), ReduceOp::Max)?;
        Ok(value.f_int64_value(&[0])? != 0)
    }

    /// DDP's gradient synchronisation: replaces the gradient of every parameter that requires
    /// one by its mean over the ranks. Call it once per optimizer step, after the backward of
    /// the step's last micro-batch (earlier micro-batches only accumulate locally). A missing
    /// gradient counts as zeros. The gradients travel in buckets of at most the configured size.
    ///
    /// Every rank must pass the same parameters in the same order; the first call checks that
    /// the ranks agree on their number and size.
    ///
    /// # Errors
    /// As [`ProcessGroup::all_reduce`]; also when the ranks' parameters differ.
    pub fn all_reduce_gradients(&self, params: &[Tensor]) -> Result<()> {
        self.all_reduce_gradients_with(params, GradReduction::Mean)
    }

    /// [`ProcessGroup::all_reduce_gradients`] with a choice of mean or sum.
    ///
    /// # Errors
    /// As [`ProcessGroup::all_reduce_gradients`].
    pub fn all_reduce_gradients_with(
        &self,
        params: &[Tensor],
        reduction: GradReduction,
    ) -> Result<()> {
        self.check_layout(params)?;
        let handles = ffi::handles(params);
        let n = self.count(params.len(), "gradient all_reduce")?;
        let bucket = i64::try_from(self.bucket_bytes).unwrap_or(i64::MAX);
        let divisor = match reduction {
            GradReduction::Mean => self.world as f64,
            GradReduction::Sum => 1.0,
        };
        self.run("gradient all_reduce", |raw| unsafe {
            // SAFETY: the handles are live tch tensors for the whole call.
            ffi::xpm_dist_sync_gradients(raw, handles.as_ptr(), n, bucket, divisor)
        })
    }

    /// Once: all ranks compare how many trainable parameters and elements they synchronise,
    /// since differing layouts would silently mix unrelated gradients.
    fn check_layout(&self, params: &[Tensor]) -> Result<()> {
        let trainable = params.iter().filter(|p| p.requires_grad());
        let (count, elements) =
            trainable.fold((0i64, 0i64), |(c, e), p| (c + 1, e + p.numel() as i64));
        if let Some(agreed) = self.agreed_layout.get() {
            if agreed == (count, elements) {
                return Ok(());
            }
            return Err(self.usage_error(
                "gradient all_reduce",
                format!(
                "the parameters changed since the first call ({} tensors of {} elements, now {count} of {elements}); \
                 every call must pass the same parameters",
                agreed.0, agreed.1
            )));
        }
        let layout = Tensor::f_from_slice(&[count, elements, -count, -elements])?;
        self.all_reduce(std::slice::from_ref(&layout), ReduceOp::Max)?;
        let reduced = Vec::<i64>::try_from(&layout)?;
        if reduced != [count, elements, -count, -elements] {
            return Err(self.usage_error(
                "gradient all_reduce",
                format!(
                "the ranks synchronise different parameters: between {} and {} tensors, {} and {} elements \
                 (this rank: {count} tensors, {elements} elements); every rank must build the same model",
                -reduced[2], reduced[0], -reduced[3], reduced[1]
            )));
        }
        self.agreed_layout.set(Some((count, elements)));
        Ok(())
    }

    fn count(&self, n: usize, operation: &'static str) -> Result<c_int> {
        c_int::try_from(n).map_err(|_| self.usage_error(operation, format!("{n} is too large")))
    }

    fn usage_error(&self, operation: &'static str, message: String) -> Error {
        DistributedError::Collective {
            rank: self.rank,
            world: self.world,
            operation,
            dead_ranks: Vec::new(),
            message,
        }
        .into()
    }

    /// Runs one shim call, turning its failure into an error that names the peer when it can,
    /// and marking the group broken.
    fn run(
        &self,
        operation: &'static str,
        call: impl FnOnce(*mut XpmDist) -> *mut c_char,
    ) -> Result<()> {
        if let Some(earlier) = self.broken.borrow().as_ref() {
            return Err(DistributedError::Collective {
                rank: self.rank,
                world: self.world,
                operation,
                dead_ranks: Vec::new(),
                message: format!("the process group is broken by an earlier failure: {earlier}"),
            }
            .into());
        }
        let started = Instant::now();
        let Some(cause) = ffi::take_message(call(self.raw.as_ptr())) else {
            return Ok(());
        };
        if let Some(refusal) = cause.strip_prefix(INVALID_ARGUMENT) {
            return Err(self.usage_error(operation, refusal.to_string()));
        }
        let dead_ranks = self.find_exited_peers();
        let who = self.diagnose(&dead_ranks, started.elapsed());
        let message = format!("{who}; libtorch: {cause}");
        *self.broken.borrow_mut() = Some(format!("{operation} failed: {message}"));
        Err(DistributedError::Collective {
            rank: self.rank,
            world: self.world,
            operation,
            dead_ranks,
            message,
        }
        .into())
    }

    /// A peer's connections close while its process is still being torn down: look for
    /// exited peers for a short while before concluding that none exited.
    fn find_exited_peers(&self) -> Vec<usize> {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let dead = exited_ranks(&self.peers, self.rank);
            if !dead.is_empty() || Instant::now() >= deadline {
                return dead;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn diagnose(&self, dead: &[usize], waited: Duration) -> String {
        let describe = |rank: usize| match self.peers.get(rank).and_then(Option::as_ref) {
            Some(p) => format!("rank {rank} (pid {} on {})", p.pid, p.host),
            None => format!("rank {rank}"),
        };
        if !dead.is_empty() {
            let names: Vec<String> = dead.iter().map(|r| describe(*r)).collect();
            return format!("{} exited", names.join(", "));
        }
        let others: Vec<usize> = (0..self.world).filter(|r| *r != self.rank).collect();
        let peer = match others.as_slice() {
            [only] => describe(*only),
            _ => "a peer rank".to_string(),
        };
        if waited + Duration::from_millis(500) >= self.timeout {
            format!(
                "{peer} did not answer within the {:.0} s timeout (hung, or stopped calling collectives)",
                self.timeout.as_secs_f64()
            )
        } else {
            format!("{peer} failed or became unreachable (on another machine it cannot be checked from here)")
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        // SAFETY: `raw` was created by `xpm_dist_new` and is freed once, here.
        unsafe { ffi::xpm_dist_free(self.raw.as_ptr()) };
    }
}
