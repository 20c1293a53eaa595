//! The memory cost model of the predictive batcher: design rows from a [`Formula`], probe
//! observations, a minimum-norm least-squares fit, predictions, and the largest micro-batch size
//! whose predicted cost fits a budget.
//!
//! Unlike the reference, the coefficient-free part of the formula is known, not fitted: it is
//! subtracted from the observations before solving, and the trailing slot of the coefficient
//! vector is 1 (0 when the formula has no such part).

use super::formula::{Formula, Monomial};
use super::lstsq::min_norm_least_squares;
use crate::{Error, Result};

pub use crate::runtime::memory::Dims;

/// A batch size chosen against a budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchSizeChoice {
    /// The size to use.
    pub size: usize,
    /// False when even the smallest allowed size is predicted over budget.
    pub fits: bool,
}

/// Fitted (or received) coefficients of a cost formula.
#[derive(Debug, Clone)]
pub struct CostModel {
    formula: Formula,
    batch_size_index: usize,
    /// Config path of the batcher, for error messages.
    path: String,
    rows: Vec<Vec<f64>>,
    targets: Vec<f64>,
    coefficients: Option<Vec<f64>>,
}

impl CostModel {
    /// A model of `formula` where `batch_size_variable` is the micro-batch size; `path` is the
    /// batcher's configuration path, named in errors.
    ///
    /// # Errors
    /// When `batch_size_variable` is not one of the formula's variables.
    pub fn new(formula: Formula, batch_size_variable: &str, path: &str) -> Result<Self> {
        let Some(batch_size_index) = formula
            .variable_names()
            .iter()
            .position(|v| v == batch_size_variable)
        else {
            return Err(Error::config(
                format!("{path}.batch_size_variable"),
                format!(
                    "\"{batch_size_variable}\" is not one of the variables {:?}",
                    formula.variable_names()
                ),
            ));
        };
        Ok(CostModel {
            formula,
            batch_size_index,
            path: path.to_string(),
            rows: Vec::new(),
            targets: Vec::new(),
            coefficients: None,
        })
    }

    /// The formula.
    pub fn formula(&self) -> &Formula {
        &self.formula
    }

    /// The batcher's configuration path, named in errors.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Name of the batch-size variable.
    pub fn batch_size_variable(&self) -> &str {
        &self.formula.variable_names()[self.batch_size_index]
    }

    /// Length of the coefficient vector: one per coefficient (sorted) plus the trailing slot.
    pub fn len(&self) -> usize {
        self.formula.coefficient_names().len() + 1
    }

    /// Always false: there is at least the trailing slot.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// The values of the formula's variables in `dims`, in formula order.
    ///
    /// # Errors
    /// When `dims` lacks one of them.
    pub fn values(&self, dims: &Dims) -> Result<Vec<f64>> {
        self.formula
            .variable_names()
            .iter()
            .map(|v| {
                dims.get(v).map(|x| *x as f64).ok_or_else(|| {
                    Error::config(
                        format!("{}.dims_provider", self.path),
                        format!("the batch dimensions {dims:?} lack the formula variable \"{v}\""),
                    )
                })
            })
            .collect()
    }

    fn row_of(&self, values: &[f64]) -> Vec<f64> {
        let sum = |poly: &[Monomial]| poly.iter().map(|m| m.eval(values)).sum::<f64>();
        let mut row: Vec<f64> = self.formula.groups().iter().map(|g| sum(g)).collect();
        row.push(sum(self.formula.constant()));
        row
    }

    /// The design row of `dims`: each coefficient's polynomial, then the coefficient-free part.
    ///
    /// # Errors
    /// When `dims` lacks a variable of the formula.
    pub fn design_row(&self, dims: &Dims) -> Result<Vec<f64>> {
        Ok(self.row_of(&self.values(dims)?))
    }

    /// Records that a batch of `dims` used `peak_bytes` (above what was allocated before it).
    ///
    /// # Errors
    /// When `dims` lacks a variable of the formula.
    pub fn observe(&mut self, dims: &Dims, peak_bytes: f64) -> Result<()> {
        let row = self.design_row(dims)?;
        self.rows.push(row);
        self.targets.push(peak_bytes);
        Ok(())
    }

    /// Number of observations so far.
    pub fn observations(&self) -> usize {
        self.rows.len()
    }

