//! The loss traits ([`PairwiseLoss`], [`BatchwiseLoss`]) and the PyTorch fixture that the loss
//! tests share.

use tch::Tensor;

use crate::Result;

/// A loss over pairs of scores.
pub trait PairwiseLoss: Send {
    /// The name metrics are logged under (the reference's, e.g. `pair-hinge`).
    fn name(&self) -> &'static str;
    /// Weight in the trainer's sum of losses.
    fn weight(&self) -> f64;
    /// Sum of the per-pair losses for preferred scores `positive` and other scores `negative`.
    ///
    /// # Errors
    /// A libtorch error.
    fn sum(&self, positive: &Tensor, negative: &Tensor) -> Result<Tensor>;
}

/// A loss over the scores of every query against every document of a batch.
pub trait BatchwiseLoss: Send {
    /// The name metrics are logged under (the reference's, e.g. `batch-infonce`).
    fn name(&self) -> &'static str;
    /// Weight in the trainer's sum of losses.
    fn weight(&self) -> f64;
    /// The summed loss of `scores` (queries × documents) against `relevances` of the same shape,
    /// and the number of queries it sums over: the trainer divides the sum by the total count of
    /// the whole batch.
    ///
    /// # Errors
    /// A libtorch error, e.g. when the shapes differ.
    fn sum(&self, scores: &Tensor, relevances: &Tensor) -> Result<(Tensor, i64)>;
}

/// The PyTorch fixture `tests/fixtures/losses.json` (written by `scripts/fixtures/gen_losses.py`)
/// and helpers shared by the loss tests.
#[cfg(test)]
pub(crate) mod fixture {
    use serde_json::Value;

    use crate::models::OutputType;

    const JSON: &str = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/losses.json"
    ));

    /// The cases of `section` (`pairwise` or `batchwise`) for the loss logged as `loss`.
    pub fn cases(section: &str, loss: &str) -> Vec<Value> {
        let all: Value = serde_json::from_str(JSON).unwrap();
        let cases: Vec<Value> = all[section]
            .as_array()
            .unwrap()
            .iter()
            .filter(|case| case["loss"] == loss)
            .cloned()
            .collect();
        assert!(!cases.is_empty(), "no {section} case for {loss}");
        cases
    }

    /// The numbers under `key`.
    pub fn floats(case: &Value, key: &str) -> Vec<f64> {
        case[key]
            .as_array()
            .unwrap_or_else(|| panic!("{key} is not an array"))
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect()
    }

    /// The case's score kind.
    pub fn output(case: &Value) -> OutputType {
        match case["output"].as_str().unwrap() {
            "real" => OutputType::Real,
            "probability" => OutputType::Probability,
            "log-probability" => OutputType::LogProbability,
            other => panic!("unknown output {other}"),
        }
    }

    /// Fails unless `got` and `want` agree to 1e-6, relative where |want| > 1: the gradients of
    /// log-probabilities near 0 reach 1e8, where PyTorch's own rounding exceeds 1e-6.
    pub fn assert_close(got: &[f64], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: lengths");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                "{what}[{i}]: got {g}, PyTorch {w}"
            );
        }
    }
}
