use std::sync::Arc;

use tch::{Kind, Tensor};

use super::ScoreInput;
use crate::text::{EncodedBatch, TextInput, TextTokenizer};
use crate::Result;

/// Texts encoded by a Hugging Face tokenizer, right-padded: `B × T` int64 each.
#[derive(Debug)]
pub struct EncodedRows {
    /// Token ids.
    pub ids: Tensor,
    /// Token type (segment) ids.
    pub type_ids: Tensor,
    /// 1 on real tokens, 0 on padding.
    pub mask: Tensor,
}

impl EncodedRows {
    /// The tensors of an encoded batch.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn from_batch(batch: &EncodedBatch) -> Result<Self> {
        let shape = [batch.rows as i64, batch.length as i64];
        let tensor = |v: &[i64]| -> Result<Tensor> { Ok(Tensor::f_from_slice(v)?.f_view(shape)?) };
        Ok(EncodedRows {
            ids: tensor(&batch.ids)?,
            type_ids: tensor(&batch.type_ids)?,
            mask: tensor(&batch.mask)?,
        })
    }

    /// Real tokens per row, `B` int64.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn lengths(&self) -> Result<Tensor> {
        Ok(self
            .mask
            .f_sum_dim_intlist([1i64].as_slice(), false, Kind::Int64)?)
    }

    /// Rows `index`, trimmed to the longest selected row.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn select(&self, index: &Tensor) -> Result<Self> {
        let mask = self.mask.f_index_select(0, index)?;
        let longest = if mask.numel() == 0 {
            1
        } else {
            mask.f_sum_dim_intlist([1i64].as_slice(), false, Kind::Int64)?
                .f_max()?
                .f_int64_value(&[])?
                .max(1)
        };
        let cut = |t: &Tensor| -> Result<Tensor> {
            Ok(t.f_index_select(0, index)?.f_narrow(1, 0, longest)?)
        };
        Ok(EncodedRows {
            ids: cut(&self.ids)?,
            type_ids: cut(&self.type_ids)?,
            mask: mask.f_narrow(1, 0, longest)?,
        })
    }

    /// The same rows with every tensor passed through `f`.
    ///
    /// # Errors
    /// What `f` returns.
    pub fn map(&self, f: &impl Fn(&Tensor) -> Result<Tensor>) -> Result<Self> {
        Ok(EncodedRows {
            ids: f(&self.ids)?,
            type_ids: f(&self.type_ids)?,
            mask: f(&self.mask)?,
        })
    }

    /// The rows stretched or cut to `length` real tokens (their ids repeated), for probe
    /// batches of a given length.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn with_length(&self, length: i64) -> Result<Self> {
        let length = length.max(1);
        let width = self.ids.size()[1].max(1);
        let repeats = (length + width - 1) / width;
        let ids = self.ids.f_repeat([1, repeats])?.f_narrow(1, 0, length)?;
        Ok(EncodedRows {
            type_ids: ids.f_zeros_like()?,
            mask: ids.f_ones_like()?,
            ids,
        })
    }
}

/// What a Hugging Face text model reads.
#[derive(Debug)]
pub enum EncodedTexts {
    /// `[CLS] query [SEP] document [SEP]` per row (cross-encoders).
    Pairs(EncodedRows),
    /// Queries and documents encoded apart (bi-encoders).
    Separate {
        /// The queries.
        query: EncodedRows,
        /// The documents.
        document: EncodedRows,
    },
}

