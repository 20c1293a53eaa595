//! [`DualEncoder`]: query and document as mean token embeddings, scored by cosine similarity or
//! dot product; parameters named as PyTorch's `EmbeddingBag`.

use tch::{Kind, Tensor};

use super::params::{ParamId, Params};
use super::{Model, NamedParameter};
use crate::config::{EmbeddingDualEncoderConfig, Similarity};
use crate::data::{ScoreInput, Tokens};
use crate::rng::Rng;
use crate::Result;

/// A dual encoder: query and document are each the mean of their token embeddings
/// (`torch.nn.EmbeddingBag(vocab_size, dim, mode="mean", padding_idx=0)` named `embedding`),
/// and the score is their cosine similarity or dot product.
#[derive(Debug)]
pub struct DualEncoder {
    params: Params,
    embedding: ParamId,
    similarity: Similarity,
}

/// Mean of the embeddings of each row's real tokens, `B × D`.
pub(crate) fn mean_embedding(weight: &Tensor, tokens: &Tokens) -> Result<Tensor> {
    let ids = tokens.ids.f_to_device(weight.device())?;
    let embedded = Tensor::f_embedding(weight, &ids, 0, false, false)?;
    let mask = tokens
        .mask()?
        .f_to_device(weight.device())?
        .f_to_kind(embedded.kind())?;
    let summed = embedded.f_mul(&mask.f_unsqueeze(-1)?)?.f_sum_dim_intlist(
        [1i64].as_slice(),
        false,
        None::<Kind>,
    )?;
    let counts = mask
        .f_sum_dim_intlist([1i64].as_slice(), true, None::<Kind>)?
        .f_clamp_min(1.0)?;
    Ok(summed.f_div(&counts)?)
}

impl DualEncoder {
    /// A fresh model: embeddings drawn from N(0, 1) with `rng`, padding row zero.
    ///
    /// # Errors
    /// A libtorch error while creating the parameters.
    pub fn new(config: &EmbeddingDualEncoderConfig, rng: &mut Rng) -> Result<Self> {
        let mut params = Params::default();
        let embedding = params.normal(
            rng,
            "embedding.weight",
            &[config.vocab_size as i64, config.dim as i64],
            Some(0),
        )?;
        Ok(DualEncoder {
            params,
            embedding,
            similarity: config.similarity,
        })
    }
}

impl Model for DualEncoder {
    fn forward(&self, input: &ScoreInput) -> Result<Tensor> {
        let (query, document) = input.text("EmbeddingDualEncoder")?;
        let weight = self.params.get(self.embedding);
        let q = mean_embedding(weight, query)?;
        let d = mean_embedding(weight, document)?;
        Ok(match self.similarity {
            Similarity::Cosine => Tensor::f_cosine_similarity(&q, &d, 1, 1e-8)?,
            Similarity::Dot => {
                q.f_mul(&d)?
                    .f_sum_dim_intlist([1i64].as_slice(), false, None::<Kind>)?
            }
        })
    }

    fn named_parameters(&self) -> Vec<NamedParameter> {
        self.params.named()
    }

    fn share(&mut self, target: &str, source: &str) -> Result<()> {
        self.params.share(target, source, "EmbeddingDualEncoder")
    }
}
