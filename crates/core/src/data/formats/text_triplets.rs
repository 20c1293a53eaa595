//! (query, positive document, negative document) triplets of raw text, tokenised batch by batch
//! on the data producer thread by the model's own tokenizer.

use std::path::Path;

use crate::config::TextTripletFileConfig;
use crate::data::read_utf8;
use crate::{Error, Result};

/// Text triplets, one string per field.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextTriplets {
    /// Query of each triplet.
    pub query: Vec<String>,
    /// Its preferred document.
    pub positive: Vec<String>,
    /// Its other document.
    pub negative: Vec<String>,
}

impl TextTriplets {
    /// Number of triplets.
    pub fn len(&self) -> usize {
        self.query.len()
    }

    /// Whether there is no triplet.
    pub fn is_empty(&self) -> bool {
        self.query.is_empty()
    }

    fn push(&mut self, [q, p, n]: [String; 3]) {
        self.query.push(q);
        self.positive.push(p);
        self.negative.push(n);
    }
}

/// Reads a text triplet file: TSV (`query<TAB>positive<TAB>negative`, no quoting) or JSONL
/// (`{"query": "...", "positive": "...", "negative": "..."}`), by `format` or else by the
/// file's extension. Blank lines are skipped.
///
/// # Errors
/// [`Error::Io`]; [`Error::Data`] at `file:line:column`: a wrong field count, an empty text, a
/// malformed JSON line, or a file without triplets; [`Error::Config`] at `path.format` for an
/// unknown format.
pub fn read_text_triplets(config: &TextTripletFileConfig, path: &str) -> Result<TextTriplets> {
    let jsonl = is_jsonl(config.format.as_deref(), &config.path, path)?;
    let (text, file) = read_utf8(Path::new(&config.path))?;
    parse_text_triplets(&text, &file, jsonl)
}

/// Whether a text file is JSONL (else TSV), by its `format` or else its extension.
///
/// # Errors
/// [`Error::Config`] at `path.format` for an unknown format.
pub(crate) fn is_jsonl(format: Option<&str>, file: &str, path: &str) -> Result<bool> {
    let named = format.or_else(|| Path::new(file).extension().and_then(|e| e.to_str()));
    match named {
        Some("tsv") => Ok(false),
        Some("jsonl") | Some("json") => Ok(true),
        other => Err(Error::config(
            format!("{path}.format"),
            format!(
                "unknown format {:?} of {file}: set format to \"tsv\" or \"jsonl\"",
                other.unwrap_or("")
            ),
        )),
    }
}

/// (column, message) of a malformed line.
pub(crate) type LineError = (usize, String);

fn parse_text_triplets(text: &str, file: &str, jsonl: bool) -> Result<TextTriplets> {
    let mut triplets = TextTriplets::default();
    let parse = if jsonl { json_line } else { tsv_line };
    for fields in parse_lines(text, file, "triplet", parse)? {
        triplets.push(fields);
    }
    Ok(triplets)
}

/// A JSON line's error at its column, worded without serde's own "at line 1 column N" (the
/// position is the error's `file:line:column`, given once).
pub(crate) fn json_line_error(e: &serde_json::Error) -> LineError {
    let text = e.to_string();
    let position = format!(" at line {} column {}", e.line(), e.column());
    let message = text.strip_suffix(&position).unwrap_or(&text);
    (e.column().max(1), message.to_string())
}

/// `parse` of every non-blank line of `text`, its errors at `file:line:column`; a file
/// without any `what` is an error too.
pub(crate) fn parse_lines<T>(
    text: &str,
    file: &str,
    what: &str,
    parse: impl Fn(&str) -> std::result::Result<T, LineError>,
) -> Result<Vec<T>> {
    let error = |line: usize, (column, message): LineError| Error::Data {
        file: file.to_string(),
        line,
        column,
        message,
    };
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if !line.trim().is_empty() {
            records.push(parse(line).map_err(|e| error(i + 1, e))?);
        }
    }
    if records.is_empty() {
        return Err(error(1, (1, format!("the file holds no {what}"))));
    }
    Ok(records)
}

const FIELDS: [&str; 3] = ["query", "positive", "negative"];

fn tsv_line(line: &str) -> std::result::Result<[String; 3], LineError> {
    tsv_fields(line, FIELDS)
}

