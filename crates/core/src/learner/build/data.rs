//! The data of a run: the datasets the dataset positions describe, the samplers of the trainers,
//! and what the validation listeners score.

use std::sync::Arc;

use super::Js;
use crate::config::{
    AnyLtrDataset, AnyRankedDataset, AnySampleIterator, AnySampler, AnyTokenTriplets,
    JsSamplerKind, SlateSamplerConfig,
};
use crate::data::{
    js_dataset, load_triplets, read_letor, read_text_pairs, read_text_triplets, synthetic_ltr,
    BatchwiseSampler, IdTriplets, JsSampler, LtrDataset, PairwiseSampler, PointwiseSampler,
    RecordKind, Reranking, Sampler, Shard, SlateSampler, TextEncoding, TextPairSampler,
    TextTripletSampler, TokenTripletSampler,
};
use crate::learner::trainers::EvaluationPairs;
use crate::rng::Rng;
use crate::{Error, Result};

/// Where the data of a run comes from beside its own configuration.
#[derive(Clone, Copy)]
pub(super) struct DataSources<'a> {
    /// Datasets and samplers written in TypeScript.
    pub js: &'a Js,
    /// How the model wants texts encoded, for a text model.
    pub text: Option<&'a TextEncoding>,
}

/// The error at `path` for `what`, written in TypeScript, in a run without JavaScript.
pub(super) fn no_js(path: &str, what: &str) -> Error {
    Error::config(
        path,
        format!("{what} is written in TypeScript, but this run has no JavaScript side"),
    )
}

/// The dataset of features `config` describes at `path`.
fn ltr_dataset(config: &AnyLtrDataset, js: &Js, path: &str) -> Result<LtrDataset> {
    match config {
        AnyLtrDataset::JsObject(c) => match js {
            Some(js) => js_dataset(js.as_ref(), &c.key, path),
            None => Err(no_js(path, "this dataset")),
        },
        AnyLtrDataset::SyntheticLtrDataset(c) => Ok(synthetic_ltr(c)),
        AnyLtrDataset::LetorDataset(c) => Ok(read_letor(
            std::path::Path::new(&c.path),
            c.num_features.map(|n| n as usize),
        )?
        .dataset),
        AnyLtrDataset::InMemoryLtrDataset(_) => Err(Error::config(
            path,
            "an InMemoryLtrDataset holds arrays that only TypeScript has: build it with \
             inMemoryLtrDataset({...}) and train with learn()",
        )),
    }
}

/// How a text model wants texts encoded, or an error at `path` saying `what` needs one.
pub(super) fn text_encoding(
    text: Option<&TextEncoding>,
    what: &str,
    path: &str,
) -> Result<TextEncoding> {
    text.cloned().ok_or_else(|| {
        Error::config(
            path,
            format!(
                "{what} feeds texts to a pretrained text model: set the learner's model to a \
                 CrossEncoder or a BiEncoder"
            ),
        )
    })
}

/// What a ranked-dataset position holds: queries of feature vectors, or a run of texts to
/// re-rank.
pub(super) enum RankedData {
    Features(LtrDataset),
    Texts(Arc<Reranking>),
}

/// The queries `config` describes at `path`.
pub(super) fn ranked_data(config: &AnyRankedDataset, js: &Js, path: &str) -> Result<RankedData> {
    match AnyLtrDataset::try_from(config.clone()) {
        Ok(features) => Ok(RankedData::Features(ltr_dataset(&features, js, path)?)),
        Err(AnyRankedDataset::TextRerankingDataset(t)) => {
            Ok(RankedData::Texts(Arc::new(Reranking::open(&t, path)?)))
        }
        Err(_) => Err(Error::config(path, "holds no features")),
    }
}

/// The pairs of a positive and a negative that a validation loss scores, from `config` at
/// `path`.
pub(super) fn evaluation_pairs(
    config: &AnySampleIterator,
    sources: DataSources,
    path: &str,
) -> Result<EvaluationPairs> {
    let config = match AnyLtrDataset::try_from(config.clone()) {
        Ok(features) => return EvaluationPairs::new(&ltr_dataset(&features, sources.js, path)?),
        Err(config) => config,
    };
    match AnyTokenTriplets::try_from(config) {
        Ok(triplets) => Ok(EvaluationPairs::Triplets(load_triplets(&triplets, path)?)),
        Err(AnySampleIterator::TextTripletFile(d)) => Ok(EvaluationPairs::texts(
            Arc::new(read_text_triplets(&d, path)?),
            text_encoding(sources.text, "a TextTripletFile", path)?,
        )),
        Err(_) => Err(Error::config(
            path,
            "a TrainerValidationLoss scores pairs of a positive and a negative: give it \
             triplets (a TextTripletFile, a TokenTripletFile) or a dataset of features",
        )),
    }
}

