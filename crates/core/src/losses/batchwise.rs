//! Losses over a queries × documents matrix of scores, e.g. in-batch negatives.

use tch::{Kind, Reduction, TchError, Tensor};

use super::BatchwiseLoss;
use crate::models::OutputType;
use crate::Result;

/// The shape both tensors share, or an error naming the loss and both shapes.
fn matrix_shape(name: &str, scores: &Tensor, relevances: &Tensor) -> Result<(i64, i64)> {
    let shape = scores.size2()?;
    if relevances.size() != scores.size() {
        return Err(TchError::Shape(format!(
            "{name}: scores are {:?} but relevances are {:?}",
            scores.size(),
            relevances.size()
        ))
        .into());
    }
    Ok(shape)
}

/// Relevances as `scores`'s kind on `scores`'s device, outside the autograd graph.
fn aligned(relevances: &Tensor, scores: &Tensor) -> Result<Tensor> {
    Ok(relevances
        .f_detach()?
        .f_to_device(scores.device())?
        .f_to_kind(scores.kind())?)
}

/// Binary cross-entropy of every score against its relevance; scores must be probabilities.
#[derive(Debug, Clone, PartialEq)]
pub struct CrossEntropyLoss {
    /// Weight in the trainer's sum.
    pub weight: f64,
}

impl BatchwiseLoss for CrossEntropyLoss {
    fn name(&self) -> &'static str {
        "batch-bce"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    /// Each query's mean BCE over its documents, summed over queries, with the count of
    /// queries: divided by it, this is the reference's mean over all Q×D elements.
    fn sum(&self, scores: &Tensor, relevances: &Tensor) -> Result<(Tensor, i64)> {
        let (queries, documents) = matrix_shape(self.name(), scores, relevances)?;
        let targets = aligned(relevances, scores)?;
        let total = scores.f_binary_cross_entropy(&targets, None::<Tensor>, Reduction::Sum)?;
        Ok((total.f_div_scalar(documents.max(1) as f64)?, queries))
    }
}

/// InfoNCE: `−log Σ_d exp(norm(s)_qd + 1 − 1/r_qd)` per query, where `norm` is a log-softmax
/// over the documents for real scores, the identity for log-probabilities and `log` for
/// probabilities (the latter two are not renormalized). Documents with `r = 0` drop out, and a
/// graded `0 < r < 1` adds `1 − 1/r` to the document's log-score (`r = 0.5` gives −1).
#[derive(Debug, Clone, PartialEq)]
pub struct SoftmaxCrossEntropy {
    /// Weight in the trainer's sum.
    pub weight: f64,
    /// What the model's scores are.
    pub output: OutputType,
}

