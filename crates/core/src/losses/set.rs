//! The losses of a trainer as one set: which losses a record kind feeds, the scores of a batch
//! shaped for them, and their sums (each loss's and the weighted total) with the metric names
//! they are logged under. The trainer backpropagates the total; validation listeners average it.

use tch::{Kind, Tensor};

use super::listwise::ListwiseLoss;
use super::{BatchwiseLoss, PairwiseLoss, PointwiseCrossEntropyLoss};
use crate::data::{Batch, RecordKind};
use crate::models::Model;
use crate::{Error, Result};

/// One loss of a trainer.
pub(crate) enum AnyLoss {
    /// Over (positive, negative) score pairs.
    Pairwise(Box<dyn PairwiseLoss>),
    /// Over (query × documents) score matrices.
    Batchwise(Box<dyn BatchwiseLoss>),
    /// Binary cross-entropy, on pairs or on (document, relevance) records.
    Pointwise(PointwiseCrossEntropyLoss),
    /// Over slates (padded lists of graded documents).
    Listwise(Box<dyn ListwiseLoss>),
}

impl AnyLoss {
    fn name(&self) -> &'static str {
        match self {
            AnyLoss::Pairwise(l) => l.name(),
            AnyLoss::Batchwise(l) => l.name(),
            AnyLoss::Pointwise(l) => l.name(),
            AnyLoss::Listwise(l) => l.name(),
        }
    }

    fn weight(&self) -> f64 {
        match self {
            AnyLoss::Pairwise(l) => l.weight(),
            AnyLoss::Batchwise(l) => l.weight(),
            AnyLoss::Pointwise(l) => l.weight,
            AnyLoss::Listwise(l) => l.weight(),
        }
    }

    /// Whether it can be computed on records of `kind`.
    fn accepts(&self, kind: RecordKind) -> bool {
        matches!(
            (self, kind),
            (_, RecordKind::Pairwise)
                | (AnyLoss::Batchwise(_), RecordKind::Batchwise)
                | (AnyLoss::Pointwise(_), RecordKind::Pointwise)
                | (AnyLoss::Listwise(_), RecordKind::Slate)
        )
    }
}

/// The losses of a trainer, computed together.
pub(crate) struct LossSet {
    pub(crate) losses: Vec<AnyLoss>,
    /// The metric of the weighted sum: the sorted loss names joined by `+`.
    pub(crate) total_name: String,
}

/// Sums of one batch: the weighted total and each loss's own sum.
pub(crate) struct LossSums {
    pub weighted: Tensor,
    pub each: Vec<Tensor>,
}

/// A batch's scores, shaped for its kind.
pub(crate) enum Scores {
    Pairs {
        positive: Tensor,
        negative: Tensor,
    },
    Records {
        scores: Tensor,
        relevance: Tensor,
    },
    Groups {
        scores: Tensor,
        relevance: Tensor,
    },
    Slates {
        scores: Tensor,
        labels: Tensor,
        mask: Tensor,
    },
}

pub(crate) fn score(model: &dyn Model, batch: &Batch) -> Result<Scores> {
    Ok(match batch {
        // One forward over the positives then the negatives (as the reference scores its
        // pairwise records): half the calls, and larger matrix products.
        Batch::Pairwise(b) => {
            let rows = b.positive.len();
            let both = model.forward(&b.joined()?)?;
            Scores::Pairs {
                positive: both.f_narrow(0, 0, rows)?,
                negative: both.f_narrow(0, rows, rows)?,
            }
        }
        Batch::Pointwise(b) => Scores::Records {
            scores: model.forward(&b.input)?,
            relevance: b.relevance.shallow_clone(),
        },
        Batch::Batchwise(b) => Scores::Groups {
            scores: model.forward(&b.input)?.f_view_as(&b.relevance)?,
            relevance: b.relevance.shallow_clone(),
        },
        Batch::Slate(b) => Scores::Slates {
            scores: model.forward(&b.input)?.f_view_as(&b.labels)?,
            labels: b.labels.shallow_clone(),
            mask: b.mask.shallow_clone(),
        },
    })
}

