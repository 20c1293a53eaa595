//! The batches a sampler yields, one type per record kind ([`Batch`], [`RecordKind`]), and their
//! [`Staging`] for the device (joined pairs, pinned memory) done ahead by the data producer.

use tch::{Device, Kind, Tensor};

use crate::data::ScoreInput;
use crate::runtime::pinned_for;
use crate::Result;

/// Pairs to rank: row `k` of `positive` should score above row `k` of `negative`.
#[derive(Debug)]
pub struct PairwiseBatch {
    /// The preferred (query, document) rows.
    pub positive: ScoreInput,
    /// The other rows.
    pub negative: ScoreInput,
    /// `positive` then `negative` as one input (the rows of one forward), when the batch was
    /// staged ahead by the data producer; see [`Batch::staged`].
    pub joined: Option<ScoreInput>,
}

impl PairwiseBatch {
    /// Pairs whose rows are joined when they are scored.
    pub fn new(positive: ScoreInput, negative: ScoreInput) -> Self {
        PairwiseBatch {
            positive,
            negative,
            joined: None,
        }
    }

    /// `positive` then `negative` as one input: the staged one, or a new one.
    ///
    /// # Errors
    /// See [`ScoreInput::concat`].
    pub fn joined(&self) -> Result<ScoreInput> {
        match &self.joined {
            Some(joined) => joined.map(|t| Ok(t.shallow_clone())),
            None => self.positive.concat(&self.negative),
        }
    }
}

/// What the data producer does to a batch once it is made, so that the training thread finds
/// it ready for the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staging {
    /// Batches for the CPU: the halves of pairwise batches are joined ahead.
    Host,
    /// Batches for a CUDA device: joined, and what goes to `device` as it is (for pairwise
    /// batches, the joined rows; otherwise every tensor) in page-locked (pinned) host memory, so
    /// that the copy is asynchronous and costs the training thread no staging copy. Only for a
    /// process whose CUDA library is loaded.
    Pinned(Device),
}

impl Staging {
    /// The staging for batches that go to `device`.
    pub fn for_device(device: Device) -> Self {
        match device {
            Device::Cuda(_) => Staging::Pinned(device),
            _ => Staging::Host,
        }
    }
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

    /// The batch ready for the device `staging` is for (on the producer thread, before the
    /// training thread needs it).
    ///
    /// # Errors
    /// A libtorch error (e.g. no page-locked memory left).
    pub fn staged(self, staging: Staging) -> Result<Batch> {
        let pin = |t: &Tensor| -> Result<Tensor> {
            match staging {
                Staging::Host => Ok(t.shallow_clone()),
                Staging::Pinned(device) => pinned_for(t, device),
            }
        };
        match self {
            // The halves are read again only when a batcher cuts micro-batches, which copies
            // them: the joined rows alone go to the device as they are.
            Batch::Pairwise(b) => {
                let joined = Some(b.joined()?.map(pin)?);
                Ok(Batch::Pairwise(PairwiseBatch { joined, ..b }))
            }
            other if staging == Staging::Host => Ok(other),
            other => other.map(pin),
        }
    }

    /// The same records with every tensor passed through `f`.
    ///
    /// # Errors
    /// What `f` returns.
    pub fn map(&self, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Batch> {
        Ok(match self {
            Batch::Pairwise(b) => Batch::Pairwise(PairwiseBatch {
                positive: b.positive.map(&f)?,
                negative: b.negative.map(&f)?,
                joined: b.joined.as_ref().map(|j| j.map(&f)).transpose()?,
            }),
            Batch::Pointwise(b) => Batch::Pointwise(PointwiseBatch {
                input: b.input.map(&f)?,
                relevance: f(&b.relevance)?,
            }),
            Batch::Batchwise(b) => Batch::Batchwise(BatchwiseBatch {
                input: b.input.map(&f)?,
                relevance: f(&b.relevance)?,
            }),
            Batch::Slate(b) => Batch::Slate(SlateBatch {
                input: b.input.map(&f)?,
                labels: f(&b.labels)?,
                mask: f(&b.mask)?,
            }),
        })
    }

    /// Records `records`, in that order (a micro-batch).
    ///
    /// # Errors
    /// A libtorch error.
    pub fn select(&self, records: &[usize]) -> Result<Batch> {
        let rows: Vec<i64> = records.iter().map(|&r| r as i64).collect();
        let index = Tensor::f_from_slice(&rows)?;
        Ok(match self {
            Batch::Pairwise(b) => Batch::Pairwise(PairwiseBatch::new(
                b.positive.select(&index)?,
                b.negative.select(&index)?,
            )),
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

    fn features(input: &ScoreInput) -> Vec<f32> {
        let ScoreInput::Features(f) = input else {
            panic!("features expected")
        };
        Vec::<f32>::try_from(f.flatten(0, -1)).unwrap()
    }

    #[test]
    fn staging_joins_pairs_and_micro_batches_join_their_own() {
        let rows = |v: &[f32]| ScoreInput::Features(Tensor::from_slice(v).view([-1, 1]));
        let batch = Batch::Pairwise(PairwiseBatch::new(rows(&[1., 2., 3.]), rows(&[4., 5., 6.])))
            .staged(Staging::Host)
            .unwrap();
        let Batch::Pairwise(pairs) = &batch else {
            panic!("kind changed")
        };
        assert_eq!(
            features(pairs.joined.as_ref().unwrap()),
            [1., 2., 3., 4., 5., 6.]
        );
        let Batch::Pairwise(sub) = batch.select(&[2, 0]).unwrap() else {
            panic!("kind changed")
        };
        assert!(sub.joined.is_none(), "a micro-batch is not the staged rows");
        assert_eq!(features(&sub.joined().unwrap()), [3., 1., 6., 4.]);
    }

    #[test]
    fn staging_for_the_cpu_keeps_other_batches_as_they_are() {
        let relevance = Tensor::from_slice(&[1f32, 0.]);
        let input = ScoreInput::Features(Tensor::from_slice(&[7f32, 8.]).view([2, 1]));
        let batch = Batch::Pointwise(PointwiseBatch { input, relevance });
        let Batch::Pointwise(staged) = batch.staged(Staging::Host).unwrap() else {
            panic!("kind changed")
        };
        assert_eq!(features(&staged.input), [7., 8.]);
        assert_eq!(Staging::for_device(Device::Cpu), Staging::Host);
        assert_eq!(
            Staging::for_device(Device::Cuda(1)),
            Staging::Pinned(Device::Cuda(1))
        );
    }

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
