//! [`Drmm`]: DRMM (Guo et al., 2016), histograms of query-document term similarities scored by a
//! feed-forward network and weighed by a term gate; parameters named as in PyTorch.

use tch::{Kind, Tensor};

use super::params::{Linear, ParamId, Params};
use super::{Model, NamedParameter};
use crate::config::DrmmConfig;
use crate::data::{ScoreInput, Tokens};
use crate::rng::Rng;
use crate::Result;

/// Cosine similarities at or above this count as exact matches (the last histogram bin).
const EXACT: f64 = 1.0 - 1e-6;

/// DRMM (Guo et al., 2016). For each query term, the histogram of its cosine similarities to the
/// document's terms (bins over [-1, 1), the last bin for exact matches; log(1 + count)) goes
/// through a feed-forward network to a term score; a softmax over the query terms' gates
/// (a linear map of their embeddings) weighs the term scores into the pair's score.
///
/// PyTorch layout: `embedding` (`nn.Embedding(vocab_size, dim, padding_idx=0)`), `ffn`
/// (`nn.Sequential(Linear, Tanh, ..., Linear(h, 1))`), `gate` (`nn.Linear(dim, 1, bias=False)`).
#[derive(Debug)]
pub struct Drmm {
    params: Params,
    embedding: ParamId,
    ffn: Vec<Linear>,
    gate: Linear,
    bins: i64,
}

fn unit_rows(x: &Tensor) -> Result<Tensor> {
    let norm = x
        .f_norm_scalaropt_dim(2, [-1i64].as_slice(), true)?
        .f_clamp_min(1e-8)?;
    Ok(x.f_div(&norm)?)
}

impl Drmm {
    /// A fresh model with PyTorch's default initialisation drawn from `rng`.
    ///
    /// # Errors
    /// A libtorch error while creating the parameters.
    pub fn new(config: &DrmmConfig, rng: &mut Rng) -> Result<Self> {
        let mut params = Params::default();
        let embedding = params.normal(
            rng,
            "embedding.weight",
            &[config.vocab_size as i64, config.dim as i64],
            Some(0),
        )?;
        let mut ffn = Vec::new();
        let mut width = config.bins as i64;
        for (i, hidden) in config.hidden_dims.iter().map(|&h| h as i64).enumerate() {
            ffn.push(params.linear(rng, &format!("ffn.{}", 2 * i), width, hidden, true)?);
            width = hidden;
        }
        let last = 2 * config.hidden_dims.len();
        ffn.push(params.linear(rng, &format!("ffn.{last}"), width, 1, true)?);
        let gate = params.linear(rng, "gate", config.dim as i64, 1, false)?;
        Ok(Drmm {
            params,
            embedding,
            ffn,
            gate,
            bins: config.bins as i64,
        })
    }

    fn embed(&self, tokens: &Tokens) -> Result<(Tensor, Tensor)> {
        let weight = self.params.get(self.embedding);
        let ids = tokens.ids.f_to_device(weight.device())?;
        let mask = tokens.mask()?.f_to_device(weight.device())?;
        Ok((Tensor::f_embedding(weight, &ids, 0, false, false)?, mask))
    }

    /// log(1 + count) histograms, `B × Lq × bins`.
    fn histograms(&self, query: &Tensor, document: &Tensor, doc_mask: &Tensor) -> Result<Tensor> {
        let _no_grad = tch::no_grad_guard();
        let similarity = unit_rows(query)?.f_matmul(&unit_rows(document)?.f_transpose(1, 2)?)?;
        let top = self.bins - 1;
        let graded = similarity
            .f_add_scalar(1.0)?
            .f_mul_scalar(top as f64 / 2.0)?
            .f_floor()?
            .f_clamp(0.0, (top - 1) as f64)?;
        let bin = graded
            .f_where_scalarother(&similarity.f_lt(EXACT)?, top as f64)?
            .f_to_kind(Kind::Int64)?;
        let counts = bin
            .f_one_hot(self.bins)?
            .f_to_kind(query.kind())?
            .f_mul(
                &doc_mask
                    .f_to_kind(query.kind())?
                    .f_unsqueeze(1)?
                    .f_unsqueeze(-1)?,
            )?
            .f_sum_dim_intlist([2i64].as_slice(), false, None::<Kind>)?;
        Ok(counts.f_log1p()?)
    }
}

impl Model for Drmm {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let (query, document) = input.text("DRMM")?;
        let (q, q_mask) = self.embed(query)?;
        let (d, d_mask) = self.embed(document)?;
        let mut x = self.histograms(&q, &d, &d_mask)?;
        let last = self.ffn.len() - 1;
        for (i, layer) in self.ffn.iter().enumerate() {
            x = layer.apply(&self.params, &x)?;
            if i < last {
                x = x.f_tanh()?;
            }
        }
        let term_scores = x.f_squeeze_dim(-1)?;
        let gates = self
            .gate
            .apply(&self.params, &q)?
            .f_squeeze_dim(-1)?
            .f_masked_fill(&q_mask.f_logical_not()?, f64::NEG_INFINITY)?
            .f_softmax(1, None::<Kind>)?;
        Ok(gates
            .f_mul(&term_scores)?
            .f_sum_dim_intlist([1i64].as_slice(), false, None::<Kind>)?)
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.params.named()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.params.share(target, source, "DRMM")
    }
}
