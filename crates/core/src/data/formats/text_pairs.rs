//! (query, document, score) records of raw text for pointwise losses, tokenised batch by batch
//! on the data producer thread by the model's own tokenizer.

use std::path::Path;

use crate::config::TextPairFileConfig;
use crate::data::formats::text_triplets::{
    is_jsonl, json_line_error, parse_lines, tsv_fields, LineError,
};
use crate::data::read_utf8;
use crate::Result;

/// Scored text pairs, one entry per field.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextPairs {
    /// Query of each pair.
    pub query: Vec<String>,
    /// Its document.
    pub document: Vec<String>,
    /// How relevant the document is to the query, in [0, 1].
    pub score: Vec<f32>,
}

/// Reads a scored text pair file: TSV (`query<TAB>document<TAB>score`, no quoting) or JSONL
/// (`{"query": "...", "document": "...", "score": 0.5}`), by `format` or else by the file's
/// extension. Blank lines are skipped.
///
/// # Errors
/// [`Error::Io`](crate::Error::Io); [`Error::Data`](crate::Error::Data) at
/// `file:line:column`: a wrong field count, an empty text, a score that is not a number in
/// [0, 1], a malformed JSON line, or a file without pairs;
/// [`Error::Config`](crate::Error::Config) at `path.format` for an unknown format.
pub fn read_text_pairs(config: &TextPairFileConfig, path: &str) -> Result<TextPairs> {
    let jsonl = is_jsonl(config.format.as_deref(), &config.path, path)?;
    let (text, file) = read_utf8(Path::new(&config.path))?;
    parse_text_pairs(&text, &file, jsonl)
}

fn parse_text_pairs(text: &str, file: &str, jsonl: bool) -> Result<TextPairs> {
    let parse = if jsonl { json_pair } else { tsv_pair };
    let mut pairs = TextPairs::default();
    for (query, document, score) in parse_lines(text, file, "scored pair", parse)? {
        pairs.query.push(query);
        pairs.document.push(document);
        pairs.score.push(score);
    }
    Ok(pairs)
}

type Pair = (String, String, f32);

fn relevance(score: f64, column: usize) -> std::result::Result<f32, LineError> {
    if (0.0..=1.0).contains(&score) {
        Ok(score as f32)
    } else {
        Err((
            column,
            format!("the score {score} is not in [0, 1] (a relevance probability)"),
        ))
    }
}

fn tsv_pair(line: &str) -> std::result::Result<Pair, LineError> {
    let [query, document, score] = tsv_fields(line, ["query", "document", "score"])?;
    let column = query.chars().count() + document.chars().count() + 3;
    let value = score
        .trim()
        .parse::<f64>()
        .map_err(|_| (column, format!("the score {score:?} is not a number")))?;
    Ok((query, document, relevance(value, column)?))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonPair {
    query: String,
    document: String,
    score: f64,
}

fn json_pair(line: &str) -> std::result::Result<Pair, LineError> {
    let p: JsonPair = serde_json::from_str(line).map_err(|e| json_line_error(&e))?;
    let column = |name: &str| line.find(&format!("\"{name}\"")).map_or(1, |c| c + 1);
    for (text, name) in [(&p.query, "query"), (&p.document, "document")] {
        if text.trim().is_empty() {
            return Err((column(name), format!("the {name} text is empty")));
        }
    }
    let score = relevance(p.score, column("score"))?;
    Ok((p.query, p.document, score))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(text: &str, jsonl: bool) -> String {
        parse_text_pairs(text, "p.tsv", jsonl)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn tsv_and_jsonl_read_the_same_pairs() {
        let tsv = parse_text_pairs("où est Paris ?\tParis 🍕\t1\n\nq\td\t0.25\r\n", "p", false);
        let jsonl = parse_text_pairs(
            "{\"query\":\"où est Paris ?\",\"document\":\"Paris 🍕\",\"score\":1}\n\
             {\"query\":\"q\",\"document\":\"d\",\"score\":0.25}\n",
            "p",
            true,
        );
        assert_eq!(tsv.unwrap(), jsonl.unwrap());
    }

    #[test]
    fn malformed_lines_name_file_line_and_column() {
        for (text, jsonl, want) in [
            (
                "q\td\t1\nq\td\n",
                false,
                "p.tsv:2:1: expected 3 tab-separated fields (query, document, score)",
            ),
            ("q\t \t1\n", false, "p.tsv:1:3: the document text is empty"),
            (
                "é\td\thigh\n",
                false,
                "p.tsv:1:5: the score \"high\" is not a number",
            ),
            (
                "q\td\t1.5\n",
                false,
                "p.tsv:1:5: the score 1.5 is not in [0, 1]",
            ),
            (
                "{\"query\":\"q\",\"document\":\"d\",\"score\":-1}\n",
                true,
                "p.tsv:1:29: the score -1 is not in [0, 1]",
            ),
            ("{\"query\":\"q\",\"document\":\"d\"}\n", true, "p.tsv:1:"),
            ("\n", false, "p.tsv:1:1: the file holds no scored pair"),
        ] {
            let err = error(text, jsonl);
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }
}
