//! [`ShuffledPass`]: endless shuffled passes over item indices, split between the ranks of a
//! distributed run ([`Shard`]), whose whole state is a generator state and a cursor.

use crate::rng::Rng;
use crate::{Error, Result};

/// Which part of the data one process of a distributed run sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    /// This process's rank, below `world`.
    pub rank: usize,
    /// Number of processes.
    pub world: usize,
}

impl Shard {
    /// The whole data, for a single process.
    pub const WHOLE: Shard = Shard { rank: 0, world: 1 };

    /// The shard of `rank` among `world` processes.
    ///
    /// # Errors
    /// [`Error::Config`] unless `rank < world`.
    pub fn new(rank: usize, world: usize) -> Result<Self> {
        if world == 0 || rank >= world {
            return Err(Error::config(
                "distributed",
                format!("rank {rank} is not below the world size {world}"),
            ));
        }
        Ok(Shard { rank, world })
    }
}

/// Where a [`ShuffledPass`] is, for checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SamplerPosition {
    /// Generator state at the start of the current pass.
    pub pass_seed: u64,
    /// Positions of the current pass's permutation already taken (all ranks together).
    pub cursor: usize,
}

/// Endless passes over items `0..len` in a fresh random order each pass. Every rank of a
/// distributed run draws the same permutation and takes every `world`-th position from its
/// `rank`, so within a pass the ranks together see each item exactly once. A pass is decided by
/// the generator's state at its start: that state and the cursor are the whole state.
#[derive(Debug, Clone)]
pub struct ShuffledPass {
    order: Vec<u32>,
    cursor: usize,
    pass_start: Rng,
    rng: Rng,
    shard: Shard,
}

impl ShuffledPass {
    /// Passes over `0..len` (at least 1 item, at least one per rank) shuffled by `rng`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when there are fewer items than ranks.
    pub fn new(len: usize, rng: Rng, shard: Shard, path: &str) -> Result<Self> {
        if len < shard.world.max(1) {
            return Err(Error::config(
                path,
                format!(
                    "{len} sample(s) cannot feed {} process(es): each needs at least one",
                    shard.world
                ),
            ));
        }
        let mut pass = ShuffledPass {
            order: (0..len as u32).collect(),
            cursor: 0,
            pass_start: rng.clone(),
            rng,
            shard,
        };
        pass.start_pass();
        Ok(pass)
    }

    fn start_pass(&mut self) {
        self.pass_start = self.rng.clone();
        for (i, slot) in self.order.iter_mut().enumerate() {
            *slot = i as u32;
        }
        self.rng.shuffle(&mut self.order);
        self.cursor = self.shard.rank;
    }

    /// The next item of this rank; a new pass starts when this one has no more for it.
    pub fn next_item(&mut self) -> usize {
        if self.cursor >= self.order.len() {
            self.start_pass();
        }
        let item = self.order[self.cursor] as usize;
        self.cursor += self.shard.world;
        item
    }

    /// A generator for the item just taken, decided by the pass and the position alone, for
    /// samplers that draw more randomness per item (it survives checkpoints unchanged).
    pub fn item_rng(&self) -> Rng {
        Rng::new(self.pass_start.state() ^ (self.cursor as u64).wrapping_mul(0x9e37_79b9))
    }

    /// Where the pass is.
    pub fn position(&self) -> SamplerPosition {
        SamplerPosition {
            pass_seed: self.pass_start.state(),
            cursor: self.cursor,
        }
    }

    /// Continues from a saved position.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when the position does not fit this data or rank.
    pub fn restore(&mut self, position: SamplerPosition, path: &str) -> Result<()> {
        if position.cursor > self.order.len() + self.shard.world
            || position.cursor % self.shard.world != self.shard.rank
        {
            return Err(Error::config(
                path,
                "the checkpointed sampler position does not fit this data (or this rank)",
            ));
        }
        self.rng = Rng::from_state(position.pass_seed);
        self.start_pass();
        self.cursor = position.cursor;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_together_see_each_item_once_per_pass() {
        for world in 1..=4 {
            for len in [world, 7, 10, 13] {
                let mut seen = Vec::new();
                for rank in 0..world {
                    let shard = Shard::new(rank, world).unwrap();
                    let mut pass = ShuffledPass::new(len, Rng::new(5), shard, "s").unwrap();
                    let mine = (len - rank).div_ceil(world);
                    seen.extend((0..mine).map(|_| pass.next_item()));
                }
                seen.sort_unstable();
                assert_eq!(
                    seen,
                    (0..len).collect::<Vec<_>>(),
                    "world {world}, len {len}"
                );
            }
        }
    }

    #[test]
    fn a_restored_pass_continues_identically() {
        let shard = Shard::new(1, 3).unwrap();
        let mut a = ShuffledPass::new(11, Rng::new(9), shard, "s").unwrap();
        (0..5).for_each(|_| {
            a.next_item();
        });
        let mut b = ShuffledPass::new(11, Rng::new(1), shard, "s").unwrap();
        b.restore(a.position(), "s").unwrap();
        for _ in 0..20 {
            assert_eq!(a.next_item(), b.next_item());
        }
        let other_rank = Shard::new(0, 3).unwrap();
        let mut c = ShuffledPass::new(11, Rng::new(1), other_rank, "s").unwrap();
        assert!(c.restore(a.position(), "s").is_err());
    }

    #[test]
    fn too_few_samples_for_the_ranks_is_a_clear_error() {
        let err = ShuffledPass::new(1, Rng::new(0), Shard::new(0, 2).unwrap(), "t.sampler")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("t.sampler:"), "{err}");
    }
}
