//! Hugging Face encoders against `transformers` (fixtures from
//! `scripts/fixtures/gen_hf_tiny.py`, `gen_hf_grads.py`): hidden states, mean and pooler
//! outputs, classification logits, parameter gradients; loading with and without prefix, from shards, and refusing bad files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tch::{Kind, Tensor};

use super::*;
use crate::config::tests_support::scratch_dir;
use crate::models::Model;
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
        assert!(model.new_weights().is_empty(), "{name}");
        let _guard = tch::no_grad_guard();
        let logits = model.logits(&input(&e), false).unwrap();
        let d = max_diff(&logits, &e["logits"]);
        assert!(d < 1e-5, "{name}: logits differ by {d}");
    }
}

/// Training follows the gradients: every parameter's, for a weighted sum of the logits
/// (`scripts/fixtures/gen_hf_grads.py`), equals the one `transformers` computes.
#[test]
fn parameter_gradients_equal_transformers() {
    for name in ARCHITECTURES {
        let e = expected(name);
        let want: BTreeMap<String, Tensor> =
            Tensor::read_safetensors(fixture(name).join("grads.safetensors"))
                .unwrap()
                .into_iter()
                .collect();
        let model = HfSequenceClassifier::load(&fixture(name), 1, &mut Rng::new(0)).unwrap();
        let logits = model.logits(&input(&e), false).unwrap().squeeze_dim(-1);
        let rows = logits.size()[0];
        let weights = Tensor::linspace(-1.0, 1.5, rows, (Kind::Float, logits.device()));
        (logits * weights).sum(Kind::Float).backward();
        let params = model.named_parameters();
        assert_eq!(params.len(), want.len(), "{name}: parameter count");
        for p in params {
            let grad = p.tensor.grad();
            assert!(grad.defined(), "{name}: {} has no gradient", p.name);
            let d = max_diff(&grad, &want[&p.name]);
            let scale = want[&p.name].abs().max().double_value(&[]).max(1.0);
            assert!(
                d < 1e-4 * scale,
                "{name}: the gradient of {} differs by {d}",
                p.name
            );
        }
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
    let names =
        ["pre_classifier", "classifier"].map(|l| [format!("{l}.weight"), format!("{l}.bias")]);
    assert_eq!(a.new_weights(), names.concat());
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
    // Said as transformers says which weights it "newly initialized".
    assert_eq!(
        model.new_weights(),
        [
            "classifier.weight",
            "classifier.bias",
            "bert.pooler.dense.weight",
            "bert.pooler.dense.bias"
        ]
    );
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

// ---- training through the learner ----

fn encoder_json(name: &str) -> String {
    format!(
        r#"{{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"tiny-{name}","path":"{}"}}"#,
        fixture(name).display()
    )
}

/// A pairwise batch's positives and negatives, padded to one width and scored in one forward,
/// score as they do apart (padding, RoBERTa's positions after the padding token included).
#[test]
fn positives_and_negatives_score_together_as_apart() {
    let queries = ["what about paris", "rivers"];
    let positives = [
        "paris is the capital",
        "a river is long and wide and runs to the sea",
    ];
    let negatives = ["tokyo", "mountains"];
    for name in ARCHITECTURES {
        for model_json in [
            format!(
                r#"{{"__xpmtype__":"xpm_torch.models.CrossEncoder","encoder":{},"max_length":24}}"#,
                encoder_json(name)
            ),
            format!(
                r#"{{"__xpmtype__":"xpm_torch.models.BiEncoder","encoder":{},"pooling":"mean","normalize":false,"similarity":"dot","max_length":24}}"#,
                encoder_json(name)
            ),
        ] {
            let config: crate::config::AnyModule = serde_json::from_str(&model_json).unwrap();
            let mut model = crate::models::build(&config, &mut Rng::new(1), "model").unwrap();
            model.set_training(false);
            let encoding = text_encoding(&config, "model").unwrap().unwrap();
            let (pos, _) = encoding.encode(&queries, &positives).unwrap();
            let (neg, _) = encoding.encode(&queries, &negatives).unwrap();
            let _guard = tch::no_grad_guard();
            let apart = Tensor::cat(
                &[model.forward(&pos).unwrap(), model.forward(&neg).unwrap()],
                0,
            );
            let together = model.forward(&pos.concat(&neg).unwrap()).unwrap();
            let d = max_diff(&together, &apart);
            assert!(d < 1e-5, "{name} {model_json}: {d}");
        }
    }
}

#[test]
fn text_models_refuse_other_inputs_and_missing_directories() {
    let model = CrossEncoder::new(
        &serde_json::from_str(&format!(
            r#"{{"encoder":{},"max_length":16}}"#,
            encoder_json("bert")
        ))
        .unwrap(),
        &mut Rng::new(0),
        "learner.model",
    )
    .unwrap();
    assert!(model.head_loaded());
    assert!(Model::new_weights(&model).is_empty());
    let err = model
        .forward(&crate::data::ScoreInput::Features(Tensor::zeros(
            [1, 3],
            (Kind::Float, tch::Device::Cpu),
        )))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("CrossEncoder scores texts encoded by its tokenizer"),
        "{err}"
    );
    let err = BiEncoder::new(
        &serde_json::from_str(
            r#"{"encoder":{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"x","path":"no/such/dir"},
                "pooling":"cls","normalize":false,"similarity":"cosine","max_length":16}"#,
        )
        .unwrap(),
        "learner.model",
    )
    .unwrap_err()
    .to_string();
    assert!(err.starts_with("learner.model.encoder.path:"), "{err}");
}

