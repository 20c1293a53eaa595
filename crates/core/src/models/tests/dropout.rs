//! Dropout draws from the run's seeded generators: on while training, off while evaluating,
//! and the attention written out for it computes what the fused kernel does. That whole runs
//! with dropout are reproducible and resume exactly is tested in `tests/models/dropout.rs`.

use std::rc::Rc;

use tch::{Device, Kind, Tensor};

use super::*;
use crate::runtime::RunGenerators;

const DROPOUT_MLP: &str = r#"{"__xpmtype__":"xpm_torch.models.MLP","input_dim":8,"hidden_dims":[16,16],"activation":"relu","dropout":0.3,"layer_norm":false}"#;

#[test]
fn dropout_is_on_while_training_and_off_while_evaluating() {
    let config: AnyModule = serde_json::from_str(DROPOUT_MLP).unwrap();
    let mut model = build(&config, &mut Rng::new(1), "m").unwrap();
    let x = ScoreInput::Features(Tensor::ones([6, 8], (Kind::Float, Device::Cpu)));
    let generators = Rc::new(RunGenerators::new(1, 0, Device::Cpu, false).unwrap());
    let first = {
        let _active = generators.activate();
        let a = model.forward(&x).unwrap();
        let b = model.forward(&x).unwrap();
        assert!(!a.equal(&b), "two draws, two masks");
        a
    };
    // The same seed again gives the first mask again.
    let again = Rc::new(RunGenerators::new(1, 0, Device::Cpu, false).unwrap());
    let _active = again.activate();
    assert!(model.forward(&x).unwrap().equal(&first));
    model.set_training(false);
    assert!(model
        .forward(&x)
        .unwrap()
        .equal(&model.forward(&x).unwrap()));
}

#[test]
fn the_cross_encoders_attention_with_dropout_computes_what_fused_attention_does() {
    // With a dropout too small to drop anything, the attention written out (taken whenever
    // dropout is on) gives the fused kernel's scores.
    let text = read_json("transformer.json");
    let input = case_input(&text);
    let scores = |dropout: &str| {
        let mut config = text["config"].clone();
        config["dropout"] = serde_json::from_str(dropout).unwrap();
        let model = model_of(&config);
        load_weights(model.as_ref(), &fixture("transformer.safetensors")).unwrap();
        model.forward(&input).unwrap()
    };
    let generators = Rc::new(RunGenerators::new(1, 0, Device::Cpu, false).unwrap());
    let _active = generators.activate();
    let fused = scores("0.0");
    let written_out = scores("1e-12");
    let diff = (fused - written_out).abs().max().double_value(&[]);
    assert!(diff < 1e-5, "{diff}");
}
