//! The generated configuration types: the conversions between positions, the kinds of the
//! stand-ins, and the copy of the generated module kept for reading.

use serde_json::json;

use super::*;

/// The copy of the generated module kept in the tree for reading, and the module the build
/// compiles.
const READABLE_COPY: &str = include_str!("generated.rs");
const COMPILED: &str = include_str!(concat!(env!("OUT_DIR"), "/config_types.rs"));

fn synthetic() -> AnyLtrDataset {
    serde_json::from_value(json!({
        "__xpmtype__": "xpm_torch.data.SyntheticLtrDataset", "signal_seed": 11, "seed": 1,
        "num_queries": 5, "docs_per_query": 4, "num_features": 3, "noise": 0.2
    }))
    .unwrap()
}

fn text_pairs() -> AnySampleIterator {
    serde_json::from_value(json!({
        "__xpmtype__": "xpm_torch.data.TextPairFile", "id": "p", "path": "/none"
    }))
    .unwrap()
}

#[test]
fn the_readable_copy_of_the_generated_types_is_current() {
    let stale_from = READABLE_COPY
        .lines()
        .zip(COMPILED.lines())
        .position(|(kept, built)| kept != built)
        .map_or(
            READABLE_COPY.lines().count().min(COMPILED.lines().count()),
            |i| i,
        )
        + 1;
    assert!(
        READABLE_COPY == COMPILED,
        "crates/core/src/config/generated.rs differs from what the generator writes for the \
         current schema.json (from line {stale_from}); refresh it with\n  cp {}/config_types.rs \
         crates/core/src/config/generated.rs",
        env!("OUT_DIR")
    );
}

#[test]
fn what_fits_a_narrower_position_fits_a_wider_one_and_converts_back() {
    let ranked = AnyRankedDataset::from(synthetic());
    assert!(matches!(ranked, AnyRankedDataset::SyntheticLtrDataset(_)));
    assert_eq!(AnyLtrDataset::try_from(ranked), Ok(synthetic()));
    let any = AnySampleIterator::from(AnyRankedDataset::from(synthetic()));
    assert_eq!(AnySampleIterator::from(synthetic()), any);
    assert_eq!(AnyLtrDataset::try_from(any.clone()), Ok(synthetic()));
    assert_eq!(
        AnyRankedDataset::try_from(any),
        Ok(AnyRankedDataset::from(synthetic()))
    );
}

#[test]
fn a_stand_in_keeps_its_key_and_kind_across_positions() {
    let stand_in: JsObjectConfig = serde_json::from_value(json!({
        "key": "1:t.Data", "class": "t.Data", "kind": "ltr", "params": {}
    }))
    .unwrap();
    let any = AnySampleIterator::from(AnyLtrDataset::JsObject(stand_in.clone()));
    assert_eq!(any, AnySampleIterator::JsObject(stand_in.clone()));
    assert_eq!(
        AnyLtrDataset::try_from(any),
        Ok(AnyLtrDataset::JsObject(stand_in))
    );
}

#[test]
fn a_class_the_narrower_position_does_not_accept_is_given_back_as_it_is() {
    assert_eq!(AnyLtrDataset::try_from(text_pairs()), Err(text_pairs()));
    assert_eq!(AnyRankedDataset::try_from(text_pairs()), Err(text_pairs()));
    assert_eq!(AnyTokenTriplets::try_from(text_pairs()), Err(text_pairs()));
}

#[test]
fn the_kinds_a_position_declares_read_as_typescript_writes_them() {
    for kind in [JsTrainingHookKind::Step, JsTrainingHookKind::Initialization] {
        assert_eq!(kind.as_str().parse(), Ok(kind));
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(kind.as_str()));
    }
    let kinds: Vec<&str> = [
        JsSamplerKind::Pairwise,
        JsSamplerKind::Pointwise,
        JsSamplerKind::Triplets,
    ]
    .iter()
    .map(JsSamplerKind::as_str)
    .collect();
    assert_eq!(kinds, ["pairwise", "pointwise", "triplets"]);
    assert_eq!(
        "slate".parse::<JsSamplerKind>(),
        Err(r#"must be one of "pairwise", "pointwise", "triplets", got "slate""#.to_string())
    );
}