impl EncodedTexts {
    /// Number of rows.
    pub fn len(&self) -> i64 {
        let rows = match self {
            EncodedTexts::Pairs(r) => r,
            EncodedTexts::Separate { query, .. } => query,
        };
        rows.ids.size().first().copied().unwrap_or(0)
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rows `index`.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn select(&self, index: &Tensor) -> Result<Self> {
        Ok(match self {
            EncodedTexts::Pairs(r) => EncodedTexts::Pairs(r.select(index)?),
            EncodedTexts::Separate { query, document } => EncodedTexts::Separate {
                query: query.select(index)?,
                document: document.select(index)?,
            },
        })
    }

    /// Every tensor passed through `f`.
    ///
    /// # Errors
    /// What `f` returns.
    pub fn map(&self, f: &impl Fn(&Tensor) -> Result<Tensor>) -> Result<Self> {
        Ok(match self {
            EncodedTexts::Pairs(r) => EncodedTexts::Pairs(r.map(f)?),
            EncodedTexts::Separate { query, document } => EncodedTexts::Separate {
                query: query.map(f)?,
                document: document.map(f)?,
            },
        })
    }

    /// Tokens per row that cost attention (the pair's length, or the longer of query and
    /// document), `B` int64: the batchers' `l`.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn lengths(&self) -> Result<Tensor> {
        match self {
            EncodedTexts::Pairs(r) => r.lengths(),
            EncodedTexts::Separate { query, document } => {
                Ok(query.lengths()?.f_maximum(&document.lengths()?)?)
            }
        }
    }

    /// The rows at `length` tokens (see [`EncodedRows::with_length`]).
    ///
    /// # Errors
    /// A libtorch error.
    pub fn with_length(&self, length: i64) -> Result<Self> {
        Ok(match self {
            EncodedTexts::Pairs(r) => EncodedTexts::Pairs(r.with_length(length)?),
            EncodedTexts::Separate { query, document } => EncodedTexts::Separate {
                query: query.with_length(length)?,
                document: document.with_length(length)?,
            },
        })
    }
}

/// Inputs cut by truncation among inputs encoded (an input is a pair for a cross-encoder, a
/// text for a bi-encoder).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Truncation {
    /// Inputs cut to the model's `max_length`.
    pub cut: u64,
    /// Inputs encoded.
    pub inputs: u64,
}

impl Truncation {
    /// Both counts summed.
    pub fn plus(self, other: Truncation) -> Truncation {
        Truncation {
            cut: self.cut + other.cut,
            inputs: self.inputs + other.inputs,
        }
    }

    /// What was counted after `earlier` (a previous value of the same counter).
    pub fn since(self, earlier: Truncation) -> Truncation {
        Truncation {
            cut: self.cut.saturating_sub(earlier.cut),
            inputs: self.inputs.saturating_sub(earlier.inputs),
        }
    }
}

fn singles<'a>(texts: &[&'a str]) -> Vec<TextInput<'a>> {
    texts.iter().map(|t| TextInput::Single(t)).collect()
}

/// How a text model wants its (query, document) records encoded, with its tokenizers.
#[derive(Debug, Clone)]
pub enum TextEncoding {
    /// As pairs, by one tokenizer (cross-encoders).
    Pairs(Arc<TextTokenizer>),
    /// Apart, queries by one tokenizer and documents by another (bi-encoders).
    Separate {
        /// For the queries.
        query: Arc<TextTokenizer>,
        /// For the documents.
        document: Arc<TextTokenizer>,
    },
}

impl TextEncoding {
    /// The model input for `queries[k]` with `documents[k]`, and how many inputs were cut.
    ///
    /// # Errors
    /// A tokenizer or libtorch error.
    pub fn encode(&self, queries: &[&str], documents: &[&str]) -> Result<(ScoreInput, Truncation)> {
        let counted = |cut: usize, inputs: usize| Truncation {
            cut: cut as u64,
            inputs: inputs as u64,
        };
        Ok(match self {
            TextEncoding::Pairs(tokenizer) => {
                let pairs: Vec<TextInput> = queries
                    .iter()
                    .zip(documents)
                    .map(|(q, d)| TextInput::Pair(q, d))
                    .collect();
                let batch = tokenizer.encode_batch(&pairs)?;
                (
                    ScoreInput::Encoded(EncodedTexts::Pairs(EncodedRows::from_batch(&batch)?)),
                    counted(batch.truncated, batch.rows),
                )
            }
            TextEncoding::Separate { query, document } => {
                let q = query.encode_batch(&singles(queries))?;
                let d = document.encode_batch(&singles(documents))?;
                (
                    ScoreInput::Encoded(EncodedTexts::Separate {
                        query: EncodedRows::from_batch(&q)?,
                        document: EncodedRows::from_batch(&d)?,
                    }),
                    counted(q.truncated + d.truncated, q.rows + d.rows),
                )
            }
        })
    }
}
