//! The libtorch random generators of a run: seeded from the run's `Random` seed and rank, saved
//! in every checkpoint and restored on resume, so that dropout draws the same masks in a
//! resumed run as in an uninterrupted one.
//!
//! Two kinds of streams:
//! - **The run's own generators** (one for the CPU, one for the CUDA device a run trains on).
//!   Dropout in the built-in models draws from them through [`dropout`], never from libtorch's
//!   process-wide generator, so several runs in one process (tests, `Promise.all` of `learn()`)
//!   stay independent and each stays reproducible.
//! - **libtorch's default generators**, which code we do not control draws from (a TorchScript
//!   module's `dropout`). A run whose model needs them takes the process-wide
//!   [`GlobalGeneratorLease`] for its whole duration, seeds them at its start and checkpoints
//!   them; a second such run in the same process waits for the first to finish.
//!
//! Each stream's seed is derived from the run's seed, the stream's name and the process's rank
//! (a hash, not `seed + rank`, so that seed 1 on rank 0 is not seed 0 on rank 1).

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::rc::Rc;
use std::sync::{Condvar, Mutex, PoisonError};
use std::thread::ThreadId;

use tch::{Device, Kind, Tensor};

use crate::ffi::checked;
use crate::rng::Rng;
use crate::{Error, Result};

extern "C" {
    fn xpm_generator_new(
        device: c_int,
        index: c_int,
        seed: u64,
        out: *mut *mut c_void,
    ) -> *mut c_char;
    fn xpm_generator_default(device: c_int, index: c_int, out: *mut *mut c_void) -> *mut c_char;
    fn xpm_generator_free(handle: *mut c_void);
    fn xpm_generator_state_size(handle: *mut c_void, size: *mut usize) -> *mut c_char;
    fn xpm_generator_get_state(handle: *mut c_void, out: *mut u8, size: usize) -> *mut c_char;
    fn xpm_generator_set_state(handle: *mut c_void, state: *const u8, size: usize) -> *mut c_char;
    fn xpm_generator_seed(handle: *mut c_void, seed: u64) -> *mut c_char;
    fn xpm_bernoulli_(tensor: *mut c_void, p: f64, handle: *mut c_void) -> *mut c_char;
    fn xpm_dropout_mask_(tensor: *mut c_void, keep: f64, handle: *mut c_void) -> *mut c_char;
    #[cfg(test)]
    fn xpm_philox4x32_10(counter: *const u32, key: u64, out: *mut u32);
}

/// The shim's device arguments: type (0 CPU, 1 CUDA) and CUDA index.
fn device_args(device: Device) -> Result<(c_int, c_int)> {
    match device {
        Device::Cpu => Ok((0, 0)),
        Device::Cuda(i) => Ok((
            1,
            c_int::try_from(i).map_err(|_| Error::Unsupported(format!("CUDA device index {i}")))?,
        )),
        other => Err(Error::Unsupported(format!(
            "random generators on {other:?}: only the CPU and CUDA devices have them"
        ))),
    }
}

/// One libtorch generator (a counted `at::Generator` handle), freed on drop.
struct Generator {
    handle: *mut c_void,
}

impl Generator {
    /// A generator of its own for `device`, seeded with `seed`.
    fn new(device: Device, seed: u64) -> Result<Self> {
        let (kind, index) = device_args(device)?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain values and a valid out-pointer.
        checked(unsafe { xpm_generator_new(kind, index, seed, &mut handle) })?;
        Ok(Generator { handle })
    }

    /// A handle on libtorch's default generator of `device`.
    fn default_of(device: Device) -> Result<Self> {
        let (kind, index) = device_args(device)?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: plain values and a valid out-pointer.
        checked(unsafe { xpm_generator_default(kind, index, &mut handle) })?;
        Ok(Generator { handle })
    }

    fn seed(&self, seed: u64) -> Result<()> {
        // SAFETY: a live handle.
        checked(unsafe { xpm_generator_seed(self.handle, seed) })
    }

    fn state(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: a live handle and a valid out-pointer.
        checked(unsafe { xpm_generator_state_size(self.handle, &mut size) })?;
        let mut bytes = vec![0u8; size];
        // SAFETY: `bytes` holds `size` writable bytes.
        checked(unsafe { xpm_generator_get_state(self.handle, bytes.as_mut_ptr(), size) })?;
        Ok(bytes)
    }

