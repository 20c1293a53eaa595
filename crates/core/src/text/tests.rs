//! Parity with the Python `tokenizers` (fixtures from `scripts/fixtures/gen_hf_tiny.py`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

const ARCHITECTURES: [&str; 5] = ["bert", "roberta", "xlm-roberta", "distilbert", "electra"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hf")
        .join(name)
}

fn cases(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name).join("tokenization.json")).unwrap())
        .unwrap()
}

fn flat(v: &Value) -> Vec<i64> {
    let rows: Vec<Vec<i64>> = serde_json::from_value(v.clone()).unwrap();
    rows.concat()
}

#[test]
fn encodings_equal_the_python_tokenizers() {
    for name in ARCHITECTURES {
        let fixture_cases = cases(name);
        for case in fixture_cases["cases"].as_array().unwrap() {
            let max_length = case["max_length"].as_u64().unwrap() as usize;
            let tokenizer = TextTokenizer::from_dir(&fixture(name), max_length).unwrap();
            let inputs: Vec<TextInput> = case["inputs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| match i {
                    Value::String(s) => TextInput::Single(s),
                    pair => TextInput::Pair(pair[0].as_str().unwrap(), pair[1].as_str().unwrap()),
                })
                .collect();
            let batch = tokenizer.encode_batch(&inputs).unwrap();
            let what = format!("{name}, max_length {max_length}");
            assert_eq!(batch.ids, flat(&case["ids"]), "{what}: ids");
            assert_eq!(batch.type_ids, flat(&case["type_ids"]), "{what}: type ids");
            assert_eq!(batch.mask, flat(&case["attention_mask"]), "{what}: mask");
            assert_eq!(batch.rows, inputs.len(), "{what}");
            assert_eq!(batch.rows * batch.length, batch.ids.len(), "{what}");
            assert_eq!(
                batch.truncated as u64,
                case["truncated"].as_u64().unwrap(),
                "{what}: truncated records"
            );
            assert_eq!(
                tokenizer.pad_id() as u64,
                fixture_cases["pad_id"].as_u64().unwrap()
            );
        }
    }
}

#[test]
fn the_files_fixed_padding_is_replaced_by_batch_padding() {
    // The fixture's tokenizer.json pads everything to 48, as all-MiniLM-L6-v2's pads to 128.
    let raw: Value =
        serde_json::from_slice(&std::fs::read(fixture("bert").join("tokenizer.json")).unwrap())
            .unwrap();
    assert!(raw["padding"]["strategy"]["Fixed"].is_number());
    let tokenizer = TextTokenizer::from_dir(&fixture("bert"), 64).unwrap();
    let batch = tokenizer
        .encode_batch(&[TextInput::Single("paris"), TextInput::Single("the capital")])
        .unwrap();
    assert_eq!(batch.length, 4);
    assert_eq!(batch.mask, vec![1, 1, 1, 0, 1, 1, 1, 1]);
}

#[test]
fn a_missing_tokenizer_file_is_named() {
    let err = TextTokenizer::from_dir(Path::new("no/such/model"), 32)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no/such/model/tokenizer.json"), "{err}");
    assert!(err.contains("missing"), "{err}");
}

#[test]
fn a_max_length_without_room_for_text_is_refused() {
    let err = TextTokenizer::from_dir(&fixture("roberta"), 4)
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_length 4"), "{err}");
}
