//! The listeners of a run: validations (ranking metrics, a validation loss) and listeners
//! written in TypeScript.

use std::path::PathBuf;

use super::data::{evaluation_pairs, ranked_data, text_encoding, DataSources, RankedData};
use super::trainer::loss_set;
use crate::config::{
    AnyLearnerListener, RankingValidationListenerConfig, TrainerValidationLossConfig,
};
use crate::data::{LtrDataset, RecordKind, TextEncoding};
use crate::learner::listeners::best::ValidationSchedule;
use crate::learner::listeners::{
    ranking_bests, JsListener, Listener, RankMetric, RankingInput, RankingValidation,
    ValidationListener, ValidationLoss,
};
use crate::learner::trainers::{memory_probe, EvaluationBatching};
use crate::models::OutputType;
use crate::Result;

/// The listener `config` describes, the `i`-th of the learner, for a model whose scores are
/// `output`.
pub(super) fn listener(
    config: &AnyLearnerListener,
    i: usize,
    output: OutputType,
    device: tch::Device,
    sources: DataSources,
) -> Result<Box<dyn Listener>> {
    let path = format!("learner.listeners[{i}]");
    Ok(match config {
        AnyLearnerListener::RankingValidationListener(c) => {
            Box::new(ranking_listener(c, &path, sources)?)
        }
        AnyLearnerListener::TrainerValidationLoss(c) => {
            Box::new(loss_listener(c, &path, output, device, sources)?)
        }
        AnyLearnerListener::JsObject(c) => Box::new(JsListener {
            key: c.key.clone(),
            id: c.param("id", &path)?,
            last_output: serde_json::Value::Null,
        }),
    })
}

fn validation_schedule(
    warmup: i64,
    validation_interval: u64,
    early_stop: u64,
    info: &Option<String>,
) -> ValidationSchedule {
    ValidationSchedule {
        warmup,
        validation_interval,
        early_stop,
        info: info.as_ref().map(PathBuf::from),
    }
}

/// What a ranking validation scores at `path`: queries of features, or texts to encode as
/// `text` says.
fn ranking_input(
    data: RankedData,
    text: Option<&TextEncoding>,
    path: &str,
) -> Result<(LtrDataset, RankingInput)> {
    Ok(match data {
        RankedData::Texts(set) => {
            let encoding = text_encoding(text, "TextRerankingDataset", path)?;
            (set.data.clone(), RankingInput::texts(set, encoding))
        }
        RankedData::Features(data) => {
            let input = RankingInput::Features(data.features_tensor()?);
            (data, input)
        }
    })
}

fn ranking_listener(
    c: &RankingValidationListenerConfig,
    path: &str,
    sources: DataSources,
) -> Result<ValidationListener<RankingValidation>> {
    let data_path = format!("{path}.dataset");
    let data = ranked_data(&c.dataset, sources.js, &data_path)?;
    let (data, input) = ranking_input(data, sources.text, &data_path)?;
    let metrics = c
        .metrics
        .keys()
        .map(|name| {
            let metric = RankMetric::parse(name, &format!("{path}.metrics"))?;
            Ok((name.clone(), metric))
        })
        .collect::<Result<Vec<_>>>()?;
    let bestpath = c.bestpath.as_ref().map(PathBuf::from);
    Ok(ValidationListener {
        id: c.id.clone(),
        validator: RankingValidation {
            input,
            data,
            metrics,
        },
        bests: ranking_bests(&c.metrics, bestpath.as_ref()),
        schedule: validation_schedule(c.warmup, c.validation_interval, c.early_stop, &c.info),
    })
}

fn loss_listener(
    c: &TrainerValidationLossConfig,
    path: &str,
    output: OutputType,
    device: tch::Device,
    sources: DataSources,
) -> Result<ValidationListener<ValidationLoss>> {
    let data = evaluation_pairs(&c.data, sources, &format!("{path}.data"))?;
    let trainer_path = format!("{path}.trainer");
    let validator = ValidationLoss {
        data,
        losses: loss_set(
            &c.trainer.hooks,
            output,
            RecordKind::Pairwise,
            &trainer_path,
        )?,
        batching: EvaluationBatching::new(
            &c.batcher,
            c.batch_size as usize,
            memory_probe(device)?,
            &format!("{path}.batcher"),
        )?,
    };
    let model = c
        .bestpath
        .as_ref()
        .map(|p| PathBuf::from(p).join("model.safetensors"));
    let schedule = validation_schedule(c.warmup, c.validation_interval, c.early_stop, &c.info);
    Ok(validator.listener(c.id.clone(), model, schedule))
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::config::tests_support::demo_config_json;

    const SOURCES: DataSources = DataSources {
        js: &None,
        text: None,
    };

    fn built(config: Value) -> Result<Box<dyn Listener>> {
        let config: AnyLearnerListener = serde_json::from_value(config).unwrap();
        listener(&config, 2, OutputType::Real, tch::Device::Cpu, SOURCES)
    }

    fn err(config: Value) -> String {
        built(config).err().unwrap().to_string()
    }

    /// The demo's listener: a ranking validation over a synthetic dataset, as JSON.
    fn ranking() -> Value {
        let demo: Value = serde_json::from_str(&demo_config_json()).unwrap();
        demo["listeners"][0].clone()
    }

    /// A validation loss of the demo's trainer over `data`.
    fn validation_loss(data: Value) -> Value {
        let demo: Value = serde_json::from_str(&demo_config_json()).unwrap();
        json!({
            "__xpmtype__": "xpm_torch.trainers.validation.TrainerValidationLoss", "id": "loss",
            "data": data, "trainer": demo["trainer"], "batcher": demo["trainer"]["batcher"],
            "batch_size": 16
        })
    }

    #[test]
    fn a_listener_written_in_typescript_is_known_by_its_id() {
        let js = |params: Value| {
            json!({
                "__xpmtype__": crate::config::JS_OBJECT, "key": "3:t.Vote", "class": "t.Vote",
                "kind": "listener", "params": params
            })
        };
        assert_eq!(built(js(json!({ "id": "vote" }))).unwrap().id(), "vote");
        let missing = err(js(json!({})));
        assert!(missing.starts_with("learner.listeners[2].id:"), "{missing}");
    }

    #[test]
    fn a_ranking_validation_reads_its_metrics() {
        assert_eq!(built(ranking()).unwrap().id(), "heldout");
        let mut unknown = ranking();
        unknown["metrics"] = json!({ "nothing@3": true });
        let message = err(unknown);
        assert!(
            message.starts_with("learner.listeners[2].metrics:"),
            "{message}"
        );
    }

    #[test]
    fn a_validation_loss_scores_pairs_of_its_data_with_its_trainers_losses() {
        let features = ranking()["dataset"].clone();
        let built = built(validation_loss(features)).unwrap();
        assert_eq!(built.id(), "loss");
        let pairs =
            json!({ "__xpmtype__": "xpm_torch.data.TextPairFile", "id": "p", "path": "/none" });
        let message = err(validation_loss(pairs));
        assert!(
            message.starts_with("learner.listeners[2].data: a TrainerValidationLoss"),
            "{message}"
        );
    }
}
