//! What a model scores, [`ScoreInput`] (feature vectors, token ids or encoded texts), with the
//! padded token batches ([`Tokens`]) and the back-to-back token storage ([`TokenTable`]).

use tch::{Device, Kind, Tensor};

use crate::{Error, Result};

/// Token ids of a batch of sequences, right-padded with 0 to the longest one.
#[derive(Debug)]
pub struct Tokens {
    /// `B × L` int64 ids; positions at or past a row's length hold 0.
    pub ids: Tensor,
    /// `B` int64 lengths.
    pub lengths: Tensor,
}

impl Tokens {
    /// Rows `index` (int64), trimmed to the longest selected sequence.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn select(&self, index: &Tensor) -> Result<Self> {
        let lengths = self.lengths.f_index_select(0, index)?;
        let longest = if lengths.numel() == 0 {
            0
        } else {
            lengths.f_max()?.f_int64_value(&[])?
        };
        let ids = self
            .ids
            .f_index_select(0, index)?
            .f_narrow(1, 0, longest.max(1))?;
        Ok(Tokens { ids, lengths })
    }

    /// Another handle on the same tensors (no copy).
    pub fn shallow_clone(&self) -> Self {
        Tokens {
            ids: self.ids.shallow_clone(),
            lengths: self.lengths.shallow_clone(),
        }
    }

    /// The mask of real (non-padding) positions, `B × L` bool.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn mask(&self) -> Result<Tensor> {
        let positions = Tensor::f_arange(self.ids.size()[1], (Kind::Int64, self.ids.device()))?;
        Ok(positions
            .f_unsqueeze(0)?
            .f_lt_tensor(&self.lengths.f_unsqueeze(1)?)?)
    }

    /// Length of the longest sequence (0 when empty).
    pub fn max_length(&self) -> i64 {
        self.ids.size().get(1).copied().unwrap_or(0)
    }

    /// These rows followed by `other`'s, padded with 0 to the wider of the two.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn concat(&self, other: &Tokens) -> Result<Self> {
        let width = self.max_length().max(other.max_length());
        Ok(Tokens {
            ids: Tensor::f_cat(
                &[
                    pad_columns(&self.ids, width, 0)?,
                    pad_columns(&other.ids, width, 0)?,
                ],
                0,
            )?,
            lengths: Tensor::f_cat(&[&self.lengths, &other.lengths], 0)?,
        })
    }
}

/// `rows` (`B × L`) widened to `width` columns filled with `value` on the right.
pub(crate) fn pad_columns(rows: &Tensor, width: i64, value: i64) -> Result<Tensor> {
    let extra = width - rows.size().get(1).copied().unwrap_or(0);
    if extra <= 0 {
        return Ok(rows.shallow_clone());
    }
    Ok(rows.f_pad([0, extra], "constant", Some(value as f64))?)
}

/// What a model scores: one row per (query, document) pair.
#[derive(Debug)]
pub enum ScoreInput {
    /// A feature vector per pair (learning-to-rank data), `B × F` float.
    Features(Tensor),
    /// The token ids of each pair's query and document (sequence models).
    Text {
        /// Query tokens.
        query: Tokens,
        /// Document tokens.
        document: Tokens,
    },
    /// Texts encoded by a Hugging Face tokenizer (pretrained text models).
    Encoded(crate::data::EncodedTexts),
}

impl ScoreInput {
    /// Number of rows.
    pub fn len(&self) -> i64 {
        let t = match self {
            ScoreInput::Features(f) => f,
            ScoreInput::Text { query, .. } => &query.ids,
            ScoreInput::Encoded(e) => return e.len(),
        };
        t.size().first().copied().unwrap_or(0)
    }

