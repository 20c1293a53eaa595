//! The learner's view of a data-parallel run: whether this process is one of several ranks, and
//! the few collectives the loop needs. On a single process every helper is a no-op, so the loop
//! reads the same either way.
//!
//! How a run with `strategy: "ddp"` behaves:
//! - every rank builds the same model from the same seed; rank 0's parameters are broadcast once
//!   after building (and after resuming), as PyTorch's DDP does;
//! - samplers take every `world`-th position of the same shuffled pass from their `rank`;
//! - after each step's backward the gradients are averaged over the ranks (each rank's loss is a
//!   mean over its own equal share of the batch, so the mean is the whole batch's gradient);
//! - skipped steps (non-finite gradients under a loss scaler), interruption and early stopping are
//!   decided by all ranks together through [`Distributed::any_flag`];
//! - the training metrics of an epoch are averaged over the ranks;
//! - every rank validates (with the same weights); only rank 0 writes TensorBoard logs,
//!   checkpoints, the learned model, best models and listener info files, saving in each
//!   checkpoint every rank's sampler positions and generator states (each rank draws its own
//!   dropout masks); every rank reads the checkpoint when resuming, takes its own part, and all
//!   check that they resumed from the same step.

use std::collections::BTreeMap;

use tch::{Device, Tensor};

use super::checkpoint::RankState;
use crate::config::FabricConfigurationConfig;
use crate::data::Shard;
use crate::distributed::{
    Backend, DistEnv, DistributedError, GradReduction, ProcessGroup, ReduceOp, DEFAULT_TIMEOUT,
};
use crate::models::Model;
use crate::runtime::{AUTO_STRATEGY, DDP};
use crate::{Error, Result};

/// Steps between two comparisons of the ranks' stop requests (see
/// [`Distributed::agree_to_stop`]). With a small model the loop is bound by collective latency
/// (the gradient all-reduce is the other one per step), so this check is not made every step.
const STOP_CHECK_INTERVAL: u64 = 8;

/// This process's place in the run, and its process group when there are several ranks.
#[derive(Debug)]
pub(crate) struct Distributed {
    group: Option<ProcessGroup>,
}

impl Distributed {
    /// A lone process.
    pub fn single() -> Self {
        Distributed { group: None }
    }

    /// Joins the process group when `fabric` asks for `ddp`, or for `auto` in a launch
    /// environment of several ranks; a lone process otherwise. Ranks training on CUDA (`device`)
    /// communicate with NCCL, others with Gloo. Returns warnings to report as well.
    ///
    /// # Errors
    /// [`Error::Distributed`] when the environment is malformed or the rendezvous fails.
    pub fn join(fabric: &FabricConfigurationConfig, device: Device) -> Result<(Self, Vec<String>)> {
        if fabric.strategy.as_str() != DDP && fabric.strategy.as_str() != AUTO_STRATEGY {
            return Ok((Self::single(), Vec::new()));
        }
        Self::join_in(fabric, device, &DistEnv::from_env()?)
    }

    /// [`Distributed::join`] in the launch environment `env`. `ddp` always makes a group, as
    /// Lightning's does: of one process on a free loopback port when nothing launched several
    /// (`devices: 1`, `torchrun --nproc-per-node 1`), so that one GPU trains through NCCL as
    /// several do. `auto` is ddp only when `env` holds several ranks.
    fn join_in(
        fabric: &FabricConfigurationConfig,
        device: Device,
        env: &DistEnv,
    ) -> Result<(Self, Vec<String>)> {
        if fabric.strategy.as_str() == AUTO_STRATEGY && !env.is_distributed() {
            return Ok((Self::single(), Vec::new()));
        }
        let backend = match device {
            Device::Cuda(device) => Backend::Nccl { device },
            _ => Backend::Gloo,
        };
        let group = ProcessGroup::new(env, backend, DEFAULT_TIMEOUT)?;
        Ok((Distributed { group: Some(group) }, Vec::new()))
    }

