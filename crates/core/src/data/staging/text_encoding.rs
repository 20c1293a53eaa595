//! Texts encoded by Hugging Face tokenizers for text models: pairs for cross-encoders or apart
//! for bi-encoders ([`TextEncoding`], [`EncodedTexts`]), with counts of truncated inputs.

use std::sync::Arc;

use tch::{Kind, Tensor};

use crate::data::staging::score_input::pad_columns;
use crate::data::ScoreInput;
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
    /// The id padding positions hold (RoBERTa counts positions from the tokens that are not
    /// padding).
    pub pad_id: i64,
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
            pad_id: batch.pad_id,
        })
    }

    /// These rows followed by `other`'s, padded to the longer of the two (ids with the
    /// padding token).
    ///
    /// # Errors
    /// A libtorch error.
    pub fn concat(&self, other: &EncodedRows) -> Result<Self> {
        let width = self.ids.size()[1].max(other.ids.size()[1]);
        let join = |a: &Tensor, b: &Tensor, value: i64| -> Result<Tensor> {
            Ok(Tensor::f_cat(
                &[pad_columns(a, width, value)?, pad_columns(b, width, value)?],
                0,
            )?)
        };
        Ok(EncodedRows {
            ids: join(&self.ids, &other.ids, self.pad_id)?,
            type_ids: join(&self.type_ids, &other.type_ids, 0)?,
            mask: join(&self.mask, &other.mask, 0)?,
            pad_id: self.pad_id,
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
            pad_id: self.pad_id,
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
            pad_id: self.pad_id,
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
            pad_id: self.pad_id,
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

    /// These rows followed by `other`'s (see [`EncodedRows::concat`]), or `None` when one
    /// holds pairs and the other texts encoded apart.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn concat(&self, other: &EncodedTexts) -> Result<Option<Self>> {
        Ok(Some(match (self, other) {
            (EncodedTexts::Pairs(a), EncodedTexts::Pairs(b)) => EncodedTexts::Pairs(a.concat(b)?),
            (
                EncodedTexts::Separate { query, document },
                EncodedTexts::Separate {
                    query: other_query,
                    document: other_document,
                },
            ) => EncodedTexts::Separate {
                query: query.concat(other_query)?,
                document: document.concat(other_document)?,
            },
            _ => return Ok(None),
        }))
    }

    /// How the texts were encoded, for messages.
    pub fn layout(&self) -> &'static str {
        match self {
            EncodedTexts::Pairs(_) => "(query, document) pairs encoded together",
            EncodedTexts::Separate { .. } => "queries and documents encoded apart",
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

fn pairs<'a>(queries: &[&'a str], documents: &[&'a str]) -> Vec<TextInput<'a>> {
    queries
        .iter()
        .zip(documents)
        .map(|(q, d)| TextInput::Pair(q, d))
        .collect()
}

fn singles<'a>(texts: &[&'a str]) -> Vec<TextInput<'a>> {
    texts.iter().map(|t| TextInput::Single(t)).collect()
}

/// The indices of `counts`, longest first (equal counts in the given order): batches of
/// neighbours are padded to nearly their own lengths, as sentence-transformers sorts its inputs.
pub fn longest_first(counts: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(counts[i]));
    order
}

/// How many texts (or pairs) a batch of scoring or embedding takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchLimit {
    /// Rows at most.
    pub rows: usize,
    /// Tokens at most, counted as the padded batch holds them (rows × its longest); a row
    /// longer than this goes alone.
    pub tokens: Option<usize>,
}

impl BatchLimit {
    /// `rows` rows a batch, whatever their lengths.
    pub fn rows(rows: usize) -> Self {
        BatchLimit { rows, tokens: None }
    }

    /// `order` (indices of `counts`, longest first: see [`longest_first`]) cut into batches
    /// within this limit: in length order, short rows go many at a time and long ones few.
    pub fn batches<'a>(&self, order: &'a [usize], counts: &[usize]) -> Vec<&'a [usize]> {
        let mut batches = Vec::new();
        let mut rest = order;
        while let Some(&first) = rest.first() {
            // The first row is the batch's longest: the padded batch holds it once per row.
            let fit = match self.tokens {
                Some(tokens) => tokens / counts[first].max(1),
                None => usize::MAX,
            };
            let (batch, after) = rest.split_at(fit.min(self.rows).clamp(1, rest.len()));
            batches.push(batch);
            rest = after;
        }
        batches
    }
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
    /// The tokens each (`queries[k]`, `documents[k]`) record takes as this encoding cuts it:
    /// its pair, or its query and its document together.
    ///
    /// # Errors
    /// A tokenizer error.
    pub fn token_counts(&self, queries: &[&str], documents: &[&str]) -> Result<Vec<usize>> {
        match self {
            TextEncoding::Pairs(tokenizer) => tokenizer.token_counts(&pairs(queries, documents)),
            TextEncoding::Separate { query, document } => {
                let q = query.token_counts(&singles(queries))?;
                let d = document.token_counts(&singles(documents))?;
                Ok(q.iter().zip(&d).map(|(a, b)| a + b).collect())
            }
        }
    }

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
                let batch = tokenizer.encode_batch(&pairs(queries, documents))?;
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