/// The records a sampler written in TypeScript yields, by the kind it declares.
fn record_kind(kind: JsSamplerKind) -> RecordKind {
    match kind {
        JsSamplerKind::Pairwise | JsSamplerKind::Triplets => RecordKind::Pairwise,
        JsSamplerKind::Pointwise => RecordKind::Pointwise,
    }
}

/// The sampler `config` describes, at `path`, drawing with `rng` from its `shard`.
pub(super) fn sampler(
    config: &AnySampler,
    sources: DataSources,
    rng: Rng,
    shard: Shard,
    path: &str,
) -> Result<Box<dyn Sampler>> {
    let data = |d: &AnyLtrDataset| ltr_dataset(d, sources.js, &format!("{path}.dataset"));
    let text = |what: &str| text_encoding(sources.text, what, path);
    Ok(match config {
        AnySampler::PairwiseSampler(c) => {
            Box::new(PairwiseSampler::new(&data(&c.dataset)?, rng, shard, path)?)
        }
        AnySampler::PointwiseSampler(c) => {
            Box::new(PointwiseSampler::new(&data(&c.dataset)?, rng, shard, path)?)
        }
        AnySampler::BatchwiseSampler(c) => Box::new(BatchwiseSampler::new(
            &data(&c.dataset)?,
            c.group_size as usize,
            rng,
            shard,
            path,
        )?),
        AnySampler::SlateSampler(c) => slate_sampler(c, sources, rng, shard, path)?,
        AnySampler::TokenTripletSampler(c) => {
            let triplets = load_triplets(&c.triplets, &format!("{path}.triplets"))?;
            Box::new(TokenTripletSampler::new(triplets, rng, shard, path)?)
        }
        AnySampler::TextTripletSampler(c) => {
            let encoding = text("TextTripletSampler")?;
            let triplets = read_text_triplets(&c.triplets, &format!("{path}.triplets"))?;
            Box::new(TextTripletSampler::new(
                Arc::new(triplets),
                encoding,
                rng,
                shard,
                path,
            )?)
        }
        AnySampler::TextPairSampler(c) => {
            let encoding = text("TextPairSampler")?;
            let pairs = read_text_pairs(&c.pairs, &format!("{path}.pairs"))?;
            Box::new(TextPairSampler::new(pairs, encoding, rng, shard, path)?)
        }
        AnySampler::IdTripletSampler(c) => {
            let encoding = text("IdTripletSampler")?;
            let triplets = Arc::new(IdTriplets::open(c)?);
            Box::new(TextTripletSampler::new(
                triplets, encoding, rng, shard, path,
            )?)
        }
        AnySampler::JsObject(c) => {
            let kind = record_kind(c.declared_kind(path)?);
            let js = sources.js.clone().ok_or_else(|| no_js(path, &c.class))?;
            Box::new(JsSampler::new(js, &c.key, kind, shard))
        }
    })
}

