//! Tests of the cost model: the fit recovers known coefficients, predictions and the largest
//! batch size that fits, copied coefficients, and the errors of unfitted or ill-formed models.

use super::super::formula::tests::{names, square_formula};
use super::*;
use crate::config::FormulaTerm;

pub(crate) fn dims(bs: u64, l: u64) -> Dims {
    Dims::from([("bs".to_string(), bs), ("l".to_string(), l)])
}

/// A model of `terms` over the variables `bs` and `l`.
fn model(terms: &[FormulaTerm], coefficients: &[&str]) -> CostModel {
    let f = Formula::new(terms, &names(coefficients), &names(&["bs", "l"]), "batcher").unwrap();
    CostModel::new(f, "bs", "batcher").unwrap()
}

fn square() -> CostModel {
    CostModel::new(square_formula(), "bs", "batcher").unwrap()
}

/// `a*bs`.
fn linear() -> CostModel {
    model(&[FormulaTerm::of("a", &[("bs", 1)])], &["a"])
}

/// The reference fixture: `a*bs*l**2 + b*bs*l + c` with truth (2, 3, 100) observed on the four
/// probes and (2, 256).
fn fitted_reference() -> CostModel {
    let mut m = square();
    for (bs, l) in [(1, 64), (1, 128), (2, 128), (4, 64), (2, 256)] {
        let y = 2.0 * (bs * l * l) as f64 + 3.0 * (bs * l) as f64 + 100.0;
        m.observe(&dims(bs, l), y).unwrap();
    }
    m.fit().unwrap();
    m
}

#[test]
fn the_fit_recovers_known_coefficients() {
    // Reference scenario 16 (our trailing slot is 0: the formula has no coefficient-free part).
    let m = fitted_reference();
    let c = m.coefficients().unwrap();
    assert_eq!(m.formula().coefficient_names(), ["a", "b", "c"]);
    assert_eq!(c.len(), 4);
    for (got, want) in c[..3].iter().zip([2.0, 3.0, 100.0]) {
        assert!((got - want).abs() < 1e-6, "{c:?}");
    }
    assert!(c[3].abs() < 1e-6);
}

#[test]
fn predictions_follow_the_fit() {
    // Reference scenario 17.
    let p = fitted_reference().predict(&dims(8, 256)).unwrap();
    assert!((p - 1_054_820.0).abs() < 1e-3, "{p}");
}

#[test]
fn the_batch_size_is_the_largest_that_fits() {
    // Reference scenario 18: at l=128 the cost is 33152·bs + 100.
    let m = fitted_reference();
    let at = |bs: f64| 33152.0 * bs + 100.0;
    assert_eq!(at(10.0), 331_620.0);
    let budget = (at(10.0) + at(11.0)) / 2.0;
    let chosen = m.choose_batch_size(&dims(1, 128), budget, 1, 64).unwrap();
    assert_eq!(
        chosen,
        BatchSizeChoice {
            size: 10,
            fits: true
        }
    );
    let nothing = m.choose_batch_size(&dims(1, 128), 0.0, 3, 64).unwrap();
    assert_eq!(
        nothing,
        BatchSizeChoice {
            size: 3,
            fits: false
        }
    );
    let everything = m.choose_batch_size(&dims(1, 128), 1e12, 1, 64).unwrap();
    assert_eq!(everything.size, 64);
    let inverted = m.choose_batch_size(&dims(1, 128), 1e12, 5, 4).unwrap();
    assert_eq!(inverted.size, 5);
}

#[test]
fn the_batch_size_variable_may_be_absent_from_dims() {
    let m = fitted_reference();
    let only_l = Dims::from([("l".to_string(), 128)]);
    assert!((m.predict_with_size(&only_l, 10).unwrap() - 331_620.0).abs() < 1e-6);
    assert!(m.predict(&only_l).is_err());
}

#[test]
fn coefficients_can_be_copied_to_an_unfitted_model() {
    // Reference scenario 19.
    let mut m = square();
    for (bs, l) in [(1, 64), (2, 128), (4, 256)] {
        m.observe(&dims(bs, l), (bs * l * l) as f64).unwrap();
    }
    m.fit().unwrap();
    let mut fresh = square();
    assert!(!fresh.is_fitted());
    assert!(fresh.predict(&dims(1, 1)).is_err());
    fresh
        .set_coefficients(m.coefficients().unwrap().to_vec())
        .unwrap();
    assert!(fresh.is_fitted());
    assert_eq!(fresh.coefficients(), m.coefficients());
    let short = fresh.set_coefficients(vec![1.0, 2.0]).unwrap_err();
    assert!(
        short.to_string().contains("expected 4 cost coefficients"),
        "{short}"
    );
}

#[test]
fn an_unfitted_model_says_to_fit_or_broadcast() {
    let m = linear();
    let err = m.predict(&dims(1, 1)).unwrap_err().to_string();
    assert!(err.contains("before fit/broadcast"), "{err}");
    let mut empty = linear();
    assert!(empty
        .fit()
        .unwrap_err()
        .to_string()
        .contains("no observation"));
}

#[test]
fn the_coefficient_free_part_is_known_not_fitted() {
    // Fitting the multiplier of bs*l**2 too (the reference) would make one probe an
    // underdetermined system whose minimum-norm answer is wrong; knowing it, one probe is exact.
    let mut m = model(
        &[
            FormulaTerm::of("a", &[("bs", 1), ("l", 1)]),
            FormulaTerm::known(1.0, &[("bs", 1), ("l", 2)]),
        ],
        &["a"],
    );
    m.observe(&dims(3, 7), 5.0 * 21.0 + 147.0).unwrap();
    m.fit().unwrap();
    let c = m.coefficients().unwrap();
    assert!((c[0] - 5.0).abs() < 1e-9, "{c:?}");
    assert_eq!(c[1], 1.0);
    let p = m.predict(&dims(2, 100)).unwrap();
    assert!((p - (5.0 * 200.0 + 20_000.0)).abs() < 1e-6, "{p}");
    assert_eq!(m.design_row(&dims(2, 3)).unwrap(), vec![6.0, 18.0]);
}

#[test]
fn a_missing_variable_is_named() {
    let m = fitted_reference();
    let err = m
        .design_row(&Dims::from([("bs".to_string(), 1)]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("lack the formula variable \"l\""), "{err}");
    assert!(err.starts_with("batcher.dims_provider"), "{err}");
}

#[test]
fn the_batch_size_variable_must_be_a_variable() {
    let terms = [FormulaTerm::of("a", &[("bs", 1)])];
    let f = Formula::new(&terms, &names(&["a"]), &names(&["bs"]), "batcher").unwrap();
    let err = CostModel::new(f, "n", "batcher").unwrap_err().to_string();
    assert!(err.starts_with("batcher.batch_size_variable"), "{err}");
}