/// Pairs as `N × 2` groups whose first document is the relevant one.
fn pairs_as_groups(positive: &Tensor, negative: &Tensor) -> Result<(Tensor, Tensor)> {
    let scores = Tensor::f_stack(&[positive, negative], 1)?;
    let relevance = Tensor::f_stack(&[positive.f_ones_like()?, negative.f_zeros_like()?], 1)?;
    Ok((scores, relevance))
}

impl LossSet {
    /// The losses, checked against the records they will see (`records` at `path.sampler`).
    pub fn new(losses: Vec<AnyLoss>, records: RecordKind, path: &str) -> Result<Self> {
        if losses.is_empty() {
            return Err(Error::config(
                format!("{path}.hooks"),
                "a LossTrainer needs at least one loss among its hooks",
            ));
        }
        if let Some(loss) = losses.iter().find(|l| !l.accepts(records)) {
            return Err(Error::config(
                format!("{path}.hooks"),
                format!(
                    "the loss {} cannot be computed on {} (from {path}.sampler); use a sampler \
                     of pairwise triplets, or a loss for these records",
                    loss.name(),
                    records.name()
                ),
            ));
        }
        let mut names: Vec<&str> = losses.iter().map(|l| l.name()).collect();
        names.sort_unstable();
        let total_name = names.join("+");
        Ok(LossSet { losses, total_name })
    }

    pub(crate) fn sums(&self, scores: &Scores) -> Result<LossSums> {
        let mut weighted: Option<Tensor> = None;
        let mut each = Vec::with_capacity(self.losses.len());
        for loss in &self.losses {
            let sum = match (loss, scores) {
                (AnyLoss::Pairwise(l), Scores::Pairs { positive, negative }) => {
                    l.sum(positive, negative)?
                }
                (AnyLoss::Pointwise(l), Scores::Pairs { positive, negative }) => {
                    l.sum(positive, negative)?
                }
                (AnyLoss::Pointwise(l), Scores::Records { scores, relevance }) => {
                    l.records_sum(scores, relevance)?
                }
                (AnyLoss::Batchwise(l), Scores::Pairs { positive, negative }) => {
                    let (scores, relevance) = pairs_as_groups(positive, negative)?;
                    l.sum(&scores, &relevance)?.0
                }
                (AnyLoss::Batchwise(l), Scores::Groups { scores, relevance }) => {
                    l.sum(scores, relevance)?.0
                }
                (AnyLoss::Listwise(l), Scores::Pairs { positive, negative }) => {
                    let (scores, labels) = pairs_as_groups(positive, negative)?;
                    l.sum(
                        &scores,
                        &labels,
                        &labels.f_ones_like()?.f_to_kind(Kind::Bool)?,
                    )?
                    .0
                }
                (
                    AnyLoss::Listwise(l),
                    Scores::Slates {
                        scores,
                        labels,
                        mask,
                    },
                ) => l.sum(scores, labels, mask)?.0,
                _ => return Err(Error::Panic("a loss was given records it refused".into())),
            };
            let w = if loss.weight() == 1.0 {
                sum.shallow_clone()
            } else {
                sum.f_mul_scalar(loss.weight())?
            };
            weighted = Some(match weighted {
                Some(t) => t.f_add(&w)?,
                None => w,
            });
            each.push(sum);
        }
        let weighted = match weighted {
            Some(w) => w,
            None => return Err(Error::Panic("a loss set without losses".into())),
        };
        Ok(LossSums { weighted, each })
    }

    /// Hands each loss's sum to `add` with its name, then, with two or more losses, their
    /// weighted sum with `None` (the reference logs it only then).
    pub(crate) fn visit(
        &self,
        sums: &LossSums,
        mut add: impl FnMut(Option<&str>, &Tensor) -> Result<()>,
    ) -> Result<()> {
        for (loss, sum) in self.losses.iter().zip(&sums.each) {
            add(Some(loss.name()), sum)?;
        }
        if self.losses.len() >= 2 {
            add(None, &sums.weighted)?;
        }
        Ok(())
    }
}