    /// This process's rank (0 alone).
    pub fn rank(&self) -> usize {
        self.group.as_ref().map_or(0, ProcessGroup::rank)
    }

    /// The number of ranks (1 alone).
    pub fn world(&self) -> usize {
        self.group.as_ref().map_or(1, ProcessGroup::world_size)
    }

    /// Whether this process writes the run's files (logs, checkpoints, models): rank 0.
    pub fn is_writer(&self) -> bool {
        self.rank() == 0
    }

    /// The part of the training data this rank samples.
    ///
    /// # Errors
    /// Never in practice (the group's rank is below its world).
    pub fn shard(&self) -> Result<Shard> {
        Shard::new(self.rank(), self.world())
    }

    /// Whether any rank passed `true` (the same answer everywhere); `flag` alone.
    ///
    /// This is the one place where the ranks agree on a branch. It decides skipped steps,
    /// interruption and early stopping; an out-of-memory on one rank (once micro-batching
    /// recovers from it) must go through it too, so that all ranks shrink or fail together.
    ///
    /// # Errors
    /// [`Error::Distributed`] when a peer died or hung.
    pub fn any_flag(&self, flag: bool) -> Result<bool> {
        match &self.group {
            Some(group) => group.any_flag(flag),
            None => Ok(flag),
        }
    }

    /// Whether the run stops before step `step` because some rank was asked to (a signal, an
    /// abort). Alone: `asked` at once. With several ranks the ranks compare their requests only
    /// every [`STOP_CHECK_INTERVAL`] steps, all at the same steps, sparing a collective per step;
    /// a request stays set until then.
    ///
    /// # Errors
    /// [`Error::Distributed`] when a peer died or hung.
    pub fn agree_to_stop(&self, step: u64, asked: bool) -> Result<bool> {
        if self.group.is_none() {
            return Ok(asked);
        }
        if !step.is_multiple_of(STOP_CHECK_INTERVAL) {
            return Ok(false);
        }
        self.any_flag(asked)
    }

    /// Replaces each gradient by its mean over the ranks.
    ///
    /// # Errors
    /// [`Error::Distributed`].
    pub fn average_gradients(&self, params: &[Tensor]) -> Result<()> {
        match &self.group {
            Some(group) => group.all_reduce_gradients_with(params, GradReduction::Mean),
            None => Ok(()),
        }
    }

    /// Gives every rank rank 0's parameters. Built from the same seed they should already be
    /// equal; returns a warning when they were not (a model whose initialisation is not
    /// deterministic, or a rank that resumed differently).
    ///
    /// # Errors
    /// [`Error::Distributed`], or a libtorch error.
    pub fn broadcast_parameters(&self, model: &dyn Model) -> Result<Option<String>> {
        let Some(group) = &self.group else {
            return Ok(None);
        };
        let _no_grad = tch::no_grad_guard();
        let mut params: Vec<Tensor> = Vec::new();
        for p in model.named_parameters() {
            if !params.iter().any(|t| t.data_ptr() == p.tensor.data_ptr()) {
                params.push(p.tensor);
            }
        }
        let received = params
            .iter()
            .map(|p| {
                let mut copy = p.f_zeros_like()?;
                copy.f_copy_(p)?;
                Ok(copy)
            })
            .collect::<Result<Vec<_>>>()?;
        group.broadcast(&received, 0)?;
        let mut differed = false;
        for (param, theirs) in params.iter().zip(&received) {
            if !param.f_equal(theirs)? {
                differed = true;
                param.f_detach()?.f_copy_(theirs)?;
            }
        }
        let anywhere = group.any_flag(differed)?;
        Ok(anywhere.then(|| {
            "the ranks built different initial weights; rank 0's are used (is the model's \
             initialisation deterministic?)"
                .to_string()
        }))
    }

