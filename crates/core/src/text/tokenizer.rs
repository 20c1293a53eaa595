//! [`TextTokenizer`]: a Hugging Face `tokenizer.json` set to our truncation and padding, which
//! it applies to whole encodings itself (the `tokenizers` crate cuts pairs unlike Python's).

use std::path::{Path, PathBuf};

use tokenizers::utils::truncation::truncate_encodings;
use tokenizers::{Encoding, PostProcessor, Tokenizer, TruncationParams, TruncationStrategy};

use crate::{Error, Result};

/// One record to encode: a text, or a pair (`[CLS] a [SEP] b [SEP]` for BERT).
#[derive(Debug, Clone, Copy)]
pub enum TextInput<'a> {
    /// A single text.
    Single(&'a str),
    /// A pair of texts, e.g. query and document.
    Pair(&'a str, &'a str),
}

/// A batch of encodings padded to its longest record, row-major `rows × length`.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedBatch {
    /// Number of records.
    pub rows: usize,
    /// Padded length.
    pub length: usize,
    /// Token ids.
    pub ids: Vec<i64>,
    /// Token type (segment) ids.
    pub type_ids: Vec<i64>,
    /// 1 on real tokens, 0 on padding.
    pub mask: Vec<i64>,
    /// Records cut by truncation.
    pub truncated: usize,
    /// The id padding positions hold.
    pub pad_id: i64,
}

impl EncodedBatch {
    /// Real tokens of each record, special tokens included.
    pub fn row_lengths(&self) -> Vec<usize> {
        if self.length == 0 {
            return vec![0; self.rows];
        }
        self.mask
            .chunks(self.length)
            .map(|row| row.iter().filter(|&&m| m != 0).count())
            .collect()
    }
}

/// A Hugging Face tokenizer read from `tokenizer.json`, set to add special tokens, truncate
/// to `max_length` (longest first for pairs) and pad each batch to its longest record. The
/// padding and truncation stored in the file (all-MiniLM-L6-v2's pads everything to 128) are
/// replaced by these.
///
/// Truncation is applied here to whole encodings, not by the crate's encoder: `tokenizers`
/// 0.23.2 stops tokenizing each text of a pair early when truncation is set, so it misjudges
/// which text is longer and cuts pairs differently from the Python `tokenizers` (0.23.3).
#[derive(Debug)]
pub struct TextTokenizer {
    inner: Tokenizer,
    file: PathBuf,
    max_length: usize,
    pad_id: u32,
}

fn bad(file: &Path, message: impl Into<String>) -> Error {
    Error::model_directory(file.display().to_string(), message)
}

impl TextTokenizer {
    /// Reads `dir/tokenizer.json`.
    ///
    /// # Errors
    /// As [`TextTokenizer::from_file`].
    pub fn from_dir(dir: &Path, max_length: usize) -> Result<Self> {
        Self::from_file(&dir.join("tokenizer.json"), max_length)
    }

    /// Reads `file`, to encode at most `max_length` tokens, specials included.
    ///
    /// # Errors
    /// [`Error::ModelDirectory`] naming the file: missing, unreadable, without a padding token, or
    /// a `max_length` too short for the special tokens.
    pub fn from_file(file: &Path, max_length: usize) -> Result<Self> {
        if !file.is_file() {
            return Err(bad(
                file,
                "missing: the model directory needs the tokenizer.json of a Hugging Face fast \
                 tokenizer (AutoTokenizer.from_pretrained(...).save_pretrained(dir) writes it)",
            ));
        }
        let mut inner = Tokenizer::from_file(file)
            .map_err(|e| bad(file, format!("not a readable tokenizer.json: {e}")))?;
        let pad_id = pad_id(&inner).ok_or_else(|| {
            bad(
                file,
                "no padding token: neither padding settings nor a [PAD] or <pad> token",
            )
        })?;
        inner
            .with_truncation(None)
            .map_err(|e| bad(file, format!("cannot clear its truncation: {e}")))?;
        inner.with_padding(None);
        let specials = inner
            .get_post_processor()
            .map_or(0, |p| p.added_tokens(true));
        if max_length <= specials {
            return Err(bad(
                file,
                format!(
                    "max_length {max_length} leaves no room for text beside the {specials} \
                     special tokens of a pair"
                ),
            ));
        }
        Ok(TextTokenizer {
            inner,
            file: file.to_path_buf(),
            max_length,
            pad_id,
        })
    }

