//! SigmoidOutput's probabilities and log-probabilities through each loss branch that reads the
//! output type: a linear scorer's logits, the losses and their gradients against PyTorch
//! (`tests/fixtures/output_types.json`, written by `scripts/fixtures/gen_output_types.py`).

use serde_json::Value;
use tch::Tensor;

use super::batchwise::{CrossEntropyLoss as BatchwiseCrossEntropy, SoftmaxCrossEntropy};
use super::{BatchwiseLoss, PairwiseLoss, PointwiseCrossEntropyLoss};
use crate::data::ScoreInput;
use crate::models::tests::{assert_close, matrix_f32, model_of};
use crate::models::{Model, OutputType};

fn floats(v: &Value) -> Vec<f32> {
    serde_json::from_value(v.clone()).unwrap()
}

fn sigmoid_linear(output: &str) -> Box<dyn Model> {
    model_of(&serde_json::json!({
        "__xpmtype__": "xpm_torch.models.SigmoidOutput",
        "model": {"__xpmtype__": "xpm_torch.models.Linear", "input_dim": 5},
        "output": output,
    }))
}

/// The fixture's weights, copied into the model's parameters (named as the bare Linear's).
fn set_weights(model: &dyn Model, fixture: &Value) {
    let params = model.named_parameters();
    let names: Vec<&str> = params.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["weight", "bias"]);
    tch::no_grad(|| {
        for p in &params {
            let values = Tensor::from_slice(&floats(&fixture[p.name.as_str()]));
            p.tensor
                .shallow_clone()
                .copy_(&values.view(p.tensor.size().as_slice()));
        }
    });
}

/// The mean loss the trainer would take from `loss`'s sum over these scores.
fn mean_loss(case: &Value, output: OutputType, scores: &Tensor, fixture: &Value) -> Tensor {
    let matrix = scores.view([2, 3]);
    let batchwise = |loss: &dyn BatchwiseLoss, relevances: &str| {
        let (sum, count) = loss
            .sum(&matrix, &matrix_f32(&fixture[relevances]))
            .unwrap();
        sum / count as f64
    };
    match case["loss"].as_str().unwrap() {
        "batch-bce" => batchwise(&BatchwiseCrossEntropy { weight: 1.0 }, "bce_targets"),
        "batch-infonce" => batchwise(
            &SoftmaxCrossEntropy {
                weight: 1.0,
                output,
            },
            "relevances",
        ),
        "pair-pointwise-cross-entropy" => {
            let loss = PointwiseCrossEntropyLoss {
                weight: 1.0,
                output,
            };
            loss.sum(&scores.narrow(0, 0, 3), &scores.narrow(0, 3, 3))
                .unwrap()
                / 3.0
        }
        other => panic!("unknown loss {other}"),
    }
}

#[test]
fn probability_outputs_reach_every_loss_branch_as_in_pytorch() {
    let fixture: Value = serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/output_types.json"
    )))
    .unwrap();
    let features = ScoreInput::Features(matrix_f32(&fixture["features"]));
    for case in fixture["cases"].as_array().unwrap() {
        let what = format!("{} {}", case["output"], case["loss"]);
        let model = sigmoid_linear(case["output"].as_str().unwrap());
        set_weights(model.as_ref(), &fixture);
        let output = model.output_type();
        assert_eq!(
            serde_json::to_value(output).unwrap(),
            case["output"],
            "{what}"
        );
        let scores = model.forward(&features).unwrap();
        assert_close(&scores, &case["scores"], &what);
        let loss = mean_loss(case, output, &scores, &fixture);
        let value = loss.double_value(&[]);
        let expected = case["value"].as_f64().unwrap();
        assert!(
            (value - expected).abs() < 1e-5,
            "{what}: {value} != {expected}"
        );
        loss.backward();
        let params = model.named_parameters();
        assert_close(
            &params[0].tensor.grad().flatten(0, -1),
            &case["grad_weight"],
            &what,
        );
        assert_close(&params[1].tensor.grad(), &case["grad_bias"], &what);
    }
}