    fn set_state(&self, bytes: &[u8]) -> Result<()> {
        // SAFETY: a live handle; `bytes` is readable for its length.
        checked(unsafe { xpm_generator_set_state(self.handle, bytes.as_ptr(), bytes.len()) })
    }

    /// Fills `tensor` in place with Bernoulli(`p`) draws.
    fn bernoulli_(&self, tensor: &mut Tensor, p: f64) -> Result<()> {
        // SAFETY: a live tensor handle (an `at::Tensor*`) and a live generator handle.
        checked(unsafe { xpm_bernoulli_(tensor.as_mut_ptr() as *mut c_void, p, self.handle) })
    }

    /// Fills the contiguous bool CPU `tensor` with a dropout mask (each element kept, true,
    /// with probability `keep`) from a Philox stream keyed by one draw of this generator.
    fn dropout_mask_(&self, tensor: &mut Tensor, keep: f64) -> Result<()> {
        // SAFETY: a live tensor handle (an `at::Tensor*`) and a live generator handle.
        checked(unsafe { xpm_dropout_mask_(tensor.as_mut_ptr() as *mut c_void, keep, self.handle) })
    }
}

impl Drop for Generator {
    fn drop(&mut self) {
        // SAFETY: allocated by the shim, freed once.
        unsafe { xpm_generator_free(self.handle) }
    }
}

/// One named stream of a run.
struct Stream {
    name: String,
    device: Device,
    generator: Generator,
    /// The run's own generator (drawn from by [`dropout`]), or a default one.
    own: bool,
}

/// The saved states of a run's streams, by name (`cpu`, `cuda:0`, `global/cpu`, ...).
pub type GeneratorStates = Vec<(String, Vec<u8>)>;

/// The libtorch generators of one run (one process of it under DDP).
pub struct RunGenerators {
    streams: Vec<Stream>,
    /// Held while the default generators are part of the run.
    _lease: Option<GlobalGeneratorLease>,
}

impl std::fmt::Debug for RunGenerators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.streams.iter().map(|s| s.name.as_str()).collect();
        f.debug_struct("RunGenerators")
            .field("streams", &names)
            .finish()
    }
}

fn stream_name(device: Device) -> String {
    match device {
        Device::Cuda(i) => format!("cuda:{i}"),
        _ => "cpu".into(),
    }
}

/// The seed of stream `name` on `rank` for the run's `seed`.
fn stream_seed(seed: u64, rank: usize, name: &str) -> u64 {
    Rng::derive(seed, &format!("libtorch/{name}/rank-{rank}")).next_u64()
}

impl RunGenerators {
    /// Seeded generators for a run training on `device` as rank `rank`: its own CPU generator,
    /// its own generator of `device` when that is a GPU, and, with `global`, libtorch's default
    /// generators of the CPU and of `device` (taking the [`GlobalGeneratorLease`], waiting for
    /// another run holding it on another thread).
    ///
    /// # Errors
    /// A libtorch error.
    pub fn new(seed: u64, rank: usize, device: Device, global: bool) -> Result<Self> {
        let mut devices = vec![Device::Cpu];
        if device != Device::Cpu {
            devices.push(device);
        }
        let lease = global.then(GlobalGeneratorLease::take);
        let mut streams = Vec::new();
        for &d in &devices {
            let name = stream_name(d);
            streams.push(Stream {
                generator: Generator::new(d, stream_seed(seed, rank, &name))?,
                name,
                device: d,
                own: true,
            });
        }
        if global {
            for &d in &devices {
                let name = format!("global/{}", stream_name(d));
                let generator = Generator::default_of(d)?;
                generator.seed(stream_seed(seed, rank, &name))?;
                streams.push(Stream {
                    name,
                    device: d,
                    generator,
                    own: false,
                });
            }
        }
        Ok(RunGenerators {
            streams,
            _lease: lease,
        })
    }

    /// Whether libtorch's default generators are part of the run.
    pub fn uses_global(&self) -> bool {
        self.streams.iter().any(|s| !s.own)
    }