    /// The longest encoding, special tokens included.
    pub fn max_length(&self) -> usize {
        self.max_length
    }

    /// The id padding positions hold.
    pub fn pad_id(&self) -> u32 {
        self.pad_id
    }

    fn error(&self, e: impl std::fmt::Display) -> Error {
        bad(&self.file, format!("cannot encode the texts: {e}"))
    }

    /// One record's encoding with special tokens, truncated (longest first) to fit, and
    /// whether it was cut.
    fn finish(&self, first: Encoding, second: Option<Encoding>) -> Result<(Encoding, bool)> {
        let specials = self
            .inner
            .get_post_processor()
            .map_or(0, |p| p.added_tokens(second.is_some()));
        let params = TruncationParams {
            max_length: self.max_length - specials,
            strategy: TruncationStrategy::LongestFirst,
            ..TruncationParams::default()
        };
        let second = second.map(|mut e| {
            // The second text's tokens carry type 1, as the crate's pair encoder gives them.
            e.set_type_ids(vec![1; e.len()]);
            e
        });
        let (first, second) =
            truncate_encodings(first, second, &params).map_err(|e| self.error(e))?;
        let truncated = !first.get_overflowing().is_empty()
            || second
                .as_ref()
                .is_some_and(|e| !e.get_overflowing().is_empty());
        let done = self
            .inner
            .post_process(first, second, true)
            .map_err(|e| self.error(e))?;
        Ok((done, truncated))
    }

    /// The tokens of each input, special tokens included, after truncation: tokenised a chunk
    /// at a time, so that counting many texts never pads them all to the longest.
    ///
    /// # Errors
    /// As [`TextTokenizer::encode_batch`].
    pub fn token_counts(&self, inputs: &[TextInput]) -> Result<Vec<usize>> {
        const CHUNK: usize = 1024;
        let mut counts = Vec::with_capacity(inputs.len());
        for chunk in inputs.chunks(CHUNK) {
            counts.extend(self.encode_batch(chunk)?.row_lengths());
        }
        Ok(counts)
    }

    /// Encodes `inputs` with special tokens, truncated and padded to the longest record.
    ///
    /// # Errors
    /// [`Error::ModelDirectory`] naming the tokenizer file when the tokenizer fails.
    pub fn encode_batch(&self, inputs: &[TextInput]) -> Result<EncodedBatch> {
        let texts: Vec<&str> = inputs
            .iter()
            .flat_map(|input| match *input {
                TextInput::Single(text) => vec![text],
                TextInput::Pair(a, b) => vec![a, b],
            })
            .collect();
        let mut raw = self
            .inner
            .encode_batch_fast(texts, false)
            .map_err(|e| self.error(e))?
            .into_iter();
        let mut encodings = Vec::with_capacity(inputs.len());
        for input in inputs {
            let first = raw
                .next()
                .ok_or_else(|| self.error("an encoding is missing"))?;
            let second = match input {
                TextInput::Single(_) => None,
                TextInput::Pair(..) => Some(
                    raw.next()
                        .ok_or_else(|| self.error("an encoding is missing"))?,
                ),
            };
            encodings.push(self.finish(first, second)?);
        }
        let rows = encodings.len();
        let length = encodings.iter().map(|(e, _)| e.len()).max().unwrap_or(0);
        let mut batch = EncodedBatch {
            rows,
            length,
            ids: vec![i64::from(self.pad_id); rows * length],
            type_ids: vec![0; rows * length],
            mask: vec![0; rows * length],
            truncated: 0,
            pad_id: i64::from(self.pad_id),
        };
        for (row, (e, truncated)) in encodings.iter().enumerate() {
            let at = row * length;
            let n = e.len();
            for (slot, &v) in batch.ids[at..at + n].iter_mut().zip(e.get_ids()) {
                *slot = i64::from(v);
            }
            for (slot, &v) in batch.type_ids[at..at + n].iter_mut().zip(e.get_type_ids()) {
                *slot = i64::from(v);
            }
            batch.mask[at..at + n].fill(1);
            batch.truncated += usize::from(*truncated);
        }
        Ok(batch)
    }
}

/// The padding id: the file's padding settings', else a `[PAD]` or `<pad>` token's.
fn pad_id(tokenizer: &Tokenizer) -> Option<u32> {
    if let Some(p) = tokenizer.get_padding() {
        return Some(p.pad_id);
    }
    ["[PAD]", "<pad>"]
        .iter()
        .find_map(|t| tokenizer.token_to_id(t))
}
