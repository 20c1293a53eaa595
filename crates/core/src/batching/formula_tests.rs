//! Tests of cost formulas, and the reference formula `a*bs*l**2 + b*bs*l + c` that the other
//! batching tests share.

use super::*;

pub(crate) fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// The terms of `a*bs*l**2 + b*bs*l + c`, as TypeScript expands it.
pub(crate) fn square_terms() -> Vec<FormulaTerm> {
    vec![
        FormulaTerm::of("a", &[("bs", 1), ("l", 2)]),
        FormulaTerm::of("b", &[("bs", 1), ("l", 1)]),
        FormulaTerm::of("c", &[]),
    ]
}

/// `a*bs*l**2 + b*bs*l + c` over the variables `bs` and `l`.
pub(crate) fn square_formula() -> Formula {
    Formula::new(
        &square_terms(),
        &names(&["a", "b", "c"]),
        &names(&["bs", "l"]),
        "batcher",
    )
    .unwrap()
}

#[test]
fn groups_hold_each_coefficients_terms_in_order() {
    // `a*bs + a*bs*l + 3 + bs` as TypeScript expands it, variables declared out of order.
    let terms = [
        FormulaTerm::of("a", &[("bs", 1), ("l", 1)]),
        FormulaTerm::of("a", &[("bs", 1)]),
        FormulaTerm::known(1.0, &[("bs", 1)]),
        FormulaTerm::known(3.0, &[]),
    ];
    let f = Formula::new(&terms, &names(&["a"]), &names(&["l", "bs"]), "b").unwrap();
    assert_eq!(f.variable_names(), ["bs", "l"]);
    assert_eq!(
        f.groups()[0],
        vec![
            Monomial {
                factor: 1.0,
                exponents: vec![1, 1]
            },
            Monomial {
                factor: 1.0,
                exponents: vec![1, 0]
            },
        ]
    );
    assert_eq!(f.constant().len(), 2);
    assert_eq!(f.constant()[1].eval(&[5.0, 7.0]), 3.0);
    assert_eq!(f.groups()[0][0].eval(&[5.0, 7.0]), 35.0);
    assert_eq!(square_formula().coefficient_names(), ["a", "b", "c"]);
}

#[test]
fn a_coefficient_never_used_has_an_empty_group() {
    let terms = [FormulaTerm::of("b", &[("bs", 1)])];
    let f = Formula::new(&terms, &names(&["b", "a"]), &names(&["bs"]), "b").unwrap();
    assert_eq!(f.coefficient_names(), ["a", "b"]);
    assert!(f.groups()[0].is_empty());
    assert_eq!(f.groups()[1].len(), 1);
}

#[test]
fn terms_must_use_declared_names_and_finite_factors() {
    let error = |term: FormulaTerm| {
        Formula::new(&[term], &names(&["a"]), &names(&["bs"]), "t.batcher")
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error(FormulaTerm::of("d", &[("bs", 1)])),
        "t.batcher.formula_terms[0]: \"d\" is not one of the coefficients [\"a\"]"
    );
    assert_eq!(
        error(FormulaTerm::of("a", &[("l", 1)])),
        "t.batcher.formula_terms[0]: \"l\" is not one of the variables [\"bs\"]"
    );
    assert_eq!(
        error(FormulaTerm::known(f64::NAN, &[])),
        "t.batcher.formula_terms[0]: the factor NaN is not finite"
    );
    let both = Formula::new(&[], &names(&["a", "bs"]), &names(&["bs"]), "t.batcher")
        .unwrap_err()
        .to_string();
    assert_eq!(
        both,
        "t.batcher.coefficient_names: \"bs\" is declared both as a coefficient and as a variable"
    );
}
