use tch::{Kind, Tensor};

use super::{LtrDataset, PreferencePair};
use crate::rng::Rng;
use crate::{Error, Result};

/// A batch of preference pairs: row `k` of `positive` should score above row `k` of `negative`.
#[derive(Debug)]
pub struct PairwiseBatch {
    /// Features of the preferred documents, `B × F`.
    pub positive: Tensor,
    /// Features of the other documents, `B × F`.
    pub negative: Tensor,
}

impl PairwiseBatch {
    /// Number of pairs.
    pub fn len(&self) -> i64 {
        self.positive.size().first().copied().unwrap_or(0)
    }

    /// Whether the batch holds no pair.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Walks every preference pair of a dataset in a shuffled order, reshuffling at each pass.
/// Each pass shuffles the pairs' canonical order, so a pass is determined by the generator's
/// state at its start: that state and the position in the pass are the whole sampler state.
#[derive(Debug)]
pub struct PairwiseSampler {
    features: Tensor,
    canonical: Vec<PreferencePair>,
    pairs: Vec<PreferencePair>,
    cursor: usize,
    pass_start: Rng,
    rng: Rng,
}

/// Where a [`PairwiseSampler`] is, for checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SamplerPosition {
    /// Generator state at the start of the current pass.
    pub pass_seed: u64,
    /// Pairs of the current pass already taken.
    pub cursor: usize,
}

impl PairwiseSampler {
    /// A sampler over `dataset`, shuffled by `rng`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when the dataset has no preference pair.
    pub fn new(dataset: &LtrDataset, rng: Rng, path: &str) -> Result<Self> {
        let pairs = dataset.preference_pairs();
        if pairs.is_empty() {
            return Err(Error::config(
                path,
                "the dataset has no two documents of one query with different relevance",
            ));
        }
        let mut sampler = PairwiseSampler {
            features: dataset.features_tensor()?,
            canonical: pairs.clone(),
            pairs,
            cursor: 0,
            pass_start: rng.clone(),
            rng,
        };
        sampler.start_pass();
        Ok(sampler)
    }

    /// An independent sampler over the same data, at the same position (the features tensor is
    /// shared, read-only).
    pub fn fork(&self) -> Self {
        PairwiseSampler {
            features: self.features.shallow_clone(),
            canonical: self.canonical.clone(),
            pairs: self.pairs.clone(),
            cursor: self.cursor,
            pass_start: self.pass_start.clone(),
            rng: self.rng.clone(),
        }
    }

    fn start_pass(&mut self) {
        self.pass_start = self.rng.clone();
        self.pairs.copy_from_slice(&self.canonical);
        self.rng.shuffle(&mut self.pairs);
        self.cursor = 0;
    }

    /// Where the sampler is.
    pub fn position(&self) -> SamplerPosition {
        SamplerPosition {
            pass_seed: self.pass_start.state(),
            cursor: self.cursor,
        }
    }

    /// Continues from a saved position.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when the position does not fit this dataset.
    pub fn restore(&mut self, position: SamplerPosition, path: &str) -> Result<()> {
        if position.cursor > self.canonical.len() {
            return Err(Error::config(
                path,
                "the checkpointed sampler position is past the end of the data",
            ));
        }
        self.rng = Rng::from_state(position.pass_seed);
        self.start_pass();
        self.cursor = position.cursor;
        Ok(())
    }

    /// The next `batch_size` pairs; the pass restarts, reshuffled, when the pairs run out.
    ///
    /// # Errors
    /// A libtorch error while gathering features.
    pub fn next_batch(&mut self, batch_size: usize) -> Result<PairwiseBatch> {
        let mut pos = Vec::with_capacity(batch_size);
        let mut neg = Vec::with_capacity(batch_size);
        while pos.len() < batch_size {
            if self.cursor == self.pairs.len() {
                self.start_pass();
            }
            let (p, n) = self.pairs[self.cursor];
            pos.push(i64::from(p));
            neg.push(i64::from(n));
            self.cursor += 1;
        }
        let gather = |idx: &[i64]| -> Result<Tensor> {
            let index = Tensor::f_from_slice(idx)?.f_to_kind(Kind::Int64)?;
            Ok(self.features.f_index_select(0, &index)?)
        };
        Ok(PairwiseBatch {
            positive: gather(&pos)?,
            negative: gather(&neg)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset() -> LtrDataset {
        LtrDataset {
            features: vec![3.0, 1.0, 2.0],
            num_features: 1,
            relevance: vec![2, 0, 1],
            query_bounds: vec![0, 3],
        }
    }

    #[test]
    fn batches_hold_preferred_documents_first() {
        let mut s = PairwiseSampler::new(&dataset(), Rng::new(0), "s").unwrap();
        let b = s.next_batch(7).unwrap();
        assert_eq!(b.len(), 7);
        let pos = Vec::<f32>::try_from(b.positive.flatten(0, -1)).unwrap();
        let neg = Vec::<f32>::try_from(b.negative.flatten(0, -1)).unwrap();
        // Feature value == grade order here, so every pair is increasing.
        assert!(pos.iter().zip(&neg).all(|(p, n)| p > n));
    }

    #[test]
    fn one_pass_visits_each_pair_once() {
        let mut s = PairwiseSampler::new(&dataset(), Rng::new(4), "s").unwrap();
        let b = s.next_batch(3).unwrap();
        let mut got: Vec<(i64, i64)> = Vec::<f32>::try_from(b.positive.flatten(0, -1))
            .unwrap()
            .into_iter()
            .zip(Vec::<f32>::try_from(b.negative.flatten(0, -1)).unwrap())
            .map(|(p, n)| (p as i64, n as i64))
            .collect();
        got.sort();
        assert_eq!(got, vec![(2, 1), (3, 1), (3, 2)]);
    }

    #[test]
    fn a_restored_sampler_continues_with_the_same_batches() {
        let mut data = dataset();
        data.features = vec![3.0, 1.0, 2.0, 5.0, 4.0];
        data.relevance = vec![2, 0, 1, 3, 4];
        data.query_bounds = vec![0, 5];
        let mut a = PairwiseSampler::new(&data, Rng::new(9), "s").unwrap();
        let _ = a.next_batch(7).unwrap();
        let position = a.position();
        let mut b = PairwiseSampler::new(&data, Rng::new(1234), "s").unwrap();
        b.restore(position, "s").unwrap();
        for _ in 0..5 {
            let (x, y) = (a.next_batch(4).unwrap(), b.next_batch(4).unwrap());
            assert!(x.positive.equal(&y.positive) && x.negative.equal(&y.negative));
        }
    }

    #[test]
    fn a_dataset_without_pairs_is_refused() {
        let mut d = dataset();
        d.relevance = vec![1, 1, 1];
        let err = PairwiseSampler::new(&d, Rng::new(0), "learner.trainer.sampler").unwrap_err();
        assert!(err.to_string().starts_with("learner.trainer.sampler:"));
    }
}
