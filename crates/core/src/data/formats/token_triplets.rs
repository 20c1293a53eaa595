//! (query, positive document, negative document) triplets of token ids, for sequence models:
//! read from TSV or JSONL files, or generated with a planted signal.

use std::path::Path;

use crate::config::{AnyTokenTriplets, SyntheticTokenTripletsConfig, TokenTripletFileConfig};
use crate::data::formats::text_triplets::json_line_error;
use crate::data::{read_utf8, PairwiseBatch, ScoreInput, TokenTable};
use crate::rng::Rng;
use crate::{Error, Result};

/// Triplets of token sequences, stored back to back.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TokenTriplets {
    /// Query of each triplet.
    pub query: TokenTable,
    /// Its preferred document.
    pub positive: TokenTable,
    /// Its other document.
    pub negative: TokenTable,
}

impl TokenTriplets {
    /// An empty set.
    pub fn new() -> Self {
        TokenTriplets {
            query: TokenTable::new(),
            positive: TokenTable::new(),
            negative: TokenTable::new(),
        }
    }

    /// Number of triplets.
    pub fn len(&self) -> usize {
        self.query.len()
    }

    /// Whether there is no triplet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The largest token id.
    pub fn max_id(&self) -> i64 {
        self.query
            .max_id()
            .max(self.positive.max_id())
            .max(self.negative.max_id())
    }

    /// Triplets `rows` as a pairwise batch of token inputs.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn batch(&self, rows: &[usize]) -> Result<PairwiseBatch> {
        let it = || rows.iter().copied();
        let query = self.query.batch(it())?;
        let positive = ScoreInput::Text {
            query: query.shallow_clone(),
            document: self.positive.batch(it())?,
        };
        let negative = ScoreInput::Text {
            query,
            document: self.negative.batch(it())?,
        };
        Ok(PairwiseBatch::new(positive, negative))
    }
}

/// Loads or generates the triplets `config` describes (`path` names it in errors).
///
/// # Errors
/// See [`read_triplets`] and [`synthetic_triplets`].
pub fn load_triplets(config: &AnyTokenTriplets, path: &str) -> Result<TokenTriplets> {
    match config {
        AnyTokenTriplets::TokenTripletFile(c) => read_triplets(c, path),
        AnyTokenTriplets::SyntheticTokenTriplets(c) => synthetic_triplets(c, path),
    }
}

/// The two file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `query<TAB>positive<TAB>negative`, each a space-separated list of ids.
    Tsv,
    /// `{"query": [...], "positive": [...], "negative": [...]}` per line.
    Jsonl,
}

fn format_of(config: &TokenTripletFileConfig, path: &str) -> Result<Format> {
    let named = config
        .format
        .as_deref()
        .or_else(|| Path::new(&config.path).extension().and_then(|e| e.to_str()));
    match named {
        Some("tsv") => Ok(Format::Tsv),
        Some("jsonl") | Some("json") => Ok(Format::Jsonl),
        other => Err(Error::config(
            format!("{path}.format"),
            format!(
                "unknown triplet format {:?}: set format to \"tsv\" or \"jsonl\"",
                other.unwrap_or("")
            ),
        )),
    }
}

/// Reads a triplet file: TSV (`query<TAB>positive<TAB>negative`, ids separated by spaces) or
/// JSONL (`{"query": [..], "positive": [..], "negative": [..]}`), by `format` or else by the
/// file's extension. Blank lines are skipped.
///
/// # Errors
/// [`Error::Io`], or [`Error::Data`] at `file:line:column` quoting the offending text: a
/// missing field, an id that is not an integer in 0..2³¹, an empty sequence, or a file without
/// triplets.
pub fn read_triplets(config: &TokenTripletFileConfig, path: &str) -> Result<TokenTriplets> {
    let format = format_of(config, path)?;
    let (text, file) = read_utf8(Path::new(&config.path))?;
    parse_triplets(&text, &file, format)
}

fn parse_triplets(text: &str, file: &str, format: Format) -> Result<TokenTriplets> {
    let mut triplets = TokenTriplets::new();
    let error = |line: usize, column: usize, message: String| Error::Data {
        file: file.to_string(),
        line,
        column,
        message,
    };
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let [q, p, n] = match format {
            Format::Tsv => tsv_line(line).map_err(|(col, msg)| error(number, col, msg))?,
            Format::Jsonl => jsonl_line(line).map_err(|(col, msg)| error(number, col, msg))?,
        };
        triplets.query.push(q);
        triplets.positive.push(p);
        triplets.negative.push(n);
    }
    if triplets.is_empty() {
        return Err(error(1, 1, "the file holds no triplet".into()));
    }
    Ok(triplets)
}

