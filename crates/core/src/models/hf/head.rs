//! [`Head`]: the sequence-classification head of a Hugging Face encoder, per family, read from
//! the weights when they hold one for the label count, else freshly initialised.

use tch::Tensor;

use super::config::Architecture;
use super::encoder::{first_token, Encoder};
use super::weights::HfWeights;
use crate::models::params::{join, Linear, Params};
use crate::rng::Rng;
use crate::runtime::dropout;
use crate::Result;

/// The layers of a `…ForSequenceClassification` head on the `[CLS]` (first) hidden state.
#[derive(Debug)]
enum Layers {
    /// BERT: `classifier(dropout(tanh(pooler.dense(h0))))`; the pooler lives in the encoder.
    Bert { classifier: Linear },
    /// RoBERTa, XLM-R (tanh) and ELECTRA (exact GELU): `out_proj(drop(act(dense(drop(h0)))))`.
    Dense {
        dense: Linear,
        out_proj: Linear,
        gelu: bool,
    },
    /// DistilBERT: `classifier(drop(relu(pre_classifier(h0))))`.
    DistilBert {
        pre_classifier: Linear,
        classifier: Linear,
    },
}

/// A sequence-classification head with `labels` outputs, read from a file when it holds one
/// for that many labels, otherwise new (weights N(0, initializer_range²), biases 0).
#[derive(Debug)]
pub(crate) struct Head {
    layers: Layers,
    dropout: f64,
    /// Whether the head came from the file.
    pub loaded: bool,
    /// The parameters drawn new rather than read from the file, in order.
    pub new_weights: Vec<String>,
}

/// Where the head's linear layers are named, and the one whose shape tells the label count.
fn head_names(architecture: Architecture) -> (&'static [&'static str], &'static str) {
    match architecture {
        Architecture::Bert => (&["classifier"], "classifier"),
        Architecture::Roberta | Architecture::XlmRoberta | Architecture::Electra => (
            &["classifier.dense", "classifier.out_proj"],
            "classifier.out_proj",
        ),
        Architecture::DistilBert => (&["pre_classifier", "classifier"], "classifier"),
    }
}

/// Builds head layers, from the file or new.
struct Source<'a> {
    weights: Option<&'a HfWeights>,
    params: &'a mut Params,
    rng: &'a mut Rng,
    std: f64,
    /// The parameters drawn so far.
    drawn: Vec<String>,
}

impl Source<'_> {
    fn linear(&mut self, name: &str, fan_in: i64, fan_out: i64) -> Result<Linear> {
        let (weight, bias) = (format!("{name}.weight"), format!("{name}.bias"));
        match self.weights {
            Some(w) => {
                let weight = self
                    .params
                    .tensor(&weight, w.head(&weight, &[fan_out, fan_in])?)?;
                let bias = self.params.tensor(&bias, w.head(&bias, &[fan_out])?)?;
                Ok(Linear::from_ids(weight, Some(bias)))
            }
            None => self.new_linear(name, fan_in, fan_out),
        }
    }

    fn new_linear(&mut self, name: &str, fan_in: i64, fan_out: i64) -> Result<Linear> {
        let weight = format!("{name}.weight");
        let weight_id =
            self.params
                .normal_scaled(self.rng, &weight, &[fan_out, fan_in], self.std)?;
        let bias = format!("{name}.bias");
        let bias_id = self.params.constant(&bias, &[fan_out], 0.0)?;
        self.drawn.extend([weight, bias]);
        Ok(Linear::from_ids(weight_id, Some(bias_id)))
    }
}

impl Head {
    /// The head for `encoder` with `labels` outputs; a BERT encoder without a pooler gets a
    /// new one under `prefix`.
    pub fn build(
        encoder: &mut Encoder,
        weights: Option<&HfWeights>,
        params: &mut Params,
        rng: &mut Rng,
        labels: i64,
        prefix: &str,
    ) -> Result<Self> {
        let s = encoder.settings.clone();
        let h = s.hidden_size;
        let (_, output) = head_names(s.architecture);
        let in_file =
            weights.filter(|w| w.shape(&format!("{output}.weight")) == Some(vec![labels, h]));
        let mut source = Source {
            weights: in_file,
            params,
            rng,
            std: s.initializer_range,
            drawn: Vec::new(),
        };
        let layers = match s.architecture {
            Architecture::Bert => Layers::Bert {
                classifier: source.linear("classifier", h, labels)?,
            },
            Architecture::Roberta | Architecture::XlmRoberta | Architecture::Electra => {
                Layers::Dense {
                    dense: source.linear("classifier.dense", h, h)?,
                    out_proj: source.linear("classifier.out_proj", h, labels)?,
                    gelu: s.architecture == Architecture::Electra,
                }
            }
            Architecture::DistilBert => Layers::DistilBert {
                pre_classifier: source.linear("pre_classifier", h, h)?,
                classifier: source.linear("classifier", h, labels)?,
            },
        };
        if s.architecture == Architecture::Bert && encoder.pooler.is_none() {
            encoder.pooler = Some(source.new_linear(&join(prefix, "pooler.dense"), h, h)?);
        }
        Ok(Head {
            layers,
            dropout: s.classifier_dropout,
            loaded: in_file.is_some(),
            new_weights: source.drawn,
        })
    }

    /// Logits `B × labels` from the encoder's hidden states `B × T × H`.
    pub fn apply(
        &self,
        encoder: &Encoder,
        params: &Params,
        hidden: &Tensor,
        training: bool,
    ) -> Result<Tensor> {
        let drop = |x: Tensor| dropout(&x, self.dropout, training);
        let first = first_token(hidden)?;
        match &self.layers {
            Layers::Bert { classifier } => {
                let pooled = encoder.pooled(params, hidden)?.unwrap_or(first);
                classifier.apply(params, &drop(pooled)?)
            }
            Layers::Dense {
                dense,
                out_proj,
                gelu,
            } => {
                let x = dense.apply(params, &drop(first)?)?;
                let x = if *gelu {
                    x.f_gelu("none")?
                } else {
                    x.f_tanh()?
                };
                out_proj.apply(params, &drop(x)?)
            }
            Layers::DistilBert {
                pre_classifier,
                classifier,
            } => {
                let x = pre_classifier.apply(params, &first)?.f_relu()?;
                classifier.apply(params, &drop(x)?)
            }
        }
    }
}