    /// The state of every stream, in a fixed order.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn states(&self) -> Result<GeneratorStates> {
        self.streams
            .iter()
            .map(|s| Ok((s.name.clone(), s.generator.state()?)))
            .collect()
    }

    /// Restores every stream from `saved` (read from checkpoint `what`), which must hold
    /// exactly this run's streams.
    ///
    /// # Errors
    /// [`Error::Checkpoint`] naming `what` when the streams differ or a state does not fit its
    /// generator.
    pub fn restore(&self, saved: &GeneratorStates, what: &str) -> Result<()> {
        let mine: Vec<&str> = self.streams.iter().map(|s| s.name.as_str()).collect();
        let theirs: Vec<&str> = saved.iter().map(|(n, _)| n.as_str()).collect();
        if mine != theirs {
            return Err(Error::checkpoint(
                what,
                format!("holds the random generators {theirs:?}, this run has {mine:?}"),
            ));
        }
        for (stream, (name, bytes)) in self.streams.iter().zip(saved) {
            stream.generator.set_state(bytes).map_err(|e| {
                Error::checkpoint(what, format!("the state of generator {name}: {e}"))
            })?;
        }
        Ok(())
    }

    /// Makes these the generators [`dropout`] draws from on this thread until the guard drops.
    pub fn activate(self: &Rc<Self>) -> ActiveGenerators {
        let previous = ACTIVE.with(|a| a.replace(Some(self.clone())));
        ActiveGenerators { previous }
    }

    fn own_generator(&self, device: Device) -> Result<&Generator> {
        self.streams
            .iter()
            .find(|s| s.own && s.device == device)
            .map(|s| &s.generator)
            .ok_or_else(|| {
                Error::Panic(format!(
                    "dropout on {device:?}, but the run's generators are for {:?}",
                    self.streams.iter().map(|s| s.device).collect::<Vec<_>>()
                ))
            })
    }

    /// The kept positions (true) of a dropout of probability `p` < 1 over a tensor of `size` on
    /// `device`, from this run's generator of that device: on the CPU from a parallel
    /// counter-based stream (see `xpm_dropout_mask_`), on CUDA from libtorch's `bernoulli_`.
    fn keep_mask(&self, size: &[i64], device: Device, p: f64) -> Result<Tensor> {
        let generator = self.own_generator(device)?;
        if device == Device::Cpu {
            let mut mask = Tensor::f_empty(size, (Kind::Bool, device))?;
            generator.dropout_mask_(&mut mask, 1.0 - p)?;
            return Ok(mask);
        }
        let mut noise = Tensor::f_empty(size, (Kind::Float, device))?;
        generator.bernoulli_(&mut noise, 1.0 - p)?;
        Ok(noise.f_to_kind(Kind::Bool)?)
    }
}

thread_local! {
    /// The generators of the run on this thread (a run owns its thread).
    static ACTIVE: RefCell<Option<Rc<RunGenerators>>> = const { RefCell::new(None) };
    /// The generators of models used outside a run on this thread.
    static OUTSIDE: RefCell<Option<Rc<RunGenerators>>> = const { RefCell::new(None) };
}

/// Keeps a run's generators active on this thread; restores the previous ones when dropped.
#[must_use = "the generators are active only while this guard lives"]
pub struct ActiveGenerators {
    previous: Option<Rc<RunGenerators>>,
}

impl Drop for ActiveGenerators {
    fn drop(&mut self) {
        let previous = self.previous.take();
        ACTIVE.with(|a| *a.borrow_mut() = previous);
    }
}

/// Dropout with probability `p` when `training`: `input` times a mask of Bernoulli(1 − p)
/// draws, scaled by 1/(1 − p) (see [`dropout_mask`]).
///
/// # Errors
/// A libtorch error.
pub fn dropout(input: &Tensor, p: f64, training: bool) -> Result<Tensor> {
    match dropout_mask(input, p, training)? {
        Some(mask) => Ok(input.f_mul(&mask.keep)?.f_mul_scalar(mask.scale)?),
        None => Ok(input.shallow_clone()),
    }
}

/// Where a dropout keeps the elements of a tensor, and the scale kept elements take.
#[derive(Debug)]
pub struct DropoutMask {
    /// True where the element is kept; shaped as the tensor dropped out.
    pub keep: Tensor,
    /// 1/(1 − p): what kept elements are multiplied by (1 when nothing is kept).
    pub scale: f64,
}

