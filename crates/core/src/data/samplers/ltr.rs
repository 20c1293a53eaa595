//! The [`Sampler`] trait, and the samplers of learning-to-rank datasets: preference pairs
//! ([`PairwiseSampler`]), graded documents (pointwise) and per-query groups (batchwise).

use tch::{Kind, Tensor};

use crate::data::{
    grade_relevance, Batch, BatchwiseBatch, LtrDataset, PairwiseBatch, PointwiseBatch,
    PreferencePair, RecordKind, SamplerPosition, ScoreInput, Shard, ShuffledPass,
};
use crate::rng::Rng;
use crate::{Error, Result};

/// An endless, checkpointable source of training records.
pub trait Sampler: Send {
    /// What its batches hold.
    fn kind(&self) -> RecordKind;

    /// The next `size` records.
    ///
    /// # Errors
    /// A libtorch error while gathering, or a data error.
    fn next_batch(&mut self, size: usize) -> Result<Batch>;

    /// Where it is, for checkpoints.
    fn position(&self) -> serde_json::Value;

    /// Continues from a saved [`Sampler::position`].
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when the position does not fit the data.
    fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()>;

    /// An independent sampler at the same position (large read-only data is shared).
    fn fork(&self) -> Box<dyn Sampler>;

    /// For samplers of texts: the inputs cut by truncation among those encoded in the
    /// batches this sampler made so far (a fork starts from its template's counts).
    fn truncation(&self) -> Option<crate::data::Truncation> {
        None
    }
}

/// Position of a sampler walking a [`ShuffledPass`], as JSON.
pub(crate) fn pass_position(pass: &ShuffledPass) -> serde_json::Value {
    serde_json::to_value(pass.position()).unwrap_or(serde_json::Value::Null)
}

/// Restores a [`ShuffledPass`] from JSON written by [`pass_position`].
pub(crate) fn restore_pass(
    pass: &mut ShuffledPass,
    position: &serde_json::Value,
    path: &str,
) -> Result<()> {
    let position: SamplerPosition = serde_json::from_value(position.clone()).map_err(|e| {
        Error::checkpoint(
            "trainer state",
            format!("{path}: unreadable sampler position: {e}"),
        )
    })?;
    pass.restore(position, path)
}

fn index_tensor(rows: &[i64]) -> Result<Tensor> {
    Ok(Tensor::f_from_slice(rows)?.f_to_kind(Kind::Int64)?)
}

/// Every preference pair of a learning-to-rank dataset (a more and a less relevant document
/// of one query), in a fresh random order each pass.
#[derive(Debug)]
pub struct PairwiseSampler {
    features: Tensor,
    pairs: std::sync::Arc<Vec<PreferencePair>>,
    pass: ShuffledPass,
}

impl PairwiseSampler {
    /// A sampler over `dataset`'s pairs, this `shard` of them, shuffled by `rng`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when the dataset has no preference pair.
    pub fn new(dataset: &LtrDataset, rng: Rng, shard: Shard, path: &str) -> Result<Self> {
        let pairs = dataset.preference_pairs();
        if pairs.is_empty() {
            return Err(Error::config(
                path,
                "the dataset has no two documents of one query with different relevance",
            ));
        }
        Ok(PairwiseSampler {
            features: dataset.features_tensor()?,
            pass: ShuffledPass::new(pairs.len(), rng, shard, path)?,
            pairs: std::sync::Arc::new(pairs),
        })
    }
}

impl Sampler for PairwiseSampler {
    fn kind(&self) -> RecordKind {
        RecordKind::Pairwise
    }

    fn next_batch(&mut self, size: usize) -> Result<Batch> {
        let mut pos = Vec::with_capacity(size);
        let mut neg = Vec::with_capacity(size);
        for _ in 0..size {
            let (p, n) = self.pairs[self.pass.next_item()];
            pos.push(i64::from(p));
            neg.push(i64::from(n));
        }
        Ok(Batch::Pairwise(PairwiseBatch::new(
            ScoreInput::Features(self.features.f_index_select(0, &index_tensor(&pos)?)?),
            ScoreInput::Features(self.features.f_index_select(0, &index_tensor(&neg)?)?),
        )))
    }