/// A [`SlateSampler`] over a run to re-rank (texts) or over a dataset of features.
fn slate_sampler(
    c: &SlateSamplerConfig,
    sources: DataSources,
    rng: Rng,
    shard: Shard,
    path: &str,
) -> Result<Box<dyn Sampler>> {
    let length = c.slate_length as usize;
    Ok(
        match ranked_data(&c.dataset, sources.js, &format!("{path}.dataset"))? {
            RankedData::Texts(set) => {
                let what = "a SlateSampler over a TextRerankingDataset";
                let encoding = text_encoding(sources.text, what, path)?;
                Box::new(SlateSampler::over_texts(
                    set, encoding, length, rng, shard, path,
                )?)
            }
            RankedData::Features(data) => {
                Box::new(SlateSampler::new(&data, length, rng, shard, path)?)
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::config::JsObjectConfig;
    use crate::data::{JsData, JsMessage};

    /// A JavaScript side that building asks nothing of.
    struct Silent;

    impl JsData for Silent {
        fn request(&self, _: JsMessage, what: &str) -> Result<JsMessage> {
            panic!("{what} asked the JavaScript side while being built")
        }
    }

    fn stand_in(kind: &str) -> JsObjectConfig {
        serde_json::from_value(json!({
            "key": "0:t.Records", "class": "t.Records", "kind": kind, "params": {}
        }))
        .unwrap()
    }

    fn synthetic() -> Value {
        json!({
            "__xpmtype__": "xpm_torch.data.SyntheticLtrDataset", "signal_seed": 11, "seed": 1,
            "num_queries": 5, "docs_per_query": 4, "num_features": 3, "noise": 0.2
        })
    }

    fn config<T: serde::de::DeserializeOwned>(value: Value) -> T {
        serde_json::from_value(value).unwrap()
    }

    fn build_sampler(config: &AnySampler, js: &Js) -> Result<Box<dyn Sampler>> {
        let sources = DataSources { js, text: None };
        let rng = Rng::derive(0, "test/sampler");
        sampler(
            config,
            sources,
            rng,
            Shard::WHOLE,
            "learner.trainer.sampler",
        )
    }

    #[test]
    fn a_dataset_only_typescript_holds_needs_the_javascript_side() {
        let err = ltr_dataset(&AnyLtrDataset::JsObject(stand_in("ltr")), &None, "d")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("d: this dataset is written in TypeScript"),
            "{err}"
        );
        let in_memory = config(json!({
            "__xpmtype__": "xpm_torch.data.InMemoryLtrDataset", "id": "mine", "num_features": 3
        }));
        let err = ltr_dataset(&in_memory, &None, "d").unwrap_err().to_string();
        assert!(err.contains("inMemoryLtrDataset({...})"), "{err}");
    }

    #[test]
    fn a_sampler_written_in_typescript_yields_the_records_of_its_declared_kind() {
        let js: Js = Some(Arc::new(Silent));
        for (kind, records) in [
            ("pairwise", RecordKind::Pairwise),
            ("triplets", RecordKind::Pairwise),
            ("pointwise", RecordKind::Pointwise),
        ] {
            let sampler = build_sampler(&AnySampler::JsObject(stand_in(kind)), &js).unwrap();
            assert_eq!(sampler.kind(), records, "{kind}");
        }
        let err = build_sampler(&AnySampler::JsObject(stand_in("slate")), &js)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("learner.trainer.sampler.kind: the kind of t.Records"),
            "{err}"
        );
        let err = build_sampler(&AnySampler::JsObject(stand_in("pairwise")), &None)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("t.Records is written in TypeScript"), "{err}");
    }

    #[test]
    fn a_sampler_of_texts_needs_a_text_model() {
        let pairs = config(json!({
            "__xpmtype__": "xpm_torch.samplers.TextPairSampler",
            "pairs": { "__xpmtype__": "xpm_torch.data.TextPairFile", "id": "p", "path": "/none" }
        }));
        let err = build_sampler(&pairs, &None).err().unwrap().to_string();
        assert!(
            err.starts_with("learner.trainer.sampler: TextPairSampler feeds texts"),
            "{err}"
        );
    }

    #[test]
    fn a_slate_sampler_over_features_draws_slates() {
        let slates = config(json!({
            "__xpmtype__": "xpm_torch.samplers.SlateSampler", "dataset": synthetic(),
            "slate_length": 4
        }));
        let sampler = build_sampler(&slates, &None).unwrap();
        assert_eq!(sampler.kind(), RecordKind::Slate);
    }

    #[test]
    fn a_ranked_dataset_of_features_is_read_as_features() {
        let Ok(RankedData::Features(data)) = ranked_data(&config(synthetic()), &None, "d") else {
            panic!("not read as features");
        };
        assert_eq!(data.query_bounds.len(), 6);
        assert_eq!(data.num_features, 3);
    }

    #[test]
    fn a_validation_loss_scores_features_or_triplets_but_not_pairs() {
        let sources = DataSources {
            js: &None,
            text: None,
        };
        let pairs = evaluation_pairs(&config(synthetic()), sources, "v.data").unwrap();
        assert!(matches!(pairs, EvaluationPairs::Features { .. }));
        let tokens = config(json!({
            "__xpmtype__": "xpm_torch.data.SyntheticTokenTriplets", "num_triplets": 3, "seed": 1
        }));
        let triplets = evaluation_pairs(&tokens, sources, "v.data").unwrap();
        assert!(matches!(triplets, EvaluationPairs::Triplets(_)));
        let text_pairs = config(json!({
            "__xpmtype__": "xpm_torch.data.TextPairFile", "id": "p", "path": "/none"
        }));
        let err = evaluation_pairs(&text_pairs, sources, "v.data")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.starts_with("v.data: a TrainerValidationLoss scores pairs"),
            "{err}"
        );
    }
}
