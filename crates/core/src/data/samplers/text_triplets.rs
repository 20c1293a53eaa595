//! The sampler of text triplets (query, positive, negative), from a file or from ids over
//! collections, encoded batch by batch for the model.

use std::sync::Arc;

use crate::data::formats::text_triplets::strs;
use crate::data::{
    pass_position, restore_pass, Batch, PairwiseBatch, RecordKind, Sampler, Shard, ShuffledPass,
    TextEncoding, TripletTexts, Truncation,
};
use crate::rng::Rng;
use crate::Result;

/// Text triplets in a fresh random order each pass, each batch encoded for the model: pairs
/// `(query, positive)` and `(query, negative)`, or queries and documents apart.
#[derive(Debug)]
pub struct TextTripletSampler {
    triplets: Arc<dyn TripletTexts>,
    encoding: TextEncoding,
    pass: ShuffledPass,
    truncation: Truncation,
}

impl TextTripletSampler {
    /// A sampler over `triplets`, this `shard` of them, shuffled by `rng`, encoded by
    /// `encoding`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when there are fewer triplets than ranks.
    pub fn new(
        triplets: Arc<dyn TripletTexts>,
        encoding: TextEncoding,
        rng: Rng,
        shard: Shard,
        path: &str,
    ) -> Result<Self> {
        Ok(TextTripletSampler {
            pass: ShuffledPass::new(triplets.count(), rng, shard, path)?,
            triplets,
            encoding,
            truncation: Truncation::default(),
        })
    }
}

impl Sampler for TextTripletSampler {
    fn kind(&self) -> RecordKind {
        RecordKind::Pairwise
    }

    fn next_batch(&mut self, size: usize) -> Result<Batch> {
        let rows: Vec<usize> = (0..size).map(|_| self.pass.next_item()).collect();
        let [queries, positives, negatives] = self.triplets.texts(&rows)?;
        let queries = strs(&queries);
        let (positive, cut_p) = self.encoding.encode(&queries, &strs(&positives))?;
        let (negative, cut_n) = self.encoding.encode(&queries, &strs(&negatives))?;
        self.truncation = self.truncation.plus(cut_p).plus(cut_n);
        Ok(Batch::Pairwise(PairwiseBatch::new(positive, negative)))
    }

    fn position(&self) -> serde_json::Value {
        pass_position(&self.pass)
    }

    fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()> {
        restore_pass(&mut self.pass, position, path)
    }

    fn truncation(&self) -> Option<Truncation> {
        Some(self.truncation)
    }

    fn fork(&self) -> Box<dyn Sampler> {
        Box::new(TextTripletSampler {
            triplets: self.triplets.clone(),
            encoding: self.encoding.clone(),
            pass: self.pass.clone(),
            truncation: self.truncation,
        })
    }
}