/// The three non-empty tab-separated fields of `line`, named `names` in messages.
pub(crate) fn tsv_fields(
    line: &str,
    names: [&str; 3],
) -> std::result::Result<[String; 3], LineError> {
    let fields: Vec<&str> = line.trim_end_matches('\r').split('\t').collect();
    if fields.len() != 3 {
        return Err((
            1,
            format!(
                "expected 3 tab-separated fields ({}), found {}",
                names.join(", "),
                fields.len()
            ),
        ));
    }
    let mut column = 1;
    for (field, name) in fields.iter().zip(names) {
        if field.trim().is_empty() {
            return Err((column, format!("the {name} text is empty")));
        }
        column += field.chars().count() + 1;
    }
    Ok([fields[0].into(), fields[1].into(), fields[2].into()])
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonTriplet {
    query: String,
    positive: String,
    negative: String,
}

fn json_line(line: &str) -> std::result::Result<[String; 3], LineError> {
    let t: JsonTriplet = serde_json::from_str(line).map_err(|e| json_line_error(&e))?;
    let fields = [t.query, t.positive, t.negative];
    for (field, name) in fields.iter().zip(FIELDS) {
        if field.trim().is_empty() {
            let column = line.find(&format!("\"{name}\"")).map_or(1, |c| c + 1);
            return Err((column, format!("the {name} text is empty")));
        }
    }
    Ok(fields)
}

fn pick(texts: &[String], rows: &[usize]) -> Vec<String> {
    rows.iter().map(|&r| texts[r].clone()).collect()
}

/// Where triplets' texts come from: a file read whole, or collections read by id.
pub trait TripletTexts: std::fmt::Debug + Send + Sync {
    /// Number of triplets.
    fn count(&self) -> usize;
    /// The queries, positives and negatives of triplets `rows`.
    ///
    /// # Errors
    /// An I/O error reading them.
    fn texts(&self, rows: &[usize]) -> Result<[Vec<String>; 3]>;
}

impl TripletTexts for TextTriplets {
    fn count(&self) -> usize {
        self.len()
    }

    fn texts(&self, rows: &[usize]) -> Result<[Vec<String>; 3]> {
        Ok([
            pick(&self.query, rows),
            pick(&self.positive, rows),
            pick(&self.negative, rows),
        ])
    }
}

pub(crate) fn strs(texts: &[String]) -> Vec<&str> {
    texts.iter().map(String::as_str).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_error(text: &str, jsonl: bool) -> String {
        match parse_text_triplets(text, "t.tsv", jsonl).unwrap_err() {
            e @ Error::Data { .. } => e.to_string(),
            other => panic!("not a data error: {other}"),
        }
    }

    #[test]
    fn tsv_and_jsonl_read_the_same_triplets() {
        let tsv = parse_text_triplets(
            "où est Paris ?\tParis, France\tLe 🍕\n\na\tb\tc\r\n",
            "t",
            false,
        )
        .unwrap();
        let jsonl = parse_text_triplets(
            "{\"query\":\"où est Paris ?\",\"positive\":\"Paris, France\",\"negative\":\"Le 🍕\"}\n\
             {\"query\":\"a\",\"positive\":\"b\",\"negative\":\"c\"}\n",
            "t",
            true,
        )
        .unwrap();
        assert_eq!(tsv, jsonl);
        assert_eq!(tsv.len(), 2);
    }

    #[test]
    fn malformed_lines_name_file_line_and_column() {
        let err = data_error("a\tb\tc\nonly\ttwo\n", false);
        assert!(
            err.starts_with("t.tsv:2:1: expected 3 tab-separated fields"),
            "{err}"
        );
        let err = data_error("é\t \tc\n", false);
        assert!(
            err.starts_with("t.tsv:1:3: the positive text is empty"),
            "{err}"
        );
        let err = data_error(
            "{\"query\": \"a\", \"positive\": 3, \"negative\": \"c\"}\n",
            true,
        );
        assert!(err.starts_with("t.tsv:1:"), "{err}");
        assert!(!err.contains("at line"), "one position only: {err}");
        let err = data_error("\n\n", false);
        assert!(err.contains("holds no triplet"), "{err}");
    }
}
