//! [`TransformerCrossEncoder`]: a small Transformer cross-encoder over token ids that scores the
//! mean of its last layer's outputs; parameters named as PyTorch's `nn.TransformerEncoder`.

use tch::{Kind, Tensor};

use super::attention::attention;
use super::params::{LayerNorm, Linear, ParamId, Params};
use super::{Model, NamedParameter};
use crate::config::TransformerCrossEncoderConfig;
use crate::data::{ScoreInput, Tokens};
use crate::rng::Rng;
use crate::runtime::dropout;
use crate::Result;

/// One post-norm encoder layer, as `torch.nn.TransformerEncoderLayer(batch_first=True)`.
#[derive(Debug)]
struct EncoderLayer {
    in_proj: Linear,
    out_proj: Linear,
    linear1: Linear,
    linear2: Linear,
    norm1: LayerNorm,
    norm2: LayerNorm,
}

/// A Transformer cross-encoder: `[CLS] query [SEP] document` token ids plus learned positions
/// and segments (0 up to `[SEP]`, 1 for the document), `layers` post-norm encoder layers with
/// multi-head self-attention that ignores padding, and a linear score of the mean of the last
/// layer's outputs over the real positions. Attention costs memory in batch × length².
///
/// The mean, not the `[CLS]` output, is scored: after one layer `[CLS]` has only attended to
/// raw embeddings and cannot tell which document tokens match the query, while every document
/// token's own output can, and their mean grows with the number of matches.
///
/// PyTorch layout: `token_embedding` (`nn.Embedding(vocab_size + 2, dim, padding_idx=0)`),
/// `position_embedding` (`nn.Embedding(max_length, dim)`), `segment_embedding`
/// (`nn.Embedding(2, dim)`), `encoder` (`nn.TransformerEncoder(nn.TransformerEncoderLayer(dim,
/// heads, ffn_dim, dropout, batch_first=True), layers)`), `score` (`nn.Linear(dim, 1)`).
#[derive(Debug)]
pub struct TransformerCrossEncoder {
    params: Params,
    token_embedding: ParamId,
    position_embedding: ParamId,
    segment_embedding: ParamId,
    layers: Vec<EncoderLayer>,
    score: Linear,
    config: TransformerCrossEncoderConfig,
    training: bool,
}

/// Row-major token ids `B × L` and their lengths.
fn rows(tokens: &Tokens) -> Result<(Vec<i64>, Vec<i64>, usize)> {
    let ids = tokens.ids.f_to_device(tch::Device::Cpu)?.f_contiguous()?;
    let width = tokens.max_length().max(0) as usize;
    Ok((
        Vec::<i64>::try_from(ids.f_flatten(0, -1)?)?,
        Vec::<i64>::try_from(tokens.lengths.f_to_device(tch::Device::Cpu)?)?,
        width,
    ))
}

impl TransformerCrossEncoder {
    /// A fresh model with PyTorch's default initialisation drawn from `rng` (attention input
    /// projections Xavier-uniform, their biases and the output projection's bias zero), except
    /// that each key projection starts as a copy of its query projection: attention then starts
    /// out scoring token similarity, so a document token finds its copies in the query from the
    /// first step (with independent draws, learning to match took several times more steps).
    ///
    /// # Errors
    /// A libtorch error while creating the parameters.
    pub fn new(config: &TransformerCrossEncoderConfig, rng: &mut Rng) -> Result<Self> {
        let dim = config.dim as i64;
        let mut params = Params::default();
        let token_embedding = params.normal(
            rng,
            "token_embedding.weight",
            &[config.vocab_size as i64 + 2, dim],
            Some(0),
        )?;
        let position_embedding = params.normal(
            rng,
            "position_embedding.weight",
            &[config.max_length as i64, dim],
            None,
        )?;
        let segment_embedding = params.normal(rng, "segment_embedding.weight", &[2, dim], None)?;
        let mut layers = Vec::new();
        for i in 0..config.layers {
            let p = format!("encoder.layers.{i}");
            let xavier = (6.0 / (dim + 3 * dim) as f64).sqrt();
            let mut draw = |n: i64| -> Vec<f32> {
                (0..n)
                    .map(|_| rng.uniform_in(-xavier, xavier) as f32)
                    .collect()
            };
            let query = draw(dim * dim);
            let value = draw(dim * dim);
            let in_weight = params.values(
                format!("{p}.self_attn.in_proj_weight"),
                &[3 * dim, dim],
                [query.as_slice(), &query, &value].concat(),
            )?;
            let in_bias =
                params.constant(format!("{p}.self_attn.in_proj_bias"), &[3 * dim], 0.0)?;
            let out_weight = params.uniform(
                rng,
                format!("{p}.self_attn.out_proj.weight"),
                &[dim, dim],
                1.0 / (dim as f64).sqrt(),
            )?;
            let out_bias = params.constant(format!("{p}.self_attn.out_proj.bias"), &[dim], 0.0)?;
            let linear1 = params.linear(
                rng,
                &format!("{p}.linear1"),
                dim,
                config.ffn_dim as i64,
                true,
            )?;
            let linear2 = params.linear(
                rng,
                &format!("{p}.linear2"),
                config.ffn_dim as i64,
                dim,
                true,
            )?;
            let norm1 = params.layer_norm(&format!("{p}.norm1"), dim)?;
            let norm2 = params.layer_norm(&format!("{p}.norm2"), dim)?;
            layers.push(EncoderLayer {
                in_proj: Linear::from_ids(in_weight, Some(in_bias)),
                out_proj: Linear::from_ids(out_weight, Some(out_bias)),
                linear1,
                linear2,
                norm1,
                norm2,
            });
        }
        let score = params.linear(rng, "score", dim, 1, true)?;
        Ok(TransformerCrossEncoder {
            params,
            token_embedding,
            position_embedding,
            segment_embedding,
            layers,
            score,
            config: config.clone(),
            training: true,
        })
    }