/// The mask of a dropout with probability `p` over a tensor shaped as `input`, or `None` when
/// nothing is dropped (not `training`, or `p` is 0). The mask draws from the generators of the
/// run active on this thread (see [`RunGenerators::activate`]), so the masks depend on the
/// run's seed and are restored with its checkpoints. Outside a run (a model used directly, in
/// training mode) it draws from generators of the calling thread seeded with 0 — never from
/// libtorch's default generator, which only a run holding the [`GlobalGeneratorLease`] may
/// touch. A caller may apply the scale where it is cheapest: attention scales its (much
/// smaller) output rather than its weights.
///
/// # Errors
/// A libtorch error.
pub fn dropout_mask(input: &Tensor, p: f64, training: bool) -> Result<Option<DropoutMask>> {
    if !training || p <= 0.0 {
        return Ok(None);
    }
    if p >= 1.0 {
        let keep = Tensor::f_zeros(input.size(), (Kind::Bool, input.device()))?;
        return Ok(Some(DropoutMask { keep, scale: 1.0 }));
    }
    let active = ACTIVE.with(|a| a.borrow().clone());
    let generators = match active {
        Some(generators) => generators,
        None => outside_a_run(input.device())?,
    };
    let keep = generators.keep_mask(&input.size(), input.device(), p)?;
    Ok(Some(DropoutMask {
        keep,
        scale: 1.0 / (1.0 - p),
    }))
}

/// The calling thread's generators for models used outside a run, covering `device`.
fn outside_a_run(device: Device) -> Result<Rc<RunGenerators>> {
    OUTSIDE.with(|o| {
        let mut slot = o.borrow_mut();
        match slot.as_ref() {
            Some(g) if g.own_generator(device).is_ok() => Ok(g.clone()),
            _ => {
                let g = Rc::new(RunGenerators::new(0, 0, device, false)?);
                *slot = Some(g.clone());
                Ok(g)
            }
        }
    })
}

/// The right to use libtorch's default generators for a whole run. One thread holds it at a
/// time; the holder may take it again (a run rebuilt while resuming). Released when the last
/// guard of its thread drops.
#[derive(Debug)]
pub struct GlobalGeneratorLease {
    _private: (),
}

#[derive(Debug)]
struct LeaseState {
    owner: Option<ThreadId>,
    depth: usize,
}

static LEASE: Mutex<LeaseState> = Mutex::new(LeaseState {
    owner: None,
    depth: 0,
});
static LEASE_FREED: Condvar = Condvar::new();

impl GlobalGeneratorLease {
    /// Takes the lease at once when it is free or this thread holds it already.
    pub fn try_take() -> Option<Self> {
        let me = std::thread::current().id();
        let mut state = LEASE.lock().unwrap_or_else(PoisonError::into_inner);
        match state.owner {
            Some(owner) if owner != me => None,
            _ => {
                state.owner = Some(me);
                state.depth += 1;
                Some(GlobalGeneratorLease { _private: () })
            }
        }
    }