/// A `max_length` beyond an encoder's position table is refused when the model is built (as a
/// run builds it, before any step), at its config path, with the table's size from
/// config.json; at the bound, the longest pairs and texts, cut to it, are scored.
#[test]
fn max_length_beyond_the_position_table_is_refused_when_the_model_opens() {
    use crate::config::AnyModule;
    // Every fixture has 64 positions for tokens: RoBERTa's 66 count from the padding id 1 + 1.
    let long = "many more things of detail and ".repeat(30);
    let bi = r#","pooling":"mean","normalize":false,"similarity":"dot""#;
    for name in ARCHITECTURES {
        let config_json = fixture(name).join("config.json").display().to_string();
        for (kind, extra) in [("CrossEncoder", ""), ("BiEncoder", bi)] {
            let json = |max: i64| {
                format!(
                    r#"{{"__xpmtype__":"xpm_torch.models.{kind}","encoder":{}{extra},"max_length":{max}}}"#,
                    encoder_json(name)
                )
            };
            let config: AnyModule = serde_json::from_str(&json(65)).unwrap();
            let Err(err) = crate::models::build(&config, &mut Rng::new(1), "learner.model") else {
                panic!("{name} {kind}: max_length 65 accepted");
            };
            assert_eq!(err.code(), "ERR_CONFIG", "{err}");
            let message = err.to_string();
            assert!(
                message.starts_with("learner.model.max_length: 65 ")
                    && message.contains("max_position_embeddings")
                    && message.contains(&config_json)
                    && message.contains("at most 64"),
                "{name} {kind}: {message}"
            );

            let config: AnyModule = serde_json::from_str(&json(64)).unwrap();
            let mut model = crate::models::build(&config, &mut Rng::new(1), "model").unwrap();
            model.set_training(false);
            let encoding = text_encoding(&config, "model").unwrap().unwrap();
            let (input, cut) = encoding.encode(&[&long], &[&long]).unwrap();
            assert!(cut.cut > 0, "{name} {kind}: {cut:?}");
            let widths: Vec<i64> = match input.encoded("test").unwrap() {
                crate::data::EncodedTexts::Pairs(rows) => vec![rows.ids.size()[1]],
                crate::data::EncodedTexts::Separate { query, document } => {
                    vec![query.ids.size()[1], document.ids.size()[1]]
                }
            };
            assert!(widths.iter().all(|&w| w == 64), "{name} {kind}: {widths:?}");
            let _guard = tch::no_grad_guard();
            let scores = model.forward(&input).unwrap();
            assert!(
                scores.isfinite().all().int64_value(&[]) == 1,
                "{name} {kind}"
            );
        }
    }

    // A separate query encoder with a shorter table: its config.json is named.
    let short = scratch_dir();
    let text = std::fs::read_to_string(fixture("bert").join("config.json")).unwrap();
    let text = text.replace(
        "\"max_position_embeddings\": 64",
        "\"max_position_embeddings\": 32",
    );
    std::fs::write(short.join("config.json"), text).unwrap();
    let json = format!(
        r#"{{"__xpmtype__":"xpm_torch.models.BiEncoder","encoder":{},"query_encoder":{{"__xpmtype__":"xpm_torch.models.HFEncoder","id":"short","path":"{}"}}{bi},"max_length":48}}"#,
        encoder_json("bert"),
        short.display()
    );
    let config: AnyModule = serde_json::from_str(&json).unwrap();
    let Err(err) = crate::models::build(&config, &mut Rng::new(1), "learner.model") else {
        panic!("max_length 48 accepted with a query encoder of 32 positions");
    };
    let err = err.to_string();
    assert!(
        err.starts_with("learner.model.max_length: 48 ")
            && err.contains(&short.join("config.json").display().to_string())
            && err.contains("at most 32"),
        "{err}"
    );
}