    /// `[CLS] q [SEP] d` per row, padded with 0, the query truncated to leave room for one
    /// document token and the document to fit `max_length`: ids `B × L`, the mask of real
    /// positions and the segment ids (1 on document tokens).
    fn join(&self, query: &Tokens, document: &Tokens) -> Result<(Tensor, Tensor, Tensor)> {
        let (q, q_len, q_width) = rows(query)?;
        let (d, d_len, d_width) = rows(document)?;
        let max = self.config.max_length as usize;
        let vocab = self.config.vocab_size as i64;
        let (cls, sep) = (vocab, vocab + 1);
        let mut sequences = Vec::with_capacity(q_len.len());
        for (b, (&lq, &ld)) in q_len.iter().zip(&d_len).enumerate() {
            let lq = (lq.max(0) as usize).min(max - 3);
            let ld = (ld.max(0) as usize).min(max - 2 - lq);
            let mut seq = Vec::with_capacity(lq + ld + 2);
            seq.push(cls);
            seq.extend_from_slice(&q[b * q_width..b * q_width + lq]);
            seq.push(sep);
            seq.extend_from_slice(&d[b * d_width..b * d_width + ld]);
            sequences.push((seq, lq + 2));
        }
        let width = sequences.iter().map(|(s, _)| s.len()).max().unwrap_or(1);
        let mut ids = vec![0i64; sequences.len() * width];
        let mut mask = vec![false; sequences.len() * width];
        let mut segments = vec![0i64; sequences.len() * width];
        for (b, (seq, document_start)) in sequences.iter().enumerate() {
            let row = b * width;
            ids[row..row + seq.len()].copy_from_slice(seq);
            mask[row..row + seq.len()].fill(true);
            segments[row + document_start..row + seq.len()].fill(1);
        }
        let shape = [sequences.len() as i64, width as i64];
        let device = self.params.get(self.token_embedding).device();
        let place = |t: Tensor| -> Result<Tensor> { Ok(t.f_view(shape)?.f_to_device(device)?) };
        Ok((
            place(Tensor::f_from_slice(&ids)?)?,
            place(Tensor::f_from_slice(&mask)?)?,
            place(Tensor::f_from_slice(&segments)?)?,
        ))
    }

    /// Dropout from the run's generators (see [`dropout`]).
    fn dropout(&self, x: &Tensor) -> Result<Tensor> {
        dropout(x, self.config.dropout, self.training)
    }

    fn attention(&self, layer: &EncoderLayer, x: &Tensor, keep: &Tensor) -> Result<Tensor> {
        let size = x.size();
        let (batch, length) = (size[0], size[1]);
        let (dim, heads) = (self.config.dim as i64, self.config.heads as i64);
        let head_dim = dim / heads;
        let qkv = layer.in_proj.apply(&self.params, x)?;
        let split = |i: i64| -> Result<Tensor> {
            Ok(qkv
                .f_narrow(-1, i * dim, dim)?
                .f_view([batch, length, heads, head_dim])?
                .f_transpose(1, 2)?)
        };
        let (q, k, v) = (split(0)?, split(1)?, split(2)?);
        let attended = attention(&q, &k, &v, keep, self.config.dropout, self.training)?;
        let attended = attended
            .f_transpose(1, 2)?
            .f_reshape([batch, length, dim])?;
        layer.out_proj.apply(&self.params, &attended)
    }
}

impl Model for TransformerCrossEncoder {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let (query, document) = input.text("TransformerCrossEncoder")?;
        let (ids, mask, segments) = self.join(query, document)?;
        let length = ids.size()[1];
        let positions = Tensor::f_arange(length, (Kind::Int64, ids.device()))?;
        let tokens =
            Tensor::f_embedding(self.params.get(self.token_embedding), &ids, 0, false, false)?;
        let places = Tensor::f_embedding(
            self.params.get(self.position_embedding),
            &positions,
            -1,
            false,
            false,
        )?;
        let parts = Tensor::f_embedding(
            self.params.get(self.segment_embedding),
            &segments,
            -1,
            false,
            false,
        )?;
        let mut x = self.dropout(&tokens.f_add(&places.f_unsqueeze(0)?)?.f_add(&parts)?)?;
        // Boolean mask: true where a key takes part; broadcast over heads and queries.
        let keep = mask.f_unsqueeze(1)?.f_unsqueeze(1)?;
        for layer in &self.layers {
            let attended = self.attention(layer, &x, &keep)?;
            x = layer
                .norm1
                .apply(&self.params, &x.f_add(&self.dropout(&attended)?)?)?;
            let hidden = self.dropout(&layer.linear1.apply(&self.params, &x)?.f_relu()?)?;
            let ff = layer.linear2.apply(&self.params, &hidden)?;
            x = layer
                .norm2
                .apply(&self.params, &x.f_add(&self.dropout(&ff)?)?)?;
        }
        let real = mask.f_to_kind(x.kind())?.f_unsqueeze(-1)?;
        let count = real.f_sum_dim_intlist([1i64].as_slice(), false, None::<Kind>)?;
        let mean = x
            .f_mul(&real)?
            .f_sum_dim_intlist([1i64].as_slice(), false, None::<Kind>)?
            .f_div(&count)?;
        Ok(self.score.apply(&self.params, &mean)?.f_squeeze_dim(-1)?)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.params.named()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.params.share(target, source, "TransformerCrossEncoder")
    }

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}