type LineError = (usize, String);

fn parse_id(token: &str) -> Option<i64> {
    token
        .parse::<u32>()
        .ok()
        .filter(|v| *v < 1 << 31)
        .map(i64::from)
}

fn tsv_line(line: &str) -> std::result::Result<[Vec<i64>; 3], LineError> {
    let fields: Vec<&str> = line.trim_end_matches('\r').split('\t').collect();
    if fields.len() != 3 {
        return Err((
            1,
            format!(
                "expected 3 tab-separated fields (query, positive, negative), found {}: {:?}",
                fields.len(),
                line
            ),
        ));
    }
    let mut out: [Vec<i64>; 3] = Default::default();
    let mut column = 1;
    for (slot, field) in out.iter_mut().zip(&fields) {
        let mut offset = 0;
        for token in field.split(' ') {
            if !token.is_empty() {
                match parse_id(token) {
                    Some(id) => slot.push(id),
                    None => {
                        let col = line[..column - 1 + offset].chars().count() + 1;
                        return Err((col, format!("{token:?} is not a token id (0..2^31)")));
                    }
                }
            }
            offset += token.len() + 1;
        }
        if slot.is_empty() {
            let col = line[..column - 1].chars().count() + 1;
            return Err((col, "an empty token sequence".into()));
        }
        column += field.len() + 1;
    }
    Ok(out)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTriplet {
    query: Vec<serde_json::Value>,
    positive: Vec<serde_json::Value>,
    negative: Vec<serde_json::Value>,
}

fn jsonl_line(line: &str) -> std::result::Result<[Vec<i64>; 3], LineError> {
    let parsed: JsonTriplet = serde_json::from_str(line).map_err(|e| json_line_error(&e))?;
    let ids = |name: &str, values: Vec<serde_json::Value>| {
        let column = line.find(&format!("\"{name}\"")).map_or(1, |c| c + 1);
        if values.is_empty() {
            return Err((column, format!("\"{name}\" is an empty token sequence")));
        }
        values
            .iter()
            .map(|v| {
                v.as_u64()
                    .filter(|v| *v < 1 << 31)
                    .map(|v| v as i64)
                    .ok_or_else(|| {
                        (
                            column,
                            format!("{v} in \"{name}\" is not a token id (0..2^31)"),
                        )
                    })
            })
            .collect::<std::result::Result<Vec<i64>, LineError>>()
    };
    Ok([
        ids("query", parsed.query)?,
        ids("positive", parsed.positive)?,
        ids("negative", parsed.negative)?,
    ])
}

/// Generates triplets with a planted signal: a query is a few "topic" tokens; the positive
/// document contains more of them than the negative one, hidden among random tokens, and both
/// lengths vary between `min_length` and `max_length`. Ids run from 1 (0 is padding).
///
/// # Errors
/// [`Error::Config`] at `path` for impossible sizes.
pub fn synthetic_triplets(
    config: &SyntheticTokenTripletsConfig,
    path: &str,
) -> Result<TokenTriplets> {
    config.validate(path)?;
    let vocab = config.vocab_size as usize;
    let mut rng = Rng::derive(config.seed, "synthetic-triplets");
    let mut triplets = TokenTriplets::new();
    let random_token = |rng: &mut Rng, avoid: &[i64]| loop {
        let t = 1 + rng.below(vocab - 1) as i64;
        if !avoid.contains(&t) {
            return t;
        }
    };
    for _ in 0..config.num_triplets {
        let q_len = 1 + rng.below(config.query_length as usize);
        let mut query: Vec<i64> = Vec::with_capacity(q_len);
        while query.len() < q_len {
            let t = random_token(&mut rng, &query);
            query.push(t);
        }
        let matches_pos = 1 + rng.below(q_len) + q_len / 2;
        let matches_neg = rng.below(matches_pos.min(q_len + 1));
        let document = |rng: &mut Rng, matches: usize| {
            let span = (config.max_length - config.min_length) as usize;
            let len = config.min_length as usize + rng.below(span + 1);
            let mut doc: Vec<i64> = (0..len).map(|_| random_token(rng, &query)).collect();
            let mut positions: Vec<usize> = (0..len).collect();
            rng.shuffle(&mut positions);
            for (k, &at) in positions.iter().take(matches).enumerate() {
                doc[at] = query[k % q_len];
            }
            doc
        };
        let positive = document(&mut rng, matches_pos);
        let negative = document(&mut rng, matches_neg);
        triplets.query.push(query.clone());
        triplets.positive.push(positive);
        triplets.negative.push(negative);
    }
    Ok(triplets)
}

/// Count of a token's occurrences, for the planted-signal test.
#[cfg(test)]
fn overlap(query: &[i64], doc: &[i64]) -> usize {
    doc.iter().filter(|t| query.contains(t)).count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::*;

    fn data_error(text: &str, format: Format) -> (usize, usize, String) {
        match parse_triplets(text, "t", format).unwrap_err() {
            Error::Data {
                line,
                column,
                message,
                ..
            } => (line, column, message),
            other => panic!("not a data error: {other}"),
        }
    }

    #[test]
    fn tsv_and_jsonl_read_the_same_triplets() {
        let tsv = parse_triplets("1 2\t3 4 5\t6\n\n7\t8\t9 10\n", "t", Format::Tsv).unwrap();
        let jsonl = parse_triplets(
            "{\"query\":[1,2],\"positive\":[3,4,5],\"negative\":[6]}\n\
             {\"query\":[7],\"positive\":[8],\"negative\":[9,10]}\n",
            "t",
            Format::Jsonl,
        )
        .unwrap();
        assert_eq!(tsv, jsonl);
        assert_eq!(tsv.len(), 2);
        assert_eq!(tsv.positive.get(0), &[3, 4, 5]);
        assert_eq!(tsv.max_id(), 10);
    }

    #[test]
    fn malformed_lines_name_line_column_and_text() {
        assert_eq!(
            data_error("1\t2\t3\n1 x\t2\t3\n", Format::Tsv),
            (2, 3, "\"x\" is not a token id (0..2^31)".into())
        );
        let (line, col, msg) = data_error("1\t2\t3\n4\t5\t6\n1\t2\n", Format::Tsv);
        assert_eq!((line, col), (3, 1));
        assert!(msg.contains("expected 3 tab-separated fields"), "{msg}");
        let (line, col, _) = data_error("1\t\t3\n", Format::Tsv);
        assert_eq!((line, col), (1, 3));
        let (line, _, msg) = data_error(
            "{\"query\":[1],\"positive\":[-2],\"negative\":[3]}",
            Format::Jsonl,
        );
        assert_eq!(line, 1);
        assert!(msg.contains("-2 in \"positive\""), "{msg}");
        let (_, _, msg) = data_error("{\"query\":[1],\"positive\":[2]", Format::Jsonl);
        assert!(msg.contains("EOF"), "{msg}");
        assert_eq!(
            data_error("\n\n", Format::Tsv).2,
            "the file holds no triplet"
        );
    }

    fn config(seed: u64) -> SyntheticTokenTripletsConfig {
        SyntheticTokenTripletsConfig {
            seed,
            num_triplets: 200,
            vocab_size: 500,
            query_length: 4,
            min_length: 8,
            max_length: 40,
        }
    }

    #[test]
    fn synthetic_triplets_plant_the_signal_in_variable_lengths() {
        let t = synthetic_triplets(&config(3), "d").unwrap();
        assert_eq!(t, synthetic_triplets(&config(3), "d").unwrap());
        assert_ne!(t, synthetic_triplets(&config(4), "d").unwrap());
        let mut lengths = std::collections::BTreeSet::new();
        for i in 0..t.len() {
            let q = t.query.get(i);
            assert!(overlap(q, t.positive.get(i)) > overlap(q, t.negative.get(i)));
            lengths.insert(t.positive.get(i).len());
        }
        assert!(lengths.len() > 10 && *lengths.first().unwrap() >= 8);
        assert!(*lengths.last().unwrap() <= 40);
        assert!(t.max_id() < 500);
    }

    #[test]
    fn sampled_batches_are_padded_token_pairs() {
        let t = synthetic_triplets(&config(1), "d").unwrap();
        let mut s = TokenTripletSampler::new(t, Rng::new(0), Shard::WHOLE, "s").unwrap();
        let Batch::Pairwise(b) = s.next_batch(5).unwrap() else {
            panic!("pairwise expected")
        };
        let (q, d) = b.positive.text("test").unwrap();
        assert_eq!(q.ids.size()[0], 5);
        assert_eq!(d.lengths.size(), vec![5]);
        let longest = Vec::<i64>::try_from(&d.lengths).unwrap().into_iter().max();
        assert_eq!(Some(d.max_length()), longest);
        assert_eq!(q.ids.kind(), tch::Kind::Int64);
    }
}
