use super::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn canonical(text: &str) -> Parsed<String> {
    Formula::parse(text, &names(&["a", "b", "c"]), &names(&["bs", "l"])).map(|f| f.canonical())
}

fn error(text: &str) -> String {
    match canonical(text) {
        Ok(c) => panic!("{text} was accepted as {c}"),
        Err(e) => e.0,
    }
}

#[test]
fn equivalent_inputs_share_one_canonical_text() {
    // Reference scenario 9.
    for text in [
        "a*bs*l**2 + b*bs*l + c",
        "c + a*bs*l**2 + b*bs*l",
        "a *bs* l**2+b*bs*l+ c",
        "c + b*bs*l + a*l**2*bs",
        "a*l**2*bs + c + b*l*bs",
        // The TypeScript side's own test input.
        "c+l*b*bs +  bs*l**2*a",
    ] {
        assert_eq!(canonical(text).unwrap(), "a*bs*l**2 + b*bs*l + c", "{text}");
    }
}

#[test]
fn the_reference_table_is_reproduced_byte_for_byte() {
    // Reference §7.3 table; scenario 15 is its first row.
    assert_eq!(
        canonical("c + b*l*bs + a*l**2*bs").unwrap(),
        "a*bs*l**2 + b*bs*l + c"
    );
    assert_eq!(
        canonical("a*bs + a*bs*l + 3 + bs").unwrap(),
        "a*(bs*l + bs) + bs + 3"
    );
    assert_eq!(canonical("2*a*bs").unwrap(), "a*2*bs");
    assert_eq!(canonical("a*bs - b*bs*l").unwrap(), "a*bs + b*-1*bs*l");
}

#[test]
fn products_and_powers_are_expanded() {
    assert_eq!(
        canonical("(a + b)*(bs + l)").unwrap(),
        "a*(bs + l) + b*(bs + l)"
    );
    assert_eq!(
        canonical("a*(bs + l)**2").unwrap(),
        "a*(bs**2 + 2*bs*l + l**2)"
    );
    assert_eq!(canonical("a*bs^2*l^0").unwrap(), "a*bs**2");
    assert_eq!(canonical("-(a*bs) + 2*c").unwrap(), "a*-1*bs + c*2");
    assert_eq!(canonical("4*a*bs/2").unwrap(), "a*2*bs");
    assert_eq!(canonical("a*bs/2*2").unwrap(), "a*bs");
}

#[test]
fn cancelled_terms_disappear() {
    assert_eq!(canonical("a*bs + b*l - b*l").unwrap(), "a*bs");
    assert_eq!(canonical("a - a").unwrap(), "0");
    assert_eq!(canonical("a*bs + 0*b").unwrap(), "a*bs");
}

#[test]
fn canonical_text_is_a_fixed_point() {
    for text in [
        "a*bs + a*bs*l + 3 + bs",
        "a*bs - b*bs*l",
        "a*(bs + l)**2 + c*7",
        "c + b*l*bs + a*l**2*bs",
    ] {
        let once = canonical(text).unwrap();
        assert_eq!(canonical(&once).unwrap(), once, "{text}");
    }
}

#[test]
fn several_coefficients_in_one_term_are_rejected() {
    // Reference scenario 10.
    let message = error("a*b*bs");
    assert!(message.contains("multiple coefficients"), "{message}");
    assert!(message.contains("linear"), "{message}");
    assert!(error("(a + bs)*(b + l)").contains("multiple coefficients"));
}

#[test]
fn coefficient_powers_are_rejected() {
    let message = error("a**2*bs + b + c");
    assert!(message.contains("not linear in a"), "{message}");
}

#[test]
fn undeclared_symbols_are_named() {
    // Reference scenario 11.
    let message = error("a*bs + d");
    assert!(message.starts_with("undeclared symbols: d"), "{message}");
    assert!(error("e*x + a").starts_with("undeclared symbols: e, x"));
}

#[test]
fn non_integer_factors_are_rejected() {
    assert!(error("1.5*a*bs").contains("not a whole number"));
    assert!(error("2.0*a*bs").contains("not a whole number"));
    let message = error("a*bs/2");
    assert!(message.contains("non-integer factor 1/2"), "{message}");
    assert!(error("a*bs + 1/3").contains("non-integer factor 1/3"));
}

#[test]
fn malformed_formulas_say_what_is_wrong() {
    assert_eq!(error(""), "the formula is empty");
    assert_eq!(error("a*bs +"), "the formula ends early");
    assert_eq!(error("(a*bs"), "a \"(\" is never closed");
    assert!(error("a*bs)").contains("unexpected \")\""));
    assert!(error("a*bs @ 2").contains("unexpected character '@'"));
    assert!(error("a/bs").contains("division is only allowed by numbers"));
    assert!(error("a*bs**l").contains("exponents must be whole numbers"));
    assert!(error("a*bs**-1").contains("exponents must be whole numbers"));
    assert!(error("a/0").contains("division by zero"));
}

#[test]
fn a_name_cannot_be_both_coefficient_and_variable() {
    let err = Formula::parse("a*bs", &names(&["a", "bs"]), &names(&["bs"])).unwrap_err();
    assert!(err.0.contains("\"bs\" is declared both"), "{err}");
}

#[test]
fn groups_hold_each_coefficients_polynomial() {
    let f = Formula::parse(
        "a*bs + a*bs*l + 3 + bs",
        &names(&["a"]),
        &names(&["l", "bs"]),
    )
    .unwrap();
    assert_eq!(f.variable_names(), ["bs", "l"]);
    assert_eq!(
        f.groups()[0],
        vec![
            Monomial {
                factor: 1,
                exponents: vec![1, 1]
            },
            Monomial {
                factor: 1,
                exponents: vec![1, 0]
            },
        ]
    );
    assert_eq!(f.constant().len(), 2);
    assert_eq!(f.constant()[1].eval(&[5.0, 7.0]), 3.0);
    assert_eq!(f.groups()[0][0].eval(&[5.0, 7.0]), 35.0);
}

/// The case table shared with the TypeScript canonicaliser (`test/formula.test.ts`): both sides
/// must give the same texts and the same errors, byte for byte.
#[test]
fn the_shared_case_table_is_reproduced() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/formulas.json");
    let table: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let list = |case: &serde_json::Value, key: &str| -> Vec<String> {
        let value = case.get(key).unwrap_or(&table[key]);
        serde_json::from_value(value.clone()).unwrap()
    };
    let cases = table["cases"].as_array().unwrap();
    assert!(cases.len() > 40);
    for case in cases {
        let text = case["formula"].as_str().unwrap();
        let got = Formula::parse(text, &list(case, "coefficients"), &list(case, "variables"))
            .map(|f| f.canonical());
        match (&got, case.get("canonical"), case.get("error")) {
            (Ok(c), Some(expected), None) => assert_eq!(c, expected, "{text:?}"),
            (Err(e), None, Some(expected)) => assert_eq!(&e.0, expected, "{text:?}"),
            _ => panic!("{text:?}: got {got:?}, table says {case}"),
        }
    }
}