    /// Replaces each metric by its mean over the ranks. Every rank must hold the same metric
    /// names (they do: the same trainers log the same metrics).
    ///
    /// # Errors
    /// [`Error::Distributed`] when the ranks' metric names differ or a peer failed.
    pub fn average_metrics(&self, metrics: &mut BTreeMap<String, f64>) -> Result<()> {
        let Some(group) = &self.group else {
            return Ok(());
        };
        let names = metrics.len() as i64;
        let layout = Tensor::f_from_slice(&[names, -names])?;
        group.all_reduce(std::slice::from_ref(&layout), ReduceOp::Max)?;
        let agreed = Vec::<i64>::try_from(&layout)?;
        if agreed != [names, -names] {
            return Err(self.disagreement(format!(
                "the ranks logged between {} and {} training metrics (this rank: {names})",
                -agreed[1], agreed[0]
            )));
        }
        let values: Vec<f64> = metrics.values().copied().collect();
        let sums = Tensor::f_from_slice(&values)?;
        group.all_reduce(std::slice::from_ref(&sums), ReduceOp::Sum)?;
        let sums = Vec::<f64>::try_from(&sums)?;
        let world = self.world() as f64;
        for (value, sum) in metrics.values_mut().zip(sums) {
            *value = sum / world;
        }
        Ok(())
    }

    /// Checks that every rank stands at rank 0's global `step` (after resuming: all read the
    /// same checkpoint).
    ///
    /// # Errors
    /// [`Error::Distributed`] when they do not.
    pub fn check_same_step(&self, step: u64) -> Result<()> {
        let Some(group) = &self.group else {
            return Ok(());
        };
        let mine = i64::try_from(step).unwrap_or(i64::MAX);
        let steps = Tensor::f_from_slice(&[mine, -mine])?;
        group.all_reduce(std::slice::from_ref(&steps), ReduceOp::Max)?;
        let agreed = Vec::<i64>::try_from(&steps)?;
        if agreed != [mine, -mine] {
            return Err(self.disagreement(format!(
                "the ranks resumed at different steps (between {} and {}; this rank: {mine}); \
                 every rank must see the same checkpoint directory",
                -agreed[1], agreed[0]
            )));
        }
        Ok(())
    }

