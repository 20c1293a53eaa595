//! The sampler of scored text pairs (pointwise records), encoded batch by batch for the model.

use std::sync::Arc;

use tch::Tensor;

use crate::data::formats::text_triplets::strs;
use crate::data::{
    pass_position, restore_pass, Batch, PointwiseBatch, RecordKind, Sampler, Shard, ShuffledPass,
    TextEncoding, TextPairs, Truncation,
};
use crate::rng::Rng;
use crate::Result;

/// Scored text pairs in a fresh random order each pass, each batch encoded for the model:
/// pointwise records whose relevance is the pair's score.
#[derive(Debug)]
pub struct TextPairSampler {
    pairs: Arc<TextPairs>,
    encoding: TextEncoding,
    pass: ShuffledPass,
    truncation: Truncation,
}

impl TextPairSampler {
    /// A sampler over `pairs`, this `shard` of them, shuffled by `rng`, encoded by `encoding`.
    ///
    /// # Errors
    /// [`Error::Config`](crate::Error::Config) at `path` when there are fewer pairs than ranks.
    pub fn new(
        pairs: TextPairs,
        encoding: TextEncoding,
        rng: Rng,
        shard: Shard,
        path: &str,
    ) -> Result<Self> {
        Ok(TextPairSampler {
            pass: ShuffledPass::new(pairs.query.len(), rng, shard, path)?,
            pairs: Arc::new(pairs),
            encoding,
            truncation: Truncation::default(),
        })
    }
}

impl Sampler for TextPairSampler {
    fn kind(&self) -> RecordKind {
        RecordKind::Pointwise
    }

    fn next_batch(&mut self, size: usize) -> Result<Batch> {
        let rows: Vec<usize> = (0..size).map(|_| self.pass.next_item()).collect();
        let p = &self.pairs;
        let queries: Vec<String> = rows.iter().map(|&r| p.query[r].clone()).collect();
        let documents: Vec<String> = rows.iter().map(|&r| p.document[r].clone()).collect();
        let scores: Vec<f32> = rows.iter().map(|&r| p.score[r]).collect();
        let (input, cut) = self.encoding.encode(&strs(&queries), &strs(&documents))?;
        self.truncation = self.truncation.plus(cut);
        Ok(Batch::Pointwise(PointwiseBatch {
            input,
            relevance: Tensor::f_from_slice(&scores)?,
        }))
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
        Box::new(TextPairSampler {
            pairs: self.pairs.clone(),
            encoding: self.encoding.clone(),
            pass: self.pass.clone(),
            truncation: self.truncation,
        })
    }
}
