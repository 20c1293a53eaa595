//! The base model of a Hugging Face encoder over tch ([`Encoder`]): embeddings, post-norm
//! layers and optional pooler, loaded under Hugging Face names, with first-token and mean pooling.

use tch::{Kind, Tensor};

use super::config::{Activation, Architecture, EncoderSettings};
use super::weights::HfWeights;
use crate::models::attention::attention;
use crate::models::params::{join, LayerNorm, Linear, ParamId, Params};
use crate::runtime::dropout;
use crate::Result;

/// One batch of encoded texts, `B × T` int64 each (right-padded).
#[derive(Debug)]
pub struct EncoderInput {
    /// Token ids.
    pub ids: Tensor,
    /// Token type (segment) ids; zeros when absent.
    pub type_ids: Option<Tensor>,
    /// 1 on real tokens, 0 on padding.
    pub mask: Tensor,
}

/// One post-norm layer: self-attention then feed-forward, each followed by a residual
/// LayerNorm.
#[derive(Debug)]
struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_out: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The Hugging Face names of a layer's parts, relative to the base model.
struct LayerNames {
    query: String,
    key: String,
    value: String,
    attention_out: String,
    attention_norm: String,
    intermediate: String,
    output: String,
    output_norm: String,
}

fn layer_names(architecture: Architecture, i: i64) -> LayerNames {
    if architecture == Architecture::DistilBert {
        let p = format!("transformer.layer.{i}");
        LayerNames {
            query: format!("{p}.attention.q_lin"),
            key: format!("{p}.attention.k_lin"),
            value: format!("{p}.attention.v_lin"),
            attention_out: format!("{p}.attention.out_lin"),
            attention_norm: format!("{p}.sa_layer_norm"),
            intermediate: format!("{p}.ffn.lin1"),
            output: format!("{p}.ffn.lin2"),
            output_norm: format!("{p}.output_layer_norm"),
        }
    } else {
        let p = format!("encoder.layer.{i}");
        LayerNames {
            query: format!("{p}.attention.self.query"),
            key: format!("{p}.attention.self.key"),
            value: format!("{p}.attention.self.value"),
            attention_out: format!("{p}.attention.output.dense"),
            attention_norm: format!("{p}.attention.output.LayerNorm"),
            intermediate: format!("{p}.intermediate.dense"),
            output: format!("{p}.output.dense"),
            output_norm: format!("{p}.output.LayerNorm"),
        }
    }
}

/// Copies base-model tensors from a file into a parameter store under `prefix`.
pub(crate) struct Loader<'a> {
    pub weights: &'a HfWeights,
    pub params: &'a mut Params,
    pub prefix: &'a str,
}

impl Loader<'_> {
    fn tensor(&mut self, name: &str, shape: &[i64]) -> Result<ParamId> {
        let t = self.weights.base(name, shape)?;
        self.params.tensor(join(self.prefix, name), t)
    }

    /// `name.weight` `[out, in]` and `name.bias` `[out]`.
    pub fn linear(&mut self, name: &str, fan_in: i64, fan_out: i64) -> Result<Linear> {
        let weight = self.tensor(&format!("{name}.weight"), &[fan_out, fan_in])?;
        let bias = self.tensor(&format!("{name}.bias"), &[fan_out])?;
        Ok(Linear::from_ids(weight, Some(bias)))
    }

    /// A linear layer if the file holds its weight.
    pub fn optional_linear(
        &mut self,
        name: &str,
        fan_in: i64,
        fan_out: i64,
    ) -> Result<Option<Linear>> {
        let weight = format!("{name}.weight");
        if !self.weights.has_base(&weight, &[fan_out, fan_in])? {
            return Ok(None);
        }
        self.linear(name, fan_in, fan_out).map(Some)
    }

    fn layer_norm(&mut self, name: &str, width: i64, eps: f64) -> Result<LayerNorm> {
        let weight = self.tensor(&format!("{name}.weight"), &[width])?;
        let bias = self.tensor(&format!("{name}.bias"), &[width])?;
        Ok(LayerNorm::from_ids(weight, bias, width, eps))
    }
}

