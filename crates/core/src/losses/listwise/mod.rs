//! Losses over slates: each query's documents as a padded list of scores with graded labels.
//! Values and gradients follow allRank 1.4.3 (`allrank.models.losses`); padded positions get a
//! zero gradient.

mod approx;
mod configured;
mod lambda;
mod neural;
mod simple;

pub use approx::*;
pub use configured::*;
pub use lambda::*;
pub use neural::*;
pub use simple::*;

use tch::{Kind, TchError, Tensor};

use crate::Result;

/// allRank's `DEFAULT_EPS`, added inside logarithms and used as a lower clamp.
pub(crate) const EPS: f64 = 1e-10;

/// A loss over slates of scores.
pub trait ListwiseLoss: Send {
    /// The name metrics are logged under (e.g. `list-net`).
    fn name(&self) -> &'static str;
    /// Weight in the trainer's sum of losses.
    fn weight(&self) -> f64;
    /// The summed loss of `scores` (slates × positions) against graded `labels` of the same
    /// shape where `mask` (bool, same shape) is true, and the count that makes `sum / count`
    /// allRank's value on this batch (slates, or pairs for pair-averaged losses). The trainer
    /// divides the sum by the slate count of the whole batch instead, so that micro-batches add
    /// up to the whole batch.
    ///
    /// # Errors
    /// A libtorch error, e.g. when the shapes differ.
    fn sum(&self, scores: &Tensor, labels: &Tensor, mask: &Tensor) -> Result<(Tensor, i64)>;
}

/// A batch of slates checked and aligned for a loss.
pub(crate) struct Slates {
    /// `B × L` scores.
    pub scores: Tensor,
    /// `B × L` labels in the scores' kind, outside the graph, 0 at padded positions.
    pub labels: Tensor,
    /// `B × L` bool: real documents.
    pub real: Tensor,
    /// `B × L` bool: padded positions.
    pub padded: Tensor,
    pub slates: i64,
    pub length: i64,
}

impl Slates {
    /// Checks that the three tensors share a `B × L` shape (an error naming `name` otherwise).
    pub fn new(name: &str, scores: &Tensor, labels: &Tensor, mask: &Tensor) -> Result<Self> {
        let (slates, length) = scores.size2()?;
        if labels.size() != scores.size() || mask.size() != scores.size() {
            return Err(TchError::Shape(format!(
                "{name}: scores are {:?} but labels are {:?} and the mask {:?}",
                scores.size(),
                labels.size(),
                mask.size()
            ))
            .into());
        }
        let real = mask.f_to_device(scores.device())?.f_to_kind(Kind::Bool)?;
        let padded = real.f_logical_not()?;
        let labels = labels
            .f_detach()?
            .f_to_device(scores.device())?
            .f_to_kind(scores.kind())?
            .f_masked_fill(&padded, 0.0)?;
        Ok(Slates {
            scores: scores.shallow_clone(),
            labels,
            real,
            padded,
            slates,
            length,
        })
    }
}

/// `x[:, :, None] − x[:, None, :]`: the `B × L × L` differences of every pair of positions.
pub(crate) fn pair_differences(x: &Tensor) -> Result<Tensor> {
    Ok(x.f_unsqueeze(2)?.f_sub(&x.f_unsqueeze(1)?)?)
}

/// `a[:, :, None] & b[:, None, :]` for bool `B × L` tensors.
pub(crate) fn pair_and(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(a.f_unsqueeze(2)?.f_logical_and(&b.f_unsqueeze(1)?)?)
}

/// `a[:, :, None] | b[:, None, :]` for bool `B × L` tensors.
pub(crate) fn pair_or(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    Ok(a.f_unsqueeze(2)?.f_logical_or(&b.f_unsqueeze(1)?)?)
}

/// `log2(1 + position)` for positions `1..=length`, in `like`'s kind and device.
pub(crate) fn discounts(length: i64, like: &Tensor) -> Result<Tensor> {
    Ok(Tensor::f_arange_start(2, length + 2, (like.kind(), like.device()))?.f_log2()?)
}

/// allRank's fixture `tests/fixtures/listwise.json` (written by `scripts/fixtures/gen_listwise.py`).
#[cfg(test)]
pub(crate) mod fixture {
    use serde_json::Value;
    use tch::{Kind, Tensor};

    use super::ListwiseLoss;

    const JSON: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/listwise.json"
    ));

    /// The whole fixture.
    pub fn all() -> Value {
        serde_json::from_str(JSON).unwrap()
    }

    /// The loss cases for the loss logged as `loss`.
    pub fn cases(loss: &str) -> Vec<Value> {
        let cases: Vec<Value> = all()["losses"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|case| case["loss"] == loss)
            .cloned()
            .collect();
        assert!(!cases.is_empty(), "no case for {loss}");
        cases
    }

    fn floats(case: &Value, key: &str) -> Vec<f64> {
        case[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} is not an array"))
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    }

    /// Runs `make(case)` on every case of `name`: `sum / count` and the gradient of that value
    /// must equal allRank's to `tolerance` (relative where the reference exceeds 1). Padded
    /// positions reach the loss with label 0 and their fixture scores, and must get a zero
    /// gradient.
    pub fn check(name: &str, tolerance: f64, make: impl Fn(&Value) -> Box<dyn ListwiseLoss>) {
        for case in cases(name) {
            let loss = make(&case);
            assert_eq!(loss.name(), name);
            let kind = match case["dtype"].as_str().unwrap() {
                "float32" => Kind::Float,
                _ => Kind::Double,
            };
            let shape = [
                case["slates"].as_i64().unwrap(),
                case["length"].as_i64().unwrap(),
            ];
            let labels = Tensor::from_slice(&floats(&case, "labels")).view(shape);
            let mask = labels.ne(-1.0);
            let labels = labels.clamp_min(0.0);
            let scores = Tensor::from_slice(&floats(&case, "scores"))
                .view(shape)
                .to_kind(kind)
                .set_requires_grad(true);
            let (sum, count) = loss.sum(&scores, &labels, &mask).unwrap();
            let what = format!("{name} {}", case["params"]);
            assert_eq!(count, case["count"].as_i64().unwrap(), "{what}: count");
            let value = sum / count.max(1) as f64;
            let want = case["value"].as_f64().unwrap();
            let got = value.double_value(&[]);
            assert!(
                (got - want).abs() <= tolerance * want.abs().max(1.0),
                "{what}: value {got}, allRank {want}"
            );
            value.backward();
            let grad =
                Vec::<f64>::try_from(scores.grad().flatten(0, -1).to_kind(Kind::Double)).unwrap();
            let real = Vec::<bool>::try_from(mask.flatten(0, -1)).unwrap();
            for (i, (g, w)) in grad.iter().zip(floats(&case, "grad_scores")).enumerate() {
                assert!(
                    (g - w).abs() <= tolerance * w.abs().max(1.0),
                    "{what}: grad[{i}] {g}, allRank {w}"
                );
                if !real[i] {
                    assert_eq!(*g, 0.0, "{what}: padded position {i}");
                }
            }
        }
    }
}
