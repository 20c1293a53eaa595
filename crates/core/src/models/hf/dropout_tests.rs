//! Dropout where `transformers` puts it, scaled as it scales it: one family of sites at a time
//! (`scripts/fixtures/gen_hf_dropout.py`: hidden, attention probabilities, classification
//! head, at p = 0.3), the mean and standard deviation of each row's logit over 1,000 draws in
//! training mode against those `transformers` measured over 2,000 on the same weights and inputs.

use std::path::Path;

use serde_json::Value;
use tch::{Kind, Tensor};

use super::*;
use crate::config::tests_support::scratch_dir;
use crate::rng::Rng;

const ARCHITECTURES: [&str; 5] = ["bert", "roberta", "xlm-roberta", "distilbert", "electra"];
const COPIES: i64 = 250;
const ROUNDS: usize = 4;
/// Sampling errors allowed: both sides' estimates are each off by about one standard error.
const Z: f64 = 5.0;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/hf")
        .join(name)
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// The fixture model with `probabilities` merged into its config.json, in a directory of its own.
fn with_probabilities(name: &str, probabilities: &Value) -> std::path::PathBuf {
    let dir = scratch_dir();
    let mut config = read_json(&fixture(name).join("config.json"));
    for (key, p) in probabilities.as_object().unwrap() {
        config[key] = p.clone();
    }
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    std::fs::copy(
        fixture(name).join("model.safetensors"),
        dir.join("model.safetensors"),
    )
    .unwrap();
    dir
}

/// Each row's logit, `ROUNDS × COPIES` draws of it: `[draws, rows]`.
fn draws(model: &HfSequenceClassifier, input: &EncoderInput, rows: i64) -> Tensor {
    let _no_grad = tch::no_grad_guard();
    let rounds: Vec<Tensor> = (0..ROUNDS)
        .map(|_| {
            model
                .logits(input, true)
                .unwrap()
                .select(1, 0)
                .view([COPIES, rows])
        })
        .collect();
    Tensor::cat(&rounds, 0)
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

#[test]
fn each_family_of_dropout_sites_moves_the_logits_as_in_transformers() {
    tch::manual_seed(0);
    for name in ARCHITECTURES {
        let e: std::collections::BTreeMap<String, Tensor> =
            Tensor::read_safetensors(fixture(name).join("expected.safetensors"))
                .unwrap()
                .into_iter()
                .collect();
        let rows = e["input_ids"].size()[0];
        let repeat = |key: &str| e[key].repeat([COPIES, 1]);
        let input = EncoderInput {
            ids: repeat("input_ids"),
            type_ids: Some(repeat("token_type_ids")),
            mask: repeat("attention_mask"),
        };
        let reference = read_json(&fixture(name).join("dropout.json"));
        let theirs = reference["draws"].as_f64().unwrap();
        let ours = (ROUNDS as i64 * COPIES) as f64;
        for (family, want) in reference["families"].as_object().unwrap() {
            let dir = with_probabilities(name, &want["config"]);
            let model = HfSequenceClassifier::load(&dir, 1, &mut Rng::new(0)).unwrap();
            let got = draws(&model, &input, rows);
            let means = Vec::<f64>::try_from(got.mean_dim(0, false, Kind::Double)).unwrap();
            let stds =
                Vec::<f64>::try_from(got.to_kind(Kind::Double).std_dim(0, true, false)).unwrap();
            let (want_means, want_stds) = (floats(&want["mean"]), floats(&want["std"]));
            for row in 0..rows as usize {
                let s = want_stds[row];
                // Standard errors of the differences: each side's mean is off by about s/√n,
                // its standard deviation by about s/√(2n).
                let z_mean =
                    (means[row] - want_means[row]) / (s * (1.0 / ours + 1.0 / theirs).sqrt());
                let z_std = (stds[row] - s) / (s * (0.5 / ours + 0.5 / theirs).sqrt());
                assert!(
                    z_mean.abs() < Z && z_std.abs() < Z,
                    "{name}, {family} dropout, row {row}: mean {:.4} against {:.4} (z {z_mean:.1}), \
                     standard deviation {:.4} against {s:.4} (z {z_std:.1})",
                    means[row],
                    want_means[row],
                    stds[row],
                );
            }
        }
    }
}