/// The base model of a Hugging Face encoder (embeddings, layers, optional pooler), whose
/// parameters live in a [`Params`] store under Hugging Face names.
#[derive(Debug)]
pub(crate) struct Encoder {
    pub settings: EncoderSettings,
    word: ParamId,
    position: ParamId,
    token_type: Option<ParamId>,
    embedding_norm: LayerNorm,
    projection: Option<Linear>,
    layers: Vec<Layer>,
    /// `pooler.dense`, for BERT and RoBERTa files that have one.
    pub pooler: Option<Linear>,
}

impl Encoder {
    /// Reads the base model from `loader` (names under its prefix); every tensor config.json
    /// calls for must be present with its shape.
    pub fn load(settings: &EncoderSettings, loader: &mut Loader) -> Result<Self> {
        let s = settings;
        let (h, e) = (s.hidden_size, s.embedding_size);
        let word = loader.tensor("embeddings.word_embeddings.weight", &[s.vocab_size, e])?;
        let position = loader.tensor(
            "embeddings.position_embeddings.weight",
            &[s.max_positions, e],
        )?;
        let token_type = if s.type_vocab_size > 0 {
            Some(loader.tensor(
                "embeddings.token_type_embeddings.weight",
                &[s.type_vocab_size, e],
            )?)
        } else {
            None
        };
        let embedding_norm = loader.layer_norm("embeddings.LayerNorm", e, s.layer_norm_eps)?;
        let projection = if s.architecture == Architecture::Electra && e != h {
            Some(loader.linear("embeddings_project", e, h)?)
        } else {
            None
        };
        let mut layers = Vec::new();
        for i in 0..s.layers {
            let n = layer_names(s.architecture, i);
            layers.push(Layer {
                query: loader.linear(&n.query, h, h)?,
                key: loader.linear(&n.key, h, h)?,
                value: loader.linear(&n.value, h, h)?,
                attention_out: loader.linear(&n.attention_out, h, h)?,
                attention_norm: loader.layer_norm(&n.attention_norm, h, s.layer_norm_eps)?,
                intermediate: loader.linear(&n.intermediate, h, s.intermediate_size)?,
                output: loader.linear(&n.output, s.intermediate_size, h)?,
                output_norm: loader.layer_norm(&n.output_norm, h, s.layer_norm_eps)?,
            });
        }
        let pooler = match s.architecture {
            Architecture::Bert | Architecture::Roberta | Architecture::XlmRoberta => {
                loader.optional_linear("pooler.dense", h, h)?
            }
            Architecture::DistilBert | Architecture::Electra => None,
        };
        Ok(Encoder {
            settings: settings.clone(),
            word,
            position,
            token_type,
            embedding_norm,
            projection,
            layers,
            pooler,
        })
    }

    fn position_ids(&self, ids: &Tensor) -> Result<Tensor> {
        let length = ids.size()[1];
        if self.settings.architecture.positions_after_padding() {
            // RoBERTa counts real tokens from pad + 1; padding keeps the padding position.
            let pad = self.settings.pad_token_id;
            let real = ids.f_ne(pad)?.f_to_kind(Kind::Int64)?;
            Ok(real
                .f_cumsum(1, Kind::Int64)?
                .f_mul(&real)?
                .f_add_scalar(pad)?)
        } else {
            Ok(Tensor::f_arange(length, (Kind::Int64, ids.device()))?
                .f_unsqueeze(0)?
                .f_expand_as(ids)?)
        }
    }

    fn embed(&self, params: &Params, input: &EncoderInput, training: bool) -> Result<Tensor> {
        let s = &self.settings;
        let ids = &input.ids;
        let word = Tensor::f_embedding(params.get(self.word), ids, s.pad_token_id, false, false)?;
        let position_padding = if s.architecture.positions_after_padding() {
            s.pad_token_id
        } else {
            -1
        };
        let positions = Tensor::f_embedding(
            params.get(self.position),
            &self.position_ids(ids)?,
            position_padding,
            false,
            false,
        )?;
        let mut x = word.f_add(&positions)?;
        if let Some(token_type) = self.token_type {
            let zeros;
            let types = match &input.type_ids {
                Some(t) => t,
                None => {
                    zeros = ids.f_zeros_like()?;
                    &zeros
                }
            };
            x = x.f_add(&Tensor::f_embedding(
                params.get(token_type),
                types,
                -1,
                false,
                false,
            )?)?;
        }
        let x = dropout(
            &self.embedding_norm.apply(params, &x)?,
            s.hidden_dropout,
            training,
        )?;
        match &self.projection {
            Some(p) => p.apply(params, &x),
            None => Ok(x),
        }
    }

