//! The sampler of triplets of token ids.

use crate::data::{
    pass_position, restore_pass, Batch, RecordKind, Sampler, Shard, ShuffledPass, TokenTriplets,
};
use crate::rng::Rng;
use crate::Result;

/// Triplets of token ids in a fresh random order each pass.
#[derive(Debug)]
pub struct TokenTripletSampler {
    triplets: std::sync::Arc<TokenTriplets>,
    pass: ShuffledPass,
}

impl TokenTripletSampler {
    /// A sampler over `triplets`, this `shard` of them, shuffled by `rng`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when there are fewer triplets than ranks.
    pub fn new(triplets: TokenTriplets, rng: Rng, shard: Shard, path: &str) -> Result<Self> {
        Ok(TokenTripletSampler {
            pass: ShuffledPass::new(triplets.len(), rng, shard, path)?,
            triplets: std::sync::Arc::new(triplets),
        })
    }
}

impl Sampler for TokenTripletSampler {
    fn kind(&self) -> RecordKind {
        RecordKind::Pairwise
    }

    fn next_batch(&mut self, size: usize) -> Result<Batch> {
        let rows: Vec<usize> = (0..size).map(|_| self.pass.next_item()).collect();
        Ok(Batch::Pairwise(self.triplets.batch(&rows)?))
    }

    fn position(&self) -> serde_json::Value {
        pass_position(&self.pass)
    }

    fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()> {
        restore_pass(&mut self.pass, position, path)
    }

    fn fork(&self) -> Box<dyn Sampler> {
        Box::new(TokenTripletSampler {
            triplets: self.triplets.clone(),
            pass: self.pass.clone(),
        })
    }
}