    /// Takes the lease, waiting for another thread's run to release it.
    pub fn take() -> Self {
        let me = std::thread::current().id();
        let mut state = LEASE.lock().unwrap_or_else(PoisonError::into_inner);
        while state.owner.is_some_and(|owner| owner != me) {
            state = LEASE_FREED
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
        state.owner = Some(me);
        state.depth += 1;
        GlobalGeneratorLease { _private: () }
    }
}

impl Drop for GlobalGeneratorLease {
    fn drop(&mut self) {
        let mut state = LEASE.lock().unwrap_or_else(PoisonError::into_inner);
        state.depth = state.depth.saturating_sub(1);
        if state.depth == 0 {
            state.owner = None;
            LEASE_FREED.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    fn ones() -> Tensor {
        Tensor::ones([4, 64], (Kind::Float, Device::Cpu))
    }

    #[test]
    fn same_seed_same_masks_and_ranks_differ() {
        let a = Rc::new(RunGenerators::new(7, 0, Device::Cpu, false).unwrap());
        let b = Rc::new(RunGenerators::new(7, 0, Device::Cpu, false).unwrap());
        let other_rank = Rc::new(RunGenerators::new(7, 1, Device::Cpu, false).unwrap());
        let draw = |g: &Rc<RunGenerators>| {
            let _active = g.activate();
            dropout(&ones(), 0.5, true).unwrap()
        };
        let (x, y, z) = (draw(&a), draw(&b), draw(&other_rank));
        assert!(x.equal(&y));
        assert!(!x.equal(&z));
        // Kept entries are scaled by 1/(1 - p), dropped ones are zero.
        let values: Vec<f32> = Vec::try_from(x.flatten(0, -1)).unwrap();
        assert!(values.iter().all(|v| *v == 0.0 || *v == 2.0));
        assert!(values.contains(&0.0) && values.contains(&2.0));
        // The next draw differs from the first.
        assert!(!draw(&a).equal(&x));
    }

    #[test]
    fn a_restored_state_replays_the_same_masks() {
        let g = Rc::new(RunGenerators::new(3, 0, Device::Cpu, false).unwrap());
        let _active = g.activate();
        let _ = dropout(&ones(), 0.3, true).unwrap();
        let saved = g.states().unwrap();
        assert_eq!(saved.len(), 1);
        assert_eq!(saved[0].0, "cpu");
        let first = dropout(&ones(), 0.3, true).unwrap();
        let fresh = Rc::new(RunGenerators::new(99, 0, Device::Cpu, false).unwrap());
        fresh.restore(&saved, "c").unwrap();
        let _fresh_active = fresh.activate();
        assert!(dropout(&ones(), 0.3, true).unwrap().equal(&first));
        // A checkpoint of other streams does not fit.
        let err = fresh
            .restore(&vec![("cuda:0".to_string(), saved[0].1.clone())], "c")
            .unwrap_err();
        assert!(err.to_string().contains("cuda:0"), "{err}");
    }

    fn philox(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
        let mut out = [0u32; 4];
        let key = u64::from(key[0]) | (u64::from(key[1]) << 32);
        // SAFETY: four readable and four writable words.
        unsafe { xpm_philox4x32_10(counter.as_ptr(), key, out.as_mut_ptr()) };
        out
    }

    #[test]
    fn philox_gives_the_published_known_answers() {
        // Random123's known-answer vectors for Philox4x32-10 (counter, key → output).
        assert_eq!(
            philox([0; 4], [0; 2]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn masks_keep_the_asked_fraction_in_every_kind_whatever_the_split() {
        let n = 1 << 20;
        for kind in [Kind::Float, Kind::Double, Kind::BFloat16, Kind::Half] {
            let g = Rc::new(RunGenerators::new(11, 0, Device::Cpu, false).unwrap());
            let saved = g.states().unwrap();
            let _active = g.activate();
            let x = Tensor::ones([n], (kind, Device::Cpu));
            let y = dropout(&x, 0.2, true).unwrap();
            let kept = y.f_ne(0.0).unwrap().sum(Kind::Int64).int64_value(&[]) as f64;
            // Binomial(n, 0.8): five standard deviations are about 2,000 records.
            let sd = (n as f64 * 0.8 * 0.2).sqrt();
            assert!(
                (kept - 0.8 * n as f64).abs() < 5.0 * sd,
                "{kind:?}: kept {kept}"
            );
            let values = y.f_masked_select(&y.f_ne(0.0).unwrap()).unwrap();
            assert!(
                values.f_eq(1.25).unwrap().all().int64_value(&[]) == 1,
                "{kind:?}"
            );
            // Element i depends on the key and i alone: a short mask drawn from the same state
            // (one block, one thread) is the prefix of the long one (many blocks, split over
            // the intra-op threads).
            g.restore(&saved, "c").unwrap();
            let short = dropout(&Tensor::ones([10], (kind, Device::Cpu)), 0.2, true).unwrap();
            assert!(short.equal(&y.narrow(0, 0, 10)), "{kind:?}");
        }
    }

    /// Autograd keeps the mask for the backward: a bool one, a quarter of a float one, and
    /// what `dropout` applies.
    #[test]
    fn the_mask_is_bool_and_dropout_applies_it_scaled() {
        let g = Rc::new(RunGenerators::new(4, 0, Device::Cpu, false).unwrap());
        let saved = g.states().unwrap();
        let _active = g.activate();
        let x = Tensor::arange(1000, (Kind::Float, Device::Cpu));
        let mask = dropout_mask(&x, 0.3, true).unwrap().unwrap();
        assert_eq!(mask.keep.kind(), Kind::Bool);
        assert!((mask.scale - 1.0 / 0.7).abs() < 1e-15);
        g.restore(&saved, "c").unwrap();
        let y = dropout(&x, 0.3, true).unwrap();
        let expected = x.where_self(&mask.keep, &x.zeros_like()) * mask.scale;
        assert!(y.equal(&expected));
        assert!(dropout_mask(&x, 0.3, false).unwrap().is_none());
    }

    /// The correlation of two equally long 0/1 tensors.
    fn correlation(a: &Tensor, b: &Tensor) -> f64 {
        let (a, b) = (a.to_kind(Kind::Double), b.to_kind(Kind::Double));
        let (a, b) = (&a - a.mean(Kind::Double), &b - b.mean(Kind::Double));
        let cov = (&a * &b).mean(Kind::Double).double_value(&[]);
        let var = |x: &Tensor| (x * x).mean(Kind::Double).double_value(&[]);
        cov / (var(&a) * var(&b)).sqrt()
    }

    /// What a sequence model's dropout needs of its masks, as transformers' independent
    /// Bernoulli draws give it: every position kept with the same probability, and no
    /// dependence between one step's mask and the next, between the sequences of a batch, or
    /// between neighbouring positions (each bound is five standard errors).
    #[test]
    fn masks_are_independent_between_steps_sequences_and_positions() {
        let g = Rc::new(RunGenerators::new(11, 0, Device::Cpu, false).unwrap());
        let _active = g.activate();
        let (draws, rows, width) = (400, 8, 256);
        let x = Tensor::ones([rows, width], (Kind::Float, Device::Cpu));
        let masks: Vec<Tensor> = (0..draws)
            .map(|_| dropout_mask(&x, 0.1, true).unwrap().unwrap().keep)
            .collect();
        let m = Tensor::stack(&masks, 0).to_kind(Kind::Float);
        let kept = m.mean_dim(0, false, Kind::Double);
        let (low, high) = (kept.min().double_value(&[]), kept.max().double_value(&[]));
        let sd = (0.9f64 * 0.1 / draws as f64).sqrt();
        assert!(
            low > 0.9 - 5.0 * sd && high < 0.9 + 5.0 * sd,
            "kept fraction by position between {low} and {high}"
        );
        let bound = |pairs: i64| 5.0 / (pairs as f64).sqrt();
        let steps = correlation(&m.narrow(0, 0, draws - 1), &m.narrow(0, 1, draws - 1));
        assert!(
            steps.abs() < bound((draws - 1) * rows * width),
            "steps: {steps}"
        );
        let sequences = correlation(&m.narrow(1, 0, rows - 1), &m.narrow(1, 1, rows - 1));
        assert!(
            sequences.abs() < bound(draws * (rows - 1) * width),
            "sequences: {sequences}"
        );
        let positions = correlation(&m.narrow(2, 0, width - 1), &m.narrow(2, 1, width - 1));
        assert!(
            positions.abs() < bound(draws * rows * (width - 1)),
            "positions: {positions}"
        );
    }

    #[test]
    fn no_dropout_when_evaluating_or_at_zero() {
        let x = ones();
        assert!(dropout(&x, 0.5, false).unwrap().equal(&x));
        assert!(dropout(&x, 0.0, true).unwrap().equal(&x));
        let g = Rc::new(RunGenerators::new(1, 0, Device::Cpu, false).unwrap());
        let _active = g.activate();
        let all = dropout(&x, 1.0, true).unwrap();
        assert_eq!(all.sum(Kind::Float).double_value(&[]), 0.0);
    }

    #[test]
    fn the_global_lease_is_reentrant_on_its_thread_and_exclusive_across_threads() {
        let first = GlobalGeneratorLease::take();
        let again = GlobalGeneratorLease::try_take();
        assert!(again.is_some());
        let elsewhere = std::thread::spawn(|| GlobalGeneratorLease::try_take().is_some())
            .join()
            .unwrap();
        assert!(!elsewhere);
        drop(again);
        drop(first);
        // Released: another thread gets it (once any other test holding it is done).
        std::thread::spawn(|| drop(GlobalGeneratorLease::take()))
            .join()
            .unwrap();
    }
}