impl BatchwiseLoss for SoftmaxCrossEntropy {
    fn name(&self) -> &'static str {
        "batch-infonce"
    }

    fn weight(&self) -> f64 {
        self.weight
    }

    /// The summed loss of the queries that have a relevant document, with their count. A query
    /// without one would cost +∞ in the reference (defect D28); it is left out of both, so the
    /// count may be 0 with a sum of 0.
    fn sum(&self, scores: &Tensor, relevances: &Tensor) -> Result<(Tensor, i64)> {
        matrix_shape(self.name(), scores, relevances)?;
        let r = aligned(relevances, scores)?;
        let relevant = r.f_gt(0.0)?;
        let kept = relevant.f_any_dim(1, false)?;
        let count = kept.f_sum(Kind::Int64)?.f_int64_value(&[])?;

        let norm = match self.output {
            OutputType::Real => scores.f_log_softmax(1, None)?,
            OutputType::LogProbability => scores.shallow_clone(),
            // log(1) on irrelevant documents keeps log(0)'s infinite gradient out of the graph.
            OutputType::Probability => scores.f_where_scalarother(&relevant, 1.0)?.f_log()?,
        };
        let offset = r.f_reciprocal()?.f_neg()?.f_add_scalar(1.0)?;
        // Masking with `where` (not adding −∞) gives irrelevant documents a zero gradient, and
        // zeroing the rows of left-out queries keeps their log-sum-exp finite.
        let logits = norm
            .f_add(&offset)?
            .f_where_scalarother(&relevant, f64::NEG_INFINITY)?
            .f_where_scalarother(&kept.f_unsqueeze(1)?, 0.0)?;
        let per_query = logits
            .f_logsumexp([1], false)?
            .f_neg()?
            .f_where_scalarother(&kept, 0.0)?;
        Ok((per_query.f_sum(None)?, count))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::losses::fixture;

    fn matrix(rows: &[&[f64]]) -> Tensor {
        let flat: Vec<f64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
        Tensor::from_slice(&flat).view([rows.len() as i64, -1])
    }

    fn vec(t: &Tensor) -> Vec<f64> {
        Vec::<f64>::try_from(t.flatten(0, -1).to_kind(Kind::Double)).unwrap()
    }

    fn mean(loss: &dyn BatchwiseLoss, scores: &Tensor, relevances: &Tensor) -> f64 {
        let (sum, count) = loss.sum(scores, relevances).unwrap();
        sum.double_value(&[]) / count as f64
    }

    fn infonce(output: OutputType) -> SoftmaxCrossEntropy {
        SoftmaxCrossEntropy {
            weight: 1.0,
            output,
        }
    }

    /// sum/count, the count and the gradients against every fixture case of `loss`'s name.
    fn check_fixture(make: impl Fn(&serde_json::Value) -> Box<dyn BatchwiseLoss>, name: &str) {
        for case in fixture::cases("batchwise", name) {
            let loss = make(&case);
            assert_eq!(loss.name(), name);
            let shape = [
                case["queries"].as_i64().unwrap(),
                case["documents"].as_i64().unwrap(),
            ];
            let scores = Tensor::from_slice(&fixture::floats(&case, "scores"))
                .view(shape)
                .set_requires_grad(true);
            let relevances = Tensor::from_slice(&fixture::floats(&case, "relevances")).view(shape);
            let (sum, count) = loss.sum(&scores, &relevances).unwrap();
            assert_eq!(count, case["count"].as_i64().unwrap());
            let value = sum / count as f64;
            let what = format!("{name} ({})", case["output"]);
            let want = case["value"].as_f64().unwrap();
            fixture::assert_close(&[value.double_value(&[])], &[want], &what);
            value.backward();
            fixture::assert_close(
                &vec(&scores.grad()),
                &fixture::floats(&case, "grad_scores"),
                &what,
            );
        }
    }

    #[test]
    fn bce_matches_the_reference_golden_value() {
        let p = matrix(&[&[0.9, 0.2], &[0.3, 0.6]]);
        let r = matrix(&[&[1.0, 0.0], &[0.0, 1.0]]);
        let m = mean(&CrossEntropyLoss { weight: 1.0 }, &p, &r);
        assert!((m - 0.299_001_2).abs() < 1e-7, "{m}");
    }

    #[test]
    fn bce_matches_pytorch() {
        check_fixture(|_| Box::new(CrossEntropyLoss { weight: 1.0 }), "batch-bce");
    }

    #[test]
    fn infonce_matches_the_reference_golden_values() {
        let s = matrix(&[&[1.0, 0.0, -1.0, 0.5], &[0.2, 0.3, 0.1, -0.4]]);
        let binary = matrix(&[&[1.0, 0.0, 0.0, 0.0], &[0.0, 1.0, 1.0, 0.0]]);
        let m = mean(&infonce(OutputType::Real), &s, &binary);
        assert!((m - 0.658_928_7).abs() < 1e-7, "{m}");
        let graded = matrix(&[&[1.0, 0.5, 0.0, 0.0], &[0.0, 1.0, 0.0, 0.0]]);
        let m = mean(&infonce(OutputType::Real), &s, &graded);
        assert!((m - 0.894_534_1).abs() < 1e-7, "{m}");
    }

    #[test]
    fn infonce_with_one_hot_relevances_is_softmax_cross_entropy() {
        let s = matrix(&[&[1.0, 0.0, -1.0], &[0.2, 0.3, 0.1], &[2.0, -2.0, 0.7]]);
        let r = matrix(&[&[0.0, 1.0, 0.0], &[1.0, 0.0, 0.0], &[0.0, 0.0, 1.0]]);
        let ours = mean(&infonce(OutputType::Real), &s, &r);
        let target = Tensor::from_slice(&[1i64, 0, 2]);
        let theirs = s
            .cross_entropy_loss::<Tensor>(&target, None, Reduction::Mean, -100, 0.0)
            .double_value(&[]);
        assert!((ours - theirs).abs() < 1e-12, "{ours} vs {theirs}");
    }

    #[test]
    fn infonce_leaves_out_queries_without_relevant_documents() {
        for output in [
            OutputType::Real,
            OutputType::Probability,
            OutputType::LogProbability,
        ] {
            let s = matrix(&[&[0.5, 0.2, 0.3], &[0.1, 0.6, 0.3]]);
            let s = if output == OutputType::LogProbability {
                s.log()
            } else {
                s
            }
            .set_requires_grad(true);
            let r = matrix(&[&[0.0, 1.0, 0.0], &[0.0, 0.0, 0.0]]);
            let (sum, count) = infonce(output).sum(&s, &r).unwrap();
            assert_eq!(count, 1);
            assert!(sum.double_value(&[]).is_finite(), "{output:?}");
            sum.backward();
            let grad = vec(&s.grad());
            assert!(grad.iter().all(|g| g.is_finite()), "{output:?}: {grad:?}");
            assert_eq!(&grad[3..], &[0.0, 0.0, 0.0], "{output:?}");
        }
        let nothing = matrix(&[&[0.0, 0.0]]);
        let (sum, count) = infonce(OutputType::Real)
            .sum(&matrix(&[&[1.0, 2.0]]), &nothing)
            .unwrap();
        assert_eq!((sum.double_value(&[]), count), (0.0, 0));
    }

    #[test]
    fn infonce_gives_zero_probabilities_of_irrelevant_documents_no_nan() {
        let s = matrix(&[&[0.7, 0.0, 0.3]]).set_requires_grad(true);
        let r = matrix(&[&[1.0, 0.0, 0.0]]);
        let (sum, _) = infonce(OutputType::Probability).sum(&s, &r).unwrap();
        sum.backward();
        let grad = vec(&s.grad());
        assert!((grad[0] + 1.0 / 0.7).abs() < 1e-12, "{grad:?}");
        assert_eq!(&grad[1..], &[0.0, 0.0]);
    }

    #[test]
    fn infonce_matches_pytorch() {
        check_fixture(
            |case| Box::new(infonce(fixture::output(case))),
            "batch-infonce",
        );
    }

    #[test]
    fn shapes_must_agree() {
        let err = infonce(OutputType::Real)
            .sum(
                &Tensor::zeros([2, 3], (Kind::Double, tch::Device::Cpu)),
                &Tensor::zeros([2, 2], (Kind::Double, tch::Device::Cpu)),
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("batch-infonce: scores are [2, 3] but relevances are [2, 2]"),
            "{err}"
        );
    }
}