    fn activate(&self, x: &Tensor) -> Result<Tensor> {
        Ok(match self.settings.activation {
            Activation::Gelu => x.f_gelu("none")?,
            Activation::GeluTanh => x.f_gelu("tanh")?,
            Activation::Relu => x.f_relu()?,
            Activation::Silu => x.f_silu()?,
        })
    }

    fn attend(
        &self,
        params: &Params,
        layer: &Layer,
        x: &Tensor,
        keep: &Tensor,
        training: bool,
    ) -> Result<Tensor> {
        let s = &self.settings;
        let size = x.size();
        let (batch, length) = (size[0], size[1]);
        let heads = |linear: &Linear| -> Result<Tensor> {
            Ok(linear
                .apply(params, x)?
                .f_view([batch, length, s.heads, s.head_dim()])?
                .f_transpose(1, 2)?)
        };
        let context = attention(
            &heads(&layer.query)?,
            &heads(&layer.key)?,
            &heads(&layer.value)?,
            keep,
            s.attention_dropout,
            training,
        )?
        .f_transpose(1, 2)?
        .f_reshape([batch, length, s.hidden_size])?;
        layer.attention_out.apply(params, &context)
    }

    /// The last layer's hidden states, `B × T × H` (rows at padding positions are finite but
    /// meaningless).
    pub fn hidden(&self, params: &Params, input: &EncoderInput, training: bool) -> Result<Tensor> {
        let s = &self.settings;
        let drop = |x: Tensor| dropout(&x, s.hidden_dropout, training);
        // Boolean key mask, true where a key takes part, broadcast over heads and queries.
        let keep = input.mask.f_ne(0)?.f_unsqueeze(1)?.f_unsqueeze(1)?;
        let mut x = self.embed(params, input, training)?;
        let distilbert = s.architecture == Architecture::DistilBert;
        for layer in &self.layers {
            let attended = self.attend(params, layer, &x, &keep, training)?;
            // DistilBERT applies no dropout to the attention output.
            let attended = if distilbert {
                attended
            } else {
                drop(attended)?
            };
            x = layer.attention_norm.apply(params, &attended.f_add(&x)?)?;
            let inner = self.activate(&layer.intermediate.apply(params, &x)?)?;
            let out = drop(layer.output.apply(params, &inner)?)?;
            x = layer.output_norm.apply(params, &out.f_add(&x)?)?;
        }
        Ok(x)
    }

    /// BERT's pooler output `tanh(pooler.dense(h[:, 0]))`, `B × H`, or `None` without a pooler.
    pub fn pooled(&self, params: &Params, hidden: &Tensor) -> Result<Option<Tensor>> {
        self.pooler
            .as_ref()
            .map(|p| Ok(p.apply(params, &first_token(hidden)?)?.f_tanh()?))
            .transpose()
    }
}

/// `h[:, 0]`, `B × H`.
pub(crate) fn first_token(hidden: &Tensor) -> Result<Tensor> {
    Ok(hidden.f_select(1, 0)?)
}

/// The mean of `hidden` (`B × T × H`) over each row's real tokens (`mask` `B × T`), `B × H`.
pub(crate) fn masked_mean(hidden: &Tensor, mask: &Tensor) -> Result<Tensor> {
    let weights = mask.f_to_kind(hidden.kind())?.f_unsqueeze(-1)?;
    let sum = hidden
        .f_mul(&weights)?
        .f_sum_dim_intlist([1i64].as_slice(), false, None::<Kind>)?;
    let count = weights
        .f_sum_dim_intlist([1i64].as_slice(), false, None::<Kind>)?
        .f_clamp_min(1e-9)?;
    Ok(sum.f_div(&count)?)
}