/// A batch of short and long texts runs in length groups (#39): each row's score, and the
/// gradient of a loss over the whole batch, are those of the rows scored one at a time, with
/// no padding at all.
#[test]
fn a_batch_in_length_groups_scores_and_trains_as_its_rows_one_at_a_time() {
    let long = "the river runs through the old city and on to the sea ".repeat(6);
    let queries: Vec<String> = (0..12).map(|i| format!("question {i}")).collect();
    let documents: Vec<String> = (0..12)
        .map(|i| {
            if i % 3 == 0 {
                format!("{long}{i}")
            } else {
                format!("short {i}")
            }
        })
        .collect();
    let (queries, documents) = (
        queries.iter().map(String::as_str).collect::<Vec<_>>(),
        documents.iter().map(String::as_str).collect::<Vec<_>>(),
    );
    let weights: Vec<f32> = (0..12).map(|i| 1.0 + i as f32 / 4.0).collect();
    for name in ARCHITECTURES {
        for model_json in [
            format!(
                r#"{{"__xpmtype__":"xpm_torch.models.CrossEncoder","encoder":{},"max_length":64}}"#,
                encoder_json(name)
            ),
            format!(
                r#"{{"__xpmtype__":"xpm_torch.models.BiEncoder","encoder":{},"pooling":"mean","normalize":true,"similarity":"dot","max_length":64}}"#,
                encoder_json(name)
            ),
        ] {
            let config: crate::config::AnyModule = serde_json::from_str(&model_json).unwrap();
            let mut model = crate::models::build(&config, &mut Rng::new(1), "model").unwrap();
            model.set_training(false);
            let encoding = text_encoding(&config, "model").unwrap().unwrap();
            let params = model.named_parameters();
            // The weighted sum of the scores, and the gradients of every parameter.
            let run = |rows: &[usize]| -> (Vec<f32>, Vec<Tensor>) {
                let q: Vec<&str> = rows.iter().map(|&r| queries[r]).collect();
                let d: Vec<&str> = rows.iter().map(|&r| documents[r]).collect();
                let w: Vec<f32> = rows.iter().map(|&r| weights[r]).collect();
                let (input, _) = encoding.encode(&q, &d).unwrap();
                for p in &params {
                    let mut grad = p.tensor.grad();
                    if grad.defined() {
                        let _ = grad.zero_();
                    }
                }
                let scores = model.forward(&input).unwrap();
                (scores.shallow_clone() * Tensor::from_slice(&w))
                    .sum(Kind::Float)
                    .backward();
                // Parameters the score does not reach (a BiEncoder's pooler) have none.
                let grads = params
                    .iter()
                    .map(|p| {
                        let g = p.tensor.grad();
                        if g.defined() {
                            g.copy()
                        } else {
                            p.tensor.zeros_like()
                        }
                    })
                    .collect();
                (Vec::<f32>::try_from(scores.detach()).unwrap(), grads)
            };
            let all: Vec<usize> = (0..12).collect();
            let (scores, grads) = run(&all);
            let mut alone_grads: Option<Vec<Tensor>> = None;
            for &r in &all {
                let (score, g) = run(&[r]);
                assert!(
                    (score[0] - scores[r]).abs() < 1e-5,
                    "{name} {model_json} row {r}"
                );
                alone_grads = Some(match alone_grads {
                    None => g,
                    Some(sum) => sum.iter().zip(&g).map(|(a, b)| a + b).collect(),
                });
            }
            for ((p, a), b) in params.iter().zip(&grads).zip(alone_grads.unwrap()) {
                // Relative to the gradient's scale: sums of twelve rows' products round apart.
                let scale = a.abs().max().double_value(&[]).max(1.0);
                let d = max_diff(a, &b) / scale;
                assert!(d < 1e-5, "{name} {model_json} {}: {d}", p.name);
            }
        }
    }
}