    /// Fits the coefficients to the observations (minimum-norm least squares in float64).
    ///
    /// # Errors
    /// Without any observation.
    pub fn fit(&mut self) -> Result<()> {
        if self.rows.is_empty() {
            return Err(Error::config(
                self.path.clone(),
                "the memory cost model has no observation to fit: every probe failed or none was \
                 given; add smaller probe points to dims_provider.probe_dims",
            ));
        }
        let ncoef = self.len() - 1;
        let known_part = self.rows.iter().map(|r| r[ncoef]);
        let residual: Vec<f64> = self
            .targets
            .iter()
            .zip(known_part)
            .map(|(y, k)| y - k)
            .collect();
        let mut coefficients = min_norm_least_squares(&self.rows, &residual, ncoef);
        coefficients.push(if self.formula.constant().is_empty() {
            0.0
        } else {
            1.0
        });
        self.coefficients = Some(coefficients);
        Ok(())
    }

    /// Whether coefficients are known (fitted or set).
    pub fn is_fitted(&self) -> bool {
        self.coefficients.is_some()
    }

    /// The coefficients (sorted coefficient order, then the trailing slot), once fitted.
    pub fn coefficients(&self) -> Option<&[f64]> {
        self.coefficients.as_deref()
    }

    /// Sets the coefficients, e.g. as received from rank 0.
    ///
    /// # Errors
    /// When `coefficients` does not have [`CostModel::len`] entries.
    pub fn set_coefficients(&mut self, coefficients: Vec<f64>) -> Result<()> {
        if coefficients.len() != self.len() {
            return Err(Error::config(
                self.path.clone(),
                format!(
                    "expected {} cost coefficients ({:?} and the constant slot), got {}",
                    self.len(),
                    self.formula.coefficient_names(),
                    coefficients.len()
                ),
            ));
        }
        self.coefficients = Some(coefficients);
        Ok(())
    }

    /// Succeeds once coefficients are known.
    ///
    /// # Errors
    /// Before fitting or setting the coefficients, saying so.
    pub fn ensure_fitted(&self) -> Result<()> {
        self.fitted().map(|_| ())
    }

    fn fitted(&self) -> Result<&[f64]> {
        self.coefficients.as_deref().ok_or_else(|| {
            Error::config(
                self.path.clone(),
                "the PredictiveBatcher was used before fit/broadcast of its memory model: \
                 probe memory first (or receive the coefficients from rank 0)",
            )
        })
    }

    fn predict_values(&self, coefficients: &[f64], values: &[f64]) -> f64 {
        self.row_of(values)
            .iter()
            .zip(coefficients)
            .map(|(a, c)| a * c)
            .sum()
    }

    /// Predicted bytes of a batch of `dims`.
    ///
    /// # Errors
    /// Before fitting, or when `dims` lacks a variable.
    pub fn predict(&self, dims: &Dims) -> Result<f64> {
        let coefficients = self.fitted()?;
        Ok(self.predict_values(coefficients, &self.values(dims)?))
    }

    /// Predicted bytes of `dims` with the batch size replaced by `batch_size`.
    ///
    /// # Errors
    /// Before fitting, or when `dims` lacks a variable other than the batch size.
    pub fn predict_with_size(&self, dims: &Dims, batch_size: usize) -> Result<f64> {
        let coefficients = self.fitted()?;
        let mut values = self.values_but_size(dims)?;
        values[self.batch_size_index] = batch_size as f64;
        Ok(self.predict_values(coefficients, &values))
    }

    fn values_but_size(&self, dims: &Dims) -> Result<Vec<f64>> {
        let bs = self.batch_size_variable();
        if dims.contains_key(bs) {
            self.values(dims)
        } else {
            let mut with = dims.clone();
            with.insert(bs.to_string(), 0);
            self.values(&with)
        }
    }

    /// The largest size in `[lo, hi]` whose predicted cost for `dims` (batch size replaced)
    /// is within `budget`: `lo` when `lo > hi` or when even `lo` does not fit (then `fits` is
    /// false), `hi` when it fits, otherwise found by bisection.
    ///
    /// # Errors
    /// Before fitting, or when `dims` lacks a variable other than the batch size.
    pub fn choose_batch_size(
        &self,
        dims: &Dims,
        budget: f64,
        lo: usize,
        hi: usize,
    ) -> Result<BatchSizeChoice> {
        let coefficients = self.fitted()?;
        let mut values = self.values_but_size(dims)?;
        let mut fits = |b: usize| {
            values[self.batch_size_index] = b as f64;
            self.predict_values(coefficients, &values) <= budget
        };
        if lo > hi {
            return Ok(BatchSizeChoice {
                size: lo,
                fits: fits(lo),
            });
        }
        if !fits(lo) {
            return Ok(BatchSizeChoice {
                size: lo,
                fits: false,
            });
        }
        if fits(hi) {
            return Ok(BatchSizeChoice {
                size: hi,
                fits: true,
            });
        }
        let (mut lo, mut hi) = (lo, hi);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        Ok(BatchSizeChoice {
            size: lo,
            fits: true,
        })
    }
}

#[cfg(test)]
#[path = "cost_tests.rs"]
mod tests;