    /// Every rank's `mine`, in rank order (`[mine]` alone): what rank 0 saves for the others
    /// (their sampler positions and random generators differ from its own).
    ///
    /// # Errors
    /// [`Error::Distributed`] when a peer failed.
    pub fn gather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let Some(group) = &self.group else {
            return Ok(vec![mine.to_vec()]);
        };
        let (world, rank) = (self.world(), self.rank());
        let mut lengths = vec![0i64; world];
        lengths[rank] = mine.len() as i64;
        let lengths_tensor = Tensor::f_from_slice(&lengths)?;
        group.all_reduce(std::slice::from_ref(&lengths_tensor), ReduceOp::Sum)?;
        let lengths: Vec<usize> = Vec::<i64>::try_from(&lengths_tensor)?
            .into_iter()
            .map(|l| usize::try_from(l).unwrap_or(0))
            .collect();
        let longest = lengths.iter().copied().max().unwrap_or(0);
        // Each rank fills its own slot of a zero buffer; the sum holds every rank's bytes.
        let mut all = vec![0i32; longest * world];
        for (slot, byte) in all[rank * longest..].iter_mut().zip(mine) {
            *slot = i32::from(*byte);
        }
        let buffer = Tensor::f_from_slice(&all)?;
        group.all_reduce(std::slice::from_ref(&buffer), ReduceOp::Sum)?;
        let all = Vec::<i32>::try_from(&buffer)?;
        Ok(lengths
            .iter()
            .enumerate()
            .map(|(r, len)| {
                all[r * longest..r * longest + len]
                    .iter()
                    .map(|v| *v as u8)
                    .collect()
            })
            .collect())
    }

    /// Every rank's `mine`, in rank order (`[mine]` alone), for rank 0 to save: each rank has
    /// its own sampler positions and generator streams. Every rank must call it at the same
    /// point.
    ///
    /// # Errors
    /// [`Error::Distributed`] when a peer failed; [`Error::Panic`] when the ranks' generator
    /// states differ in layout (they run the same configuration).
    pub fn gather_rank_states(&self, mine: RankState) -> Result<Vec<RankState>> {
        if self.group.is_none() {
            return Ok(vec![mine]);
        }
        let trainer = serde_json::to_vec(&mine.trainer)
            .map_err(|e| Error::Panic(format!("trainer state: {e}")))?;
        let generators: Vec<u8> = mine
            .generators
            .iter()
            .flat_map(|(_, b)| b.iter().copied())
            .collect();
        let trainers = self.gather_bytes(&trainer)?;
        let all_generators = self.gather_bytes(&generators)?;
        trainers
            .iter()
            .zip(&all_generators)
            .enumerate()
            .map(|(rank, (trainer, flat))| {
                if flat.len() != generators.len() {
                    return Err(Error::Panic(format!(
                        "rank {rank}'s generator states hold {} bytes, this rank's {}",
                        flat.len(),
                        generators.len()
                    )));
                }
                // Every rank has the same streams, of the same sizes.
                let mut at = 0;
                let streams = mine
                    .generators
                    .iter()
                    .map(|(name, bytes)| {
                        let part = flat[at..at + bytes.len()].to_vec();
                        at += bytes.len();
                        (name.clone(), part)
                    })
                    .collect();
                Ok(RankState {
                    trainer: serde_json::from_slice(trainer)
                        .map_err(|e| Error::Panic(format!("rank {rank}'s trainer state: {e}")))?,
                    generators: streams,
                })
            })
            .collect()
    }

    fn disagreement(&self, message: String) -> Error {
        DistributedError::Collective {
            rank: self.rank(),
            world: self.world(),
            operation: "all_reduce",
            dead_ranks: Vec::new(),
            message,
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_process_agrees_with_itself() {
        let d = Distributed::single();
        assert_eq!((d.rank(), d.world()), (0, 1));
        assert!(d.is_writer());
        assert_eq!(d.shard().unwrap(), Shard::WHOLE);
        assert!(d.any_flag(true).unwrap());
        assert!(!d.any_flag(false).unwrap());
        let mut metrics = BTreeMap::from([("loss".to_string(), 2.5)]);
        d.average_metrics(&mut metrics).unwrap();
        assert_eq!(metrics["loss"], 2.5);
        d.check_same_step(7).unwrap();
        assert_eq!(d.gather_bytes(&[1, 2, 3]).unwrap(), [vec![1u8, 2, 3]]);
        // Alone, a stop request is honoured at the very next step.
        assert!(d.agree_to_stop(3, true).unwrap());
        assert!(!d.agree_to_stop(8, false).unwrap());
    }

    #[test]
    fn ddp_alone_is_a_group_of_one_and_auto_alone_is_none() {
        let fabric = |strategy: &str| FabricConfigurationConfig {
            precision: crate::config::Precision::V32True,
            torch_fp32_precision: None,
            num_nodes: 1,
            devices: "auto".into(),
            strategy: strategy.parse().unwrap(),
            accelerator: crate::config::Accelerator::Cpu,
            num_threads: None,
            deterministic: None,
        };
        let alone = DistEnv::single();
        let (ddp, warnings) = Distributed::join_in(&fabric(DDP), Device::Cpu, &alone).unwrap();
        assert!(warnings.is_empty());
        assert!(ddp.group.is_some());
        assert_eq!((ddp.rank(), ddp.world()), (0, 1));
        let mut metrics = BTreeMap::from([("loss".to_string(), 2.5)]);
        ddp.average_metrics(&mut metrics).unwrap();
        assert_eq!(metrics["loss"], 2.5);
        assert_eq!(ddp.gather_bytes(&[4, 5]).unwrap(), [vec![4u8, 5]]);
        let (auto, _) = Distributed::join_in(&fabric(AUTO_STRATEGY), Device::Cpu, &alone).unwrap();
        assert!(auto.group.is_none());
    }
}
