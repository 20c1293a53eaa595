//! Hugging Face encoders against `transformers` (fixtures from
//! `scripts/fixtures/gen_hf_tiny.py`): hidden states, mean and pooler outputs, classification
//! logits; loading with and without prefix, from shards, and refusing bad files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tch::{Kind, Tensor};

use super::*;
use crate::config::tests_support::scratch_dir;
use crate::rng::Rng;

const ARCHITECTURES: [&str; 5] = ["bert", "roberta", "xlm-roberta", "distilbert", "electra"];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hf")
        .join(name)
}

fn expected(name: &str) -> BTreeMap<String, Tensor> {
    Tensor::read_safetensors(fixture(name).join("expected.safetensors"))
        .unwrap()
        .into_iter()
        .collect()
}

fn input(e: &BTreeMap<String, Tensor>) -> EncoderInput {
    EncoderInput {
        ids: e["input_ids"].shallow_clone(),
        type_ids: Some(e["token_type_ids"].shallow_clone()),
        mask: e["attention_mask"].shallow_clone(),
    }
}

fn max_diff(a: &Tensor, b: &Tensor) -> f64 {
    assert_eq!(a.size(), b.size());
    a.f_sub(b).unwrap().abs().max().double_value(&[])
}

/// Hidden states compared on real tokens only (padding rows are meaningless).
fn hidden_diff(got: &Tensor, want: &Tensor, mask: &Tensor) -> f64 {
    let keep = mask.ne(0).unsqueeze(-1).expand_as(want);
    max_diff(&got.masked_select(&keep), &want.masked_select(&keep))
}

fn tensors_of(name: &str) -> Vec<(String, Tensor)> {
    Tensor::read_safetensors(fixture(name).join("model.safetensors")).unwrap()
}

#[test]
fn hidden_states_and_mean_embeddings_equal_transformers() {
    for name in ARCHITECTURES {
        let e = expected(name);
        let model = HfEncoderModel::load(&fixture(name)).unwrap();
        let _guard = tch::no_grad_guard();
        let hidden = model.hidden(&input(&e), false).unwrap();
        let d = hidden_diff(&hidden, &e["hidden"], &e["attention_mask"]);
        assert!(d < 1e-5, "{name}: hidden states differ by {d}");
        let mean = model.mean(&input(&e), false).unwrap();
        let d = max_diff(&mean, &e["mean"]);
        assert!(d < 1e-5, "{name}: mean embeddings differ by {d}");
    }
}

#[test]
fn bert_pooler_output_equals_transformers() {
    let e = expected("bert");
    let model = HfEncoderModel::load(&fixture("bert")).unwrap();
    let _guard = tch::no_grad_guard();
    let pooled = model.pooler_output(&input(&e)).unwrap().unwrap();
    let d = max_diff(&pooled, &e["pooler"]);
    assert!(d < 1e-5, "pooler output differs by {d}");
}

#[test]
fn classification_logits_equal_transformers_with_the_files_head() {
    for name in ARCHITECTURES {
        let e = expected(name);
        let model = HfSequenceClassifier::load(&fixture(name), 1, &mut Rng::new(0)).unwrap();
        assert!(model.head_loaded(), "{name}: the head was not read");
        let _guard = tch::no_grad_guard();
        let logits = model.logits(&input(&e), false).unwrap();
        let d = max_diff(&logits, &e["logits"]);
        assert!(d < 1e-5, "{name}: logits differ by {d}");
    }
}

#[test]
fn parameters_carry_the_names_transformers_saved() {
    for name in ARCHITECTURES {
        let model = HfSequenceClassifier::load(&fixture(name), 1, &mut Rng::new(0)).unwrap();
        let mut ours: Vec<String> = model
            .named_parameters()
            .into_iter()
            .map(|p| p.name)
            .collect();
        let mut saved: Vec<String> = tensors_of(name).into_iter().map(|(n, _)| n).collect();
        ours.sort();
        saved.sort();
        assert_eq!(ours, saved, "{name}");
    }
}

#[test]
fn unprefixed_keys_and_extra_buffers_load_the_same_encoder() {
    let e = expected("roberta");
    let settings = EncoderSettings::read(&fixture("roberta")).unwrap();
    let mut stripped: Vec<(String, Tensor)> = tensors_of("roberta")
        .into_iter()
        .map(|(n, t)| (n.strip_prefix("roberta.").unwrap_or(&n).to_string(), t))
        .collect();
    stripped.push((
        "embeddings.position_ids".into(),
        Tensor::arange(66, (Kind::Int64, tch::Device::Cpu)).unsqueeze(0),
    ));
    let weights = HfWeights::from_tensors("memory", "roberta", stripped);
    let model = HfEncoderModel::from_weights(&settings, &weights).unwrap();
    let _guard = tch::no_grad_guard();
    let hidden = model.hidden(&input(&e), false).unwrap();
    assert!(hidden_diff(&hidden, &e["hidden"], &e["attention_mask"]) < 1e-5);
}