    fn position(&self) -> serde_json::Value {
        pass_position(&self.pass)
    }

    fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()> {
        restore_pass(&mut self.pass, position, path)
    }

    fn fork(&self) -> Box<dyn Sampler> {
        Box::new(PairwiseSampler {
            features: self.features.shallow_clone(),
            pairs: self.pairs.clone(),
            pass: self.pass.clone(),
        })
    }
}

/// Every document of a learning-to-rank dataset with its relevance (grade / top grade), in a
/// fresh random order each pass.
#[derive(Debug)]
pub struct PointwiseSampler {
    features: Tensor,
    relevance: Tensor,
    pass: ShuffledPass,
}

impl PointwiseSampler {
    /// A sampler over `dataset`'s documents, this `shard` of them, shuffled by `rng`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when the dataset is empty.
    pub fn new(dataset: &LtrDataset, rng: Rng, shard: Shard, path: &str) -> Result<Self> {
        let top = dataset.relevance.iter().copied().max().unwrap_or(0);
        Ok(PointwiseSampler {
            features: dataset.features_tensor()?,
            relevance: grade_relevance(&dataset.relevance, top)?,
            pass: ShuffledPass::new(dataset.num_docs(), rng, shard, path)?,
        })
    }
}

impl Sampler for PointwiseSampler {
    fn kind(&self) -> RecordKind {
        RecordKind::Pointwise
    }

    fn next_batch(&mut self, size: usize) -> Result<Batch> {
        let rows: Vec<i64> = (0..size).map(|_| self.pass.next_item() as i64).collect();
        let index = index_tensor(&rows)?;
        Ok(Batch::Pointwise(PointwiseBatch {
            input: ScoreInput::Features(self.features.f_index_select(0, &index)?),
            relevance: self.relevance.f_index_select(0, &index)?,
        }))
    }

    fn position(&self) -> serde_json::Value {
        pass_position(&self.pass)
    }

    fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()> {
        restore_pass(&mut self.pass, position, path)
    }

    fn fork(&self) -> Box<dyn Sampler> {
        Box::new(PointwiseSampler {
            features: self.features.shallow_clone(),
            relevance: self.relevance.shallow_clone(),
            pass: self.pass.clone(),
        })
    }
}

/// One query per record with `group_size` of its documents: a document of the query's top
/// grade first, then others drawn without replacement, graded as relevances in [0, 1]. Queries
/// with fewer documents than `group_size`, or with a single grade, are left out.
#[derive(Debug)]
pub struct BatchwiseSampler {
    features: Tensor,
    grades: std::sync::Arc<Vec<u8>>,
    top_grade: u8,
    /// Document range of each usable query.
    queries: std::sync::Arc<Vec<(usize, usize)>>,
    group_size: usize,
    pass: ShuffledPass,
}

impl BatchwiseSampler {
    /// A sampler of `group_size`-document groups over `dataset`, this `shard` of its queries.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when no query can give a group.
    pub fn new(
        dataset: &LtrDataset,
        group_size: usize,
        rng: Rng,
        shard: Shard,
        path: &str,
    ) -> Result<Self> {
        let queries = dataset.graded_queries(group_size);
        if queries.is_empty() {
            return Err(Error::config(
                path,
                format!(
                    "no query has {group_size} documents of at least two relevance grades; \
                     lower group_size"
                ),
            ));
        }
        Ok(BatchwiseSampler {
            features: dataset.features_tensor()?,
            top_grade: dataset.relevance.iter().copied().max().unwrap_or(0),
            grades: std::sync::Arc::new(dataset.relevance.clone()),
            pass: ShuffledPass::new(queries.len(), rng, shard, path)?,
            queries: std::sync::Arc::new(queries),
            group_size,
        })
    }

