use tch::{Kind, Tensor};

use super::ScoreInput;
use crate::Result;

/// Pairs to rank: row `k` of `positive` should score above row `k` of `negative`.
#[derive(Debug)]
pub struct PairwiseBatch {
    /// The preferred (query, document) rows.
    pub positive: ScoreInput,
    /// The other rows.
    pub negative: ScoreInput,
}

/// (query, document, relevance) records.
#[derive(Debug)]
pub struct PointwiseBatch {
    /// One row per record.
    pub input: ScoreInput,
    /// Relevance in [0, 1] per record (graded relevance divided by the top grade), float.
    pub relevance: Tensor,
}

/// Groups of documents per query, each group scored as a whole.
#[derive(Debug)]
pub struct BatchwiseBatch {
    /// `Q·D` rows: the `D` documents of query 0, then those of query 1, ...
    pub input: ScoreInput,
    /// `Q × D` relevances in [0, 1], float; each group holds at least one relevant document.
    pub relevance: Tensor,
}

/// Whole queries as padded lists: slate `b` is rows `b·L .. (b+1)·L` of `input`.
#[derive(Debug)]
pub struct SlateBatch {
    /// `B·L` rows: the `L` positions of slate 0, then those of slate 1, ...; padded positions
    /// hold some row whose score is ignored.
    pub input: ScoreInput,
    /// `B × L` graded labels (the dataset's grades as floats; 0 at padded positions), float.
    pub labels: Tensor,
    /// `B × L` bool, true at real documents, false at padding.
    pub mask: Tensor,
}

/// The record kinds a sampler yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordKind {
    /// (query, positive, negative) triplets.
    Pairwise,
    /// (query, document, relevance) records.
    Pointwise,
    /// A query with a group of graded documents.
    Batchwise,
    /// A query's documents as a padded list with graded labels.
    Slate,
}

impl RecordKind {
    /// For messages.
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Pairwise => "pairwise triplets",
            RecordKind::Pointwise => "pointwise records",
            RecordKind::Batchwise => "batchwise groups",
            RecordKind::Slate => "query slates",
        }
    }
}

/// A batch of records of one kind.
#[derive(Debug)]
pub enum Batch {
    /// See [`PairwiseBatch`].
    Pairwise(PairwiseBatch),
    /// See [`PointwiseBatch`].
    Pointwise(PointwiseBatch),
    /// See [`BatchwiseBatch`].
    Batchwise(BatchwiseBatch),
    /// See [`SlateBatch`].
    Slate(SlateBatch),
}

impl Batch {
    /// The kind of its records.
    pub fn kind(&self) -> RecordKind {
        match self {
            Batch::Pairwise(_) => RecordKind::Pairwise,
            Batch::Pointwise(_) => RecordKind::Pointwise,
            Batch::Batchwise(_) => RecordKind::Batchwise,
            Batch::Slate(_) => RecordKind::Slate,
        }
    }

    /// Number of records: pairs, (query, document) records, or query groups. Losses are
    /// normalised by this count over the whole outer batch.
    pub fn len(&self) -> usize {
        match self {
            Batch::Pairwise(b) => b.positive.len() as usize,
            Batch::Pointwise(b) => b.input.len() as usize,
            Batch::Batchwise(b) => b.relevance.size().first().copied().unwrap_or(0) as usize,
            Batch::Slate(b) => b.labels.size().first().copied().unwrap_or(0) as usize,
        }
    }

    /// Whether the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records `records`, in that order (a micro-batch).
    ///
    /// # Errors
    /// A libtorch error.
    pub fn select(&self, records: &[usize]) -> Result<Batch> {
        let rows: Vec<i64> = records.iter().map(|&r| r as i64).collect();
        let index = Tensor::f_from_slice(&rows)?;
        Ok(match self {
            Batch::Pairwise(b) => Batch::Pairwise(PairwiseBatch {
                positive: b.positive.select(&index)?,
                negative: b.negative.select(&index)?,
            }),
            Batch::Pointwise(b) => Batch::Pointwise(PointwiseBatch {
                input: b.input.select(&index)?,
                relevance: b.relevance.f_index_select(0, &index)?,
            }),
            Batch::Batchwise(b) => Batch::Batchwise(BatchwiseBatch {
                input: b.input.select(&group_rows(&rows, b.relevance.size()[1])?)?,
                relevance: b.relevance.f_index_select(0, &index)?,
            }),
            Batch::Slate(b) => Batch::Slate(SlateBatch {
                input: b.input.select(&group_rows(&rows, b.labels.size()[1])?)?,
                labels: b.labels.f_index_select(0, &index)?,
                mask: b.mask.f_index_select(0, &index)?,
            }),
        })
    }
}

/// The input rows of groups `groups` when each group holds `width` consecutive rows.
fn group_rows(groups: &[i64], width: i64) -> Result<Tensor> {
    let rows: Vec<i64> = groups
        .iter()
        .flat_map(|g| g * width..(g + 1) * width)
        .collect();
    Ok(Tensor::f_from_slice(&rows)?)
}

/// Grades as relevances in [0, 1]: grade / top grade (all zero when every grade is 0).
pub fn grade_relevance(grades: &[u8], top: u8) -> Result<Tensor> {
    let top = f32::from(top.max(1));
    let values: Vec<f32> = grades.iter().map(|&g| f32::from(g) / top).collect();
    Ok(Tensor::f_from_slice(&values)?.f_to_kind(Kind::Float)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Device;

    #[test]
    fn selecting_batchwise_groups_takes_their_documents() {
        let features = Tensor::arange(6, (Kind::Float, Device::Cpu)).view([6, 1]);
        let relevance = Tensor::from_slice(&[1f32, 0., 0., 1., 0.5, 0.]).view([3, 2]);
        let batch = Batch::Batchwise(BatchwiseBatch {
            input: ScoreInput::Features(features),
            relevance,
        });
        assert_eq!(batch.len(), 3);
        let Batch::Batchwise(sub) = batch.select(&[2, 0]).unwrap() else {
            panic!("kind changed")
        };
        let ScoreInput::Features(f) = &sub.input else {
            panic!("input changed")
        };
        assert_eq!(
            Vec::<f32>::try_from(f.flatten(0, -1)).unwrap(),
            vec![4., 5., 0., 1.]
        );
        assert_eq!(
            Vec::<f32>::try_from(sub.relevance.flatten(0, -1)).unwrap(),
            vec![0.5, 0., 1., 0.]
        );
    }
}