#[test]
fn sharded_weights_load_through_their_index() {
    let dir = scratch_dir();
    std::fs::copy(fixture("bert").join("config.json"), dir.join("config.json")).unwrap();
    let tensors = tensors_of("bert");
    let (first, second) = tensors.split_at(tensors.len() / 2);
    let mut map = serde_json::Map::new();
    for (part, file) in [
        (first, "model-1.safetensors"),
        (second, "model-2.safetensors"),
    ] {
        let named: Vec<(&str, &Tensor)> = part.iter().map(|(n, t)| (n.as_str(), t)).collect();
        Tensor::write_safetensors(&named, dir.join(file)).unwrap();
        for (n, _) in part {
            map.insert(n.clone(), file.into());
        }
    }
    let index = serde_json::json!({ "metadata": {}, "weight_map": map });
    std::fs::write(dir.join("model.safetensors.index.json"), index.to_string()).unwrap();
    let e = expected("bert");
    let model = HfSequenceClassifier::load(&dir, 1, &mut Rng::new(0)).unwrap();
    let _guard = tch::no_grad_guard();
    let d = max_diff(&model.logits(&input(&e), false).unwrap(), &e["logits"]);
    assert!(d < 1e-5, "logits from shards differ by {d}");

    std::fs::remove_file(dir.join("model-2.safetensors")).unwrap();
    let err = HfEncoderModel::load(&dir).unwrap_err().to_string();
    assert!(err.contains("model-2.safetensors"), "{err}");
}

#[test]
fn a_missing_or_misshaped_weight_is_refused_by_name() {
    let settings = EncoderSettings::read(&fixture("electra")).unwrap();
    let without: Vec<(String, Tensor)> = tensors_of("electra")
        .into_iter()
        .filter(|(n, _)| n != "electra.encoder.layer.1.output.dense.bias")
        .collect();
    let weights = HfWeights::from_tensors("electra-file", "electra", without);
    let err = HfEncoderModel::from_weights(&settings, &weights)
        .unwrap_err()
        .to_string();
    assert!(err.contains("electra-file"), "{err}");
    assert!(err.contains("encoder.layer.1.output.dense.bias"), "{err}");

    let mut wider = settings.clone();
    wider.intermediate_size += 1;
    let weights = HfWeights::from_tensors("electra-file", "electra", tensors_of("electra"));
    let err = HfEncoderModel::from_weights(&wider, &weights)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"electra.encoder.layer.0.intermediate.dense.weight\" has shape [37, 32]"),
        "{err}"
    );
}

#[test]
fn a_head_for_another_label_count_is_replaced_by_a_seeded_new_one() {
    let e = expected("distilbert");
    let draw =
        |seed| HfSequenceClassifier::load(&fixture("distilbert"), 3, &mut Rng::new(seed)).unwrap();
    let (a, b, c) = (draw(7), draw(7), draw(8));
    assert!(!a.head_loaded());
    let _guard = tch::no_grad_guard();
    let logits = |m: &HfSequenceClassifier| m.logits(&input(&e), false).unwrap();
    assert_eq!(logits(&a).size(), vec![e["input_ids"].size()[0], 3]);
    assert_eq!(max_diff(&logits(&a), &logits(&b)), 0.0);
    assert!(max_diff(&logits(&a), &logits(&c)) > 1e-4);
}

#[test]
fn a_base_bert_file_gets_a_new_pooler_and_head() {
    let settings = EncoderSettings::read(&fixture("bert")).unwrap();
    let base: Vec<(String, Tensor)> = tensors_of("bert")
        .into_iter()
        .filter(|(n, _)| n.starts_with("bert.") && !n.starts_with("bert.pooler"))
        .collect();
    let weights = HfWeights::from_tensors("memory", "bert", base);
    let model =
        HfSequenceClassifier::from_weights(&settings, &weights, 1, &mut Rng::new(0)).unwrap();
    assert!(!model.head_loaded());
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert!(names.contains(&"bert.pooler.dense.weight".to_string()));
    assert!(names.contains(&"classifier.weight".to_string()));
}

#[test]
fn dropout_acts_only_in_training() {
    let e = expected("bert");
    let model = HfEncoderModel::load(&fixture("bert")).unwrap();
    let _guard = tch::no_grad_guard();
    tch::manual_seed(0);
    let train = model.hidden(&input(&e), true).unwrap();
    let eval = model.hidden(&input(&e), false).unwrap();
    assert!(hidden_diff(&train, &eval, &e["attention_mask"]) > 1e-3);
}

#[test]
fn a_directory_without_config_names_the_file() {
    let dir = scratch_dir();
    let err = HfEncoderModel::load(&dir).unwrap_err().to_string();
    assert!(err.contains("config.json"), "{err}");
    std::fs::copy(fixture("bert").join("config.json"), dir.join("config.json")).unwrap();
    let err = HfEncoderModel::load(&dir).unwrap_err().to_string();
    assert!(err.contains("no model.safetensors"), "{err}");
}