    /// Appends the documents of one group to `out`: one of the query's best, then distinct
    /// others drawn uniformly (Floyd's algorithm: `group_size` draws, no scratch over the query).
    fn group(&self, (start, end): (usize, usize), rng: &mut Rng, out: &mut Vec<usize>) {
        let grades = &self.grades[start..end];
        let best = grades.iter().copied().max().unwrap_or(0);
        let ties = grades.iter().filter(|&&g| g == best).count();
        let pick = rng.below(ties);
        let first = start
            + grades
                .iter()
                .enumerate()
                .filter(|(_, &g)| g == best)
                .nth(pick)
                .map_or(0, |(i, _)| i);
        out.push(first);
        // Others are numbered 0..n over the query's documents without `first`.
        let n = end - start - 1;
        let k = self.group_size - 1;
        let chosen_from = out.len();
        for j in n - k..n {
            let t = rng.below(j + 1);
            let candidate = if out[chosen_from..].contains(&Self::other(start, first, t)) {
                j
            } else {
                t
            };
            out.push(Self::other(start, first, candidate));
        }
        rng.shuffle(&mut out[chosen_from..]);
    }

    /// Document of the `i`-th other (numbering that skips `first`).
    fn other(start: usize, first: usize, i: usize) -> usize {
        if start + i < first {
            start + i
        } else {
            start + i + 1
        }
    }
}

impl Sampler for BatchwiseSampler {
    fn kind(&self) -> RecordKind {
        RecordKind::Batchwise
    }

    fn next_batch(&mut self, size: usize) -> Result<Batch> {
        let mut rows = Vec::with_capacity(size * self.group_size);
        for _ in 0..size {
            let query = self.queries[self.pass.next_item()];
            let mut rng = self.pass.item_rng();
            self.group(query, &mut rng, &mut rows);
        }
        let grades: Vec<u8> = rows.iter().map(|&d| self.grades[d]).collect();
        let index: Vec<i64> = rows.iter().map(|&d| d as i64).collect();
        Ok(Batch::Batchwise(BatchwiseBatch {
            input: ScoreInput::Features(self.features.f_index_select(0, &index_tensor(&index)?)?),
            relevance: grade_relevance(&grades, self.top_grade)?
                .f_view([size as i64, self.group_size as i64])?,
        }))
    }

    fn position(&self) -> serde_json::Value {
        pass_position(&self.pass)
    }

    fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()> {
        restore_pass(&mut self.pass, position, path)
    }