#[cfg(test)]
mod tests {
    #[test]
    fn batches_in_length_order_keep_within_rows_and_padded_tokens() {
        use super::{longest_first, BatchLimit};
        let counts = [3, 9, 3, 12, 1];
        let order = longest_first(&counts);
        assert_eq!(order, [3, 1, 0, 2, 4]);
        let by_tokens = BatchLimit {
            rows: 4,
            tokens: Some(20),
        };
        // 12 alone (two would pad to 24), then 9 with the 3 after it, then the rest.
        let expected: [&[usize]; 3] = [&[3], &[1, 0], &[2, 4]];
        assert_eq!(by_tokens.batches(&order, &counts), expected);
        // A row longer than the budget still goes, alone; rows cap a budget of short ones.
        let tight = BatchLimit {
            rows: 2,
            tokens: Some(6),
        };
        let expected: [&[usize]; 4] = [&[3], &[1], &[0, 2], &[4]];
        assert_eq!(tight.batches(&order, &counts), expected);
        let expected: [&[usize]; 3] = [&[3, 1], &[0, 2], &[4]];
        assert_eq!(BatchLimit::rows(2).batches(&order, &counts), expected);
        assert!(BatchLimit::rows(2).batches(&[], &counts).is_empty());
    }

    use super::*;

    /// Rows of the given ids, each padded with `pad` (id 1, as RoBERTa's) to the longest.
    fn rows(texts: &[&[i64]], pad: i64) -> EncodedRows {
        let width = texts.iter().map(|t| t.len()).max().unwrap();
        let mut ids = vec![pad; texts.len() * width];
        let mut mask = vec![0i64; texts.len() * width];
        for (r, t) in texts.iter().enumerate() {
            ids[r * width..r * width + t.len()].copy_from_slice(t);
            mask[r * width..r * width + t.len()].fill(1);
        }
        let shape = [texts.len() as i64, width as i64];
        let ids = Tensor::from_slice(&ids).view(shape);
        EncodedRows {
            type_ids: ids.zeros_like(),
            mask: Tensor::from_slice(&mask).view(shape),
            ids,
            pad_id: pad,
        }
    }

    fn values(t: &Tensor) -> Vec<i64> {
        Vec::<i64>::try_from(t.flatten(0, -1)).unwrap()
    }

    #[test]
    fn concatenated_rows_are_padded_with_the_padding_token() {
        let short = rows(&[&[0, 5, 2], &[0, 2]], 1);
        let long = rows(&[&[0, 7, 8, 9, 2]], 1);
        let both = short.concat(&long).unwrap();
        assert_eq!(
            values(&both.ids),
            vec![0, 5, 2, 1, 1, 0, 2, 1, 1, 1, 0, 7, 8, 9, 2]
        );
        assert_eq!(
            values(&both.mask),
            vec![1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 1]
        );
        assert_eq!(values(&both.lengths().unwrap()), vec![3, 2, 5]);
        assert_eq!(both.type_ids.size(), vec![3, 5]);

        let pairs = EncodedTexts::Pairs(short.concat(&short).unwrap());
        assert_eq!(pairs.len(), 4);
        let apart = EncodedTexts::Separate {
            query: rows(&[&[0, 2]], 1),
            document: rows(&[&[0, 5, 2]], 1),
        };
        let apart_too = EncodedTexts::Separate {
            query: rows(&[&[0, 4, 4, 2]], 1),
            document: rows(&[&[0, 2]], 1),
        };
        let EncodedTexts::Separate { query, document } = apart.concat(&apart_too).unwrap().unwrap()
        else {
            panic!("layout changed")
        };
        assert_eq!(values(&query.ids), vec![0, 2, 1, 1, 0, 4, 4, 2]);
        assert_eq!(values(&document.ids), vec![0, 5, 2, 0, 2, 1]);
        assert!(pairs.concat(&apart).unwrap().is_none());
    }
}
