//! The PyTorch optimizer trajectories of `tests/fixtures/optimizers.json`
//! (`scripts/fixtures/gen_optimizers.py`), shared by the optimizer tests.

use std::collections::BTreeMap;

use serde::Deserialize;
use tch::{Kind, Tensor};

use super::{zero_grad, Optimizer};

#[derive(Deserialize)]
pub(crate) struct Case {
    pub config: serde_json::Value,
    pub trajectory: Vec<Vec<Vec<f64>>>,
}

#[derive(Deserialize)]
pub(crate) struct Fixture {
    pub shapes: Vec<Vec<i64>>,
    pub initial: Vec<Vec<f64>>,
    pub grads: Vec<Vec<Vec<f64>>>,
    pub missing: Vec<(usize, usize)>,
    pub cases: BTreeMap<String, Case>,
}

fn tensor(values: &[f64], shape: &[i64]) -> Tensor {
    Tensor::from_slice(values).to_kind(Kind::Float).view(shape)
}

impl Fixture {
    pub fn load() -> Self {
        serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/optimizers.json"
        )))
        .unwrap()
    }

    pub fn initial_params(&self) -> Vec<Tensor> {
        self.initial
            .iter()
            .zip(&self.shapes)
            .map(|(v, s)| tensor(v, s).set_requires_grad(true))
            .collect()
    }

    /// Gives `params` the gradients of `step`. A parameter the fixture leaves without one
    /// keeps none: the fixture only leaves gradients out before a parameter's first one.
    pub fn set_grads(&self, params: &[Tensor], step: usize) {
        zero_grad(params).unwrap();
        for (i, p) in params.iter().enumerate() {
            if self.missing.contains(&(step, i)) {
                continue;
            }
            // d/dp sum(p * g) = g, accumulated into the (zeroed or absent) gradient.
            (p * tensor(&self.grads[step][i], &self.shapes[i]))
                .sum(Kind::Float)
                .backward();
        }
    }
}

/// Runs five steps of the optimizer `make` builds and compares every parameter after every
/// step with PyTorch's (float32: 1e-6 relative).
pub(crate) fn check_trajectory(
    fixture: &Fixture,
    case: &str,
    make: impl Fn(Vec<Tensor>) -> Box<dyn Optimizer>,
    lr: f64,
) {
    let params = fixture.initial_params();
    let mut opt = make(params.iter().map(Tensor::shallow_clone).collect());
    for (step, expected) in fixture.cases[case].trajectory.iter().enumerate() {
        fixture.set_grads(&params, step);
        opt.step(lr).unwrap();
        for (i, (p, want)) in params.iter().zip(expected).enumerate() {
            let got = Vec::<f64>::try_from(p.flatten(0, -1).to_kind(Kind::Double)).unwrap();
            for (k, (g, w)) in got.iter().zip(want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                    "{case} step {step} param {i}[{k}]: {g} vs {w}"
                );
            }
        }
    }
}
