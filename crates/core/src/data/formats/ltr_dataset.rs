//! [`LtrDataset`]: a learning-to-rank dataset in memory, documents grouped by query with feature
//! vectors and graded relevance, and the preference pairs and usable queries drawn from it.

use tch::{Kind, Tensor};

use crate::Result;

/// Documents grouped by query, each with a feature vector and a graded relevance.
#[derive(Debug, Clone, PartialEq)]
pub struct LtrDataset {
    /// Row-major `num_docs × num_features` matrix.
    pub features: Vec<f32>,
    /// Feature dimension.
    pub num_features: usize,
    /// Relevance grade of each document.
    pub relevance: Vec<u8>,
    /// Query `q` owns documents `query_bounds[q]..query_bounds[q + 1]`.
    pub query_bounds: Vec<usize>,
}

/// A (preferred, other) pair of document indices from one query.
pub type PreferencePair = (u32, u32);

impl LtrDataset {
    /// Number of documents.
    pub fn num_docs(&self) -> usize {
        self.relevance.len()
    }

    /// Every pair of documents of one query where the first is strictly more relevant.
    pub fn preference_pairs(&self) -> Vec<PreferencePair> {
        let mut pairs = Vec::new();
        for q in self.query_bounds.windows(2) {
            for i in q[0]..q[1] {
                for j in q[0]..q[1] {
                    if self.relevance[i] > self.relevance[j] {
                        pairs.push((i as u32, j as u32));
                    }
                }
            }
        }
        pairs
    }

    /// The `(start, end)` document ranges of the queries that hold at least `min_docs` documents
    /// of at least two grades (the only ones a ranking loss learns from).
    pub fn graded_queries(&self, min_docs: usize) -> Vec<(usize, usize)> {
        self.query_bounds
            .windows(2)
            .map(|q| (q[0], q[1]))
            .filter(|&(start, end)| {
                let grades = &self.relevance[start..end];
                end - start >= min_docs && grades.iter().any(|&g| g != grades[0])
            })
            .collect()
    }

    /// The feature matrix as a `num_docs × num_features` float tensor on the CPU.
    ///
    /// # Errors
    /// A libtorch error if the tensor cannot be created.
    pub fn features_tensor(&self) -> Result<Tensor> {
        Ok(Tensor::f_from_slice(&self.features)?
            .f_view([self.num_docs() as i64, self.num_features as i64])?
            .f_to_kind(Kind::Float)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graded_queries_need_two_grades_and_enough_documents() {
        let data = LtrDataset {
            features: vec![0.0; 7],
            num_features: 1,
            relevance: vec![1, 0, 2, 2, 1, 0, 0],
            query_bounds: vec![0, 2, 4, 7],
        };
        assert_eq!(data.graded_queries(0), vec![(0, 2), (4, 7)]);
        assert_eq!(data.graded_queries(3), vec![(4, 7)]);
    }

    #[test]
    fn pairs_stay_within_queries_and_follow_grades() {
        let data = LtrDataset {
            features: vec![0.0; 5],
            num_features: 1,
            relevance: vec![2, 0, 1, 1, 0],
            query_bounds: vec![0, 3, 5],
        };
        let mut pairs = data.preference_pairs();
        pairs.sort();
        assert_eq!(pairs, vec![(0, 1), (0, 2), (2, 1), (3, 4)]);
    }
}