    /// Whether there is no row.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the input holds, for messages.
    pub fn describe(&self) -> &'static str {
        match self {
            ScoreInput::Features(_) => "feature vectors",
            ScoreInput::Text { .. } => "token sequences",
            ScoreInput::Encoded(_) => "encoded texts",
        }
    }

    /// Rows `index` (an int64 tensor), in that order.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn select(&self, index: &Tensor) -> Result<Self> {
        Ok(match self {
            ScoreInput::Features(f) => ScoreInput::Features(f.f_index_select(0, index)?),
            ScoreInput::Text { query, document } => ScoreInput::Text {
                query: query.select(index)?,
                document: document.select(index)?,
            },
            ScoreInput::Encoded(e) => ScoreInput::Encoded(e.select(index)?),
        })
    }

    /// These rows followed by `other`'s, token sequences padded to the longer of the two: the
    /// positive and negative halves of a pairwise batch as one input, for one forward.
    ///
    /// # Errors
    /// [`Error::Config`] at the sampler when the halves differ in kind or feature count; a
    /// libtorch error.
    pub fn concat(&self, other: &ScoreInput) -> Result<Self> {
        let mismatch = |what: String| {
            Error::config(
                "learner.trainer.sampler",
                format!(
                    "the positive rows of a pair are {what}; a sampler gives both documents of \
                     a pair the same kind of input"
                ),
            )
        };
        Ok(match (self, other) {
            (ScoreInput::Features(a), ScoreInput::Features(b)) => {
                let (wa, wb) = (a.size().get(1).copied(), b.size().get(1).copied());
                if wa != wb {
                    return Err(mismatch(format!(
                        "{} features wide but the negative ones {}",
                        wa.unwrap_or(0),
                        wb.unwrap_or(0)
                    )));
                }
                ScoreInput::Features(Tensor::f_cat(&[a, b], 0)?)
            }
            (
                ScoreInput::Text { query, document },
                ScoreInput::Text {
                    query: other_query,
                    document: other_document,
                },
            ) => ScoreInput::Text {
                query: query.concat(other_query)?,
                document: document.concat(other_document)?,
            },
            (ScoreInput::Encoded(a), ScoreInput::Encoded(b)) => match a.concat(b)? {
                Some(both) => ScoreInput::Encoded(both),
                None => {
                    return Err(mismatch(format!(
                        "{} but the negative ones {}",
                        a.layout(),
                        b.layout()
                    )))
                }
            },
            (a, b) => {
                return Err(mismatch(format!(
                    "{} but the negative ones {}",
                    a.describe(),
                    b.describe()
                )))
            }
        })
    }

    /// The same rows on `device`.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn to_device(&self, device: Device) -> Result<Self> {
        self.map(|t| Ok(t.f_to_device(device)?))
    }

    /// The same rows with every tensor passed through `f` (to move or convert them).
    ///
    /// # Errors
    /// What `f` returns.
    pub fn map(&self, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Self> {
        let tokens = |t: &Tokens| -> Result<Tokens> {
            Ok(Tokens {
                ids: f(&t.ids)?,
                lengths: f(&t.lengths)?,
            })
        };
        Ok(match self {
            ScoreInput::Features(x) => ScoreInput::Features(f(x)?),
            ScoreInput::Text { query, document } => ScoreInput::Text {
                query: tokens(query)?,
                document: tokens(document)?,
            },
            ScoreInput::Encoded(e) => ScoreInput::Encoded(e.map(&f)?),
        })
    }

    /// The features, or an error naming `model` when the input holds token sequences.
    ///
    /// # Errors
    /// [`Error::Config`] for token sequences.
    pub fn features(&self, model: &str) -> Result<&Tensor> {
        match self {
            ScoreInput::Features(f) => Ok(f),
            other => Err(Error::config(
                "learner.model",
                format!(
                    "{model} scores feature vectors, but the data gives {}; use a sequence model",
                    other.describe()
                ),
            )),
        }
    }

    /// The encoded texts, or an error naming `model` for other inputs.
    ///
    /// # Errors
    /// [`Error::Config`] for feature vectors or token ids.
    pub fn encoded(&self, model: &str) -> Result<&crate::data::EncodedTexts> {
        match self {
            ScoreInput::Encoded(e) => Ok(e),
            other => Err(Error::config(
                "learner.model",
                format!(
                    "{model} scores texts encoded by its tokenizer, but the data gives {}; \
                     use a text sampler (TextTripletSampler)",
                    other.describe()
                ),
            )),
        }
    }

    /// The query and document tokens, or an error naming `model` for feature vectors.
    ///
    /// # Errors
    /// [`Error::Config`] for feature vectors.
    pub fn text(&self, model: &str) -> Result<(&Tokens, &Tokens)> {
        match self {
            ScoreInput::Text { query, document } => Ok((query, document)),
            other => Err(Error::config(
                "learner.model",
                format!(
                    "{model} scores token sequences, but the data gives {}; use a feature model",
                    other.describe()
                ),
            )),
        }
    }
}

/// Variable-length token sequences stored back to back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenTable {
    ids: Vec<i64>,
    /// Sequence `i` is `ids[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<usize>,
}

impl TokenTable {
    /// An empty table.
    pub fn new() -> Self {
        TokenTable {
            ids: Vec::new(),
            offsets: vec![0],
        }
    }

    /// Appends a sequence.
    pub fn push(&mut self, ids: impl IntoIterator<Item = i64>) {
        self.ids.extend(ids);
        self.offsets.push(self.ids.len());
    }

    /// Number of sequences.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether the table holds no sequence.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sequence `i`.
    pub fn get(&self, i: usize) -> &[i64] {
        &self.ids[self.offsets[i]..self.offsets[i + 1]]
    }