    fn fork(&self) -> Box<dyn Sampler> {
        Box::new(BatchwiseSampler {
            features: self.features.shallow_clone(),
            grades: self.grades.clone(),
            top_grade: self.top_grade,
            queries: self.queries.clone(),
            group_size: self.group_size,
            pass: self.pass.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset() -> LtrDataset {
        LtrDataset {
            features: vec![3.0, 1.0, 2.0, 5.0, 4.0, 0.5],
            num_features: 1,
            relevance: vec![2, 0, 1, 3, 4, 0],
            query_bounds: vec![0, 3, 6],
        }
    }

    fn values(input: &ScoreInput) -> Vec<f32> {
        let ScoreInput::Features(f) = input else {
            panic!("features expected")
        };
        Vec::<f32>::try_from(f.flatten(0, -1)).unwrap()
    }

    #[test]
    fn pairwise_batches_hold_preferred_documents_first() {
        let mut s = PairwiseSampler::new(&dataset(), Rng::new(0), Shard::WHOLE, "s").unwrap();
        let Batch::Pairwise(b) = s.next_batch(13).unwrap() else {
            panic!("pairwise expected")
        };
        // Within each query here, a higher feature value means a higher grade, except for
        // document 4 (grade 4, value 4) above document 3 (grade 3, value 5).
        let (pos, neg) = (values(&b.positive), values(&b.negative));
        assert_eq!(pos.len(), 13);
        for (p, n) in pos.iter().zip(&neg) {
            assert!(p > n || (*p == 4.0 && *n == 5.0), "{p} vs {n}");
        }
    }

    #[test]
    fn a_restored_sampler_continues_with_the_same_batches() {
        let mut a = PairwiseSampler::new(&dataset(), Rng::new(9), Shard::WHOLE, "s").unwrap();
        let _ = a.next_batch(7).unwrap();
        let mut b = PairwiseSampler::new(&dataset(), Rng::new(1234), Shard::WHOLE, "s").unwrap();
        b.restore(&a.position(), "s").unwrap();
        for _ in 0..5 {
            let (Batch::Pairwise(x), Batch::Pairwise(y)) =
                (a.next_batch(4).unwrap(), b.next_batch(4).unwrap())
            else {
                panic!("pairwise expected")
            };
            assert_eq!(values(&x.positive), values(&y.positive));
            assert_eq!(values(&x.negative), values(&y.negative));
        }
    }

    #[test]
    fn a_dataset_without_pairs_is_refused() {
        let mut d = dataset();
        d.relevance = vec![1; 6];
        let err = PairwiseSampler::new(&d, Rng::new(0), Shard::WHOLE, "learner.trainer.sampler")
            .unwrap_err();
        assert!(err.to_string().starts_with("learner.trainer.sampler:"));
    }

    #[test]
    fn pointwise_records_carry_their_scaled_grade() {
        let mut s = PointwiseSampler::new(&dataset(), Rng::new(2), Shard::WHOLE, "s").unwrap();
        let Batch::Pointwise(b) = s.next_batch(6).unwrap() else {
            panic!("pointwise expected")
        };
        let mut got: Vec<(i64, i64)> = values(&b.input)
            .into_iter()
            .zip(Vec::<f32>::try_from(&b.relevance).unwrap())
            .map(|(x, r)| ((x * 2.0) as i64, (r * 4.0).round() as i64))
            .collect();
        got.sort_unstable();
        assert_eq!(got, vec![(1, 0), (2, 0), (4, 1), (6, 2), (8, 4), (10, 3)]);
    }

    #[test]
    fn batchwise_groups_open_with_a_top_document() {
        let mut s = BatchwiseSampler::new(&dataset(), 3, Rng::new(4), Shard::WHOLE, "s").unwrap();
        for _ in 0..5 {
            let Batch::Batchwise(b) = s.next_batch(2).unwrap() else {
                panic!("batchwise expected")
            };
            assert_eq!(b.relevance.size(), vec![2, 3]);
            let rel = Vec::<f32>::try_from(b.relevance.flatten(0, -1)).unwrap();
            for group in rel.chunks(3) {
                assert!(group[1..].iter().all(|r| *r <= group[0]) && group[0] > 0.0);
            }
        }
        assert!(BatchwiseSampler::new(&dataset(), 4, Rng::new(4), Shard::WHOLE, "s").is_err());
    }

    #[test]
    fn batchwise_groups_hold_distinct_documents_of_their_query() {
        let data = LtrDataset {
            features: (0..50).map(|x| x as f32).collect(),
            num_features: 1,
            relevance: (0..50).map(|x| (x % 3) as u8).collect(),
            query_bounds: vec![0, 10, 30, 50],
        };
        let mut s = BatchwiseSampler::new(&data, 6, Rng::new(8), Shard::WHOLE, "s").unwrap();
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..50 {
            let Batch::Batchwise(b) = s.next_batch(3).unwrap() else {
                panic!("batchwise expected")
            };
            for group in values(&b.input).chunks(6) {
                let docs: std::collections::BTreeSet<i64> =
                    group.iter().map(|&x| x as i64).collect();
                assert_eq!(docs.len(), 6, "{group:?}");
                let query = data
                    .query_bounds
                    .windows(2)
                    .position(|q| (q[0] as f32..q[1] as f32).contains(&group[0]))
                    .unwrap();
                let (lo, hi) = (
                    data.query_bounds[query] as i64,
                    data.query_bounds[query + 1] as i64,
                );
                assert!(docs.iter().all(|d| (lo..hi).contains(d)));
                assert_eq!(group[0] as i64 % 3, 2, "opens with a top-grade document");
                seen.extend(docs);
            }
        }
        assert_eq!(seen.len(), 50, "every document is drawn at some point");
    }
}