    /// The largest id (0 when empty).
    pub fn max_id(&self) -> i64 {
        self.ids.iter().copied().max().unwrap_or(0)
    }

    /// Sequences `rows`, padded into a [`Tokens`] batch.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn batch(&self, rows: impl ExactSizeIterator<Item = usize> + Clone) -> Result<Tokens> {
        let longest = rows.clone().map(|r| self.get(r).len()).max().unwrap_or(0);
        let width = longest.max(1);
        let mut ids = vec![0i64; rows.len() * width];
        let mut lengths = Vec::with_capacity(rows.len());
        for (k, r) in rows.enumerate() {
            let seq = self.get(r);
            ids[k * width..k * width + seq.len()].copy_from_slice(seq);
            lengths.push(seq.len() as i64);
        }
        Ok(Tokens {
            ids: Tensor::f_from_slice(&ids)?.f_view([lengths.len() as i64, width as i64])?,
            lengths: Tensor::f_from_slice(&lengths)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> TokenTable {
        let mut t = TokenTable::new();
        t.push([5, 6, 7]);
        t.push([8]);
        t.push([9, 10]);
        t
    }

    #[test]
    fn batches_pad_to_the_longest_row_and_keep_lengths() {
        let b = table().batch([1usize, 2].into_iter()).unwrap();
        assert_eq!(b.ids.size(), vec![2, 2]);
        assert_eq!(
            Vec::<i64>::try_from(b.ids.flatten(0, -1)).unwrap(),
            vec![8, 0, 9, 10]
        );
        assert_eq!(Vec::<i64>::try_from(&b.lengths).unwrap(), vec![1, 2]);
        let mask = Vec::<bool>::try_from(b.mask().unwrap().flatten(0, -1)).unwrap();
        assert_eq!(mask, vec![true, false, true, true]);
    }

    #[test]
    fn selecting_rows_trims_padding_to_the_selection() {
        let all = table().batch(0..3).unwrap();
        let some = all.select(&Tensor::from_slice(&[1i64, 2])).unwrap();
        assert_eq!(some.max_length(), 2);
        assert_eq!(
            Vec::<i64>::try_from(some.ids.flatten(0, -1)).unwrap(),
            vec![8, 0, 9, 10]
        );
    }

    #[test]
    fn concatenated_halves_are_padded_to_the_longer() {
        let t = table();
        let a = ScoreInput::Text {
            query: t.batch([1usize, 1].into_iter()).unwrap(),
            document: t.batch([0usize, 1].into_iter()).unwrap(),
        };
        let b = ScoreInput::Text {
            query: t.batch([2usize, 2].into_iter()).unwrap(),
            document: t.batch([1usize, 2].into_iter()).unwrap(),
        };
        let ScoreInput::Text { query, document } = a.concat(&b).unwrap() else {
            panic!("kind changed")
        };
        assert_eq!(
            Vec::<i64>::try_from(query.ids.flatten(0, -1)).unwrap(),
            vec![8, 0, 8, 0, 9, 10, 9, 10]
        );
        assert_eq!(
            Vec::<i64>::try_from(&query.lengths).unwrap(),
            vec![1, 1, 2, 2]
        );
        assert_eq!(document.ids.size(), vec![4, 3]);
        assert_eq!(
            Vec::<i64>::try_from(document.ids.flatten(0, -1)).unwrap(),
            vec![5, 6, 7, 8, 0, 0, 8, 0, 0, 9, 10, 0]
        );
        assert_eq!(
            Vec::<i64>::try_from(&document.lengths).unwrap(),
            vec![3, 1, 1, 2]
        );
        let f =
            |cols: i64| ScoreInput::Features(Tensor::ones([2, cols], (Kind::Float, Device::Cpu)));
        assert_eq!(f(3).concat(&f(3)).unwrap().len(), 4);
        let err = f(3).concat(&f(4)).unwrap_err().to_string();
        assert!(
            err.starts_with("learner.trainer.sampler: the positive rows of a pair are 3 features wide but the negative ones 4"),
            "{err}"
        );
        let err = f(3).concat(&a).unwrap_err().to_string();
        assert!(
            err.contains("are feature vectors but the negative ones token sequences"),
            "{err}"
        );
    }

    #[test]
    fn a_feature_model_refuses_tokens_naming_itself() {
        let t = table();
        let input = ScoreInput::Text {
            query: t.batch(0..1).unwrap(),
            document: t.batch(1..2).unwrap(),
        };
        let err = input.features("MlpScorer").unwrap_err().to_string();
        assert!(err.contains("MlpScorer scores feature vectors"), "{err}");
    }
}
