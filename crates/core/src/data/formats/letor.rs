//! Reader of LETOR / SVMlight ranking files: `<rel> qid:<q> <i>:<v> ... # comment`.

use std::collections::HashMap;
use std::path::Path;

use crate::data::formats::bom::without_bom;
use crate::data::LtrDataset;
use crate::{Error, Result};

/// Without `num_features`, the dimension is the largest index seen; a larger index is far more
/// likely a typo than a real feature, and would make the dense matrix huge.
const MAX_INFERRED_FEATURES: usize = 100_000;

/// Counts describing a parsed LETOR file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LetorSummary {
    /// Lines in the file, blank and comment lines included.
    pub lines: usize,
    /// Queries (runs of lines with one `qid`).
    pub queries: usize,
    /// Documents (lines with a relevance).
    pub documents: usize,
    /// Queries whose documents all have the same relevance, which give no preference pair.
    pub single_level_queries: usize,
}

/// A parsed LETOR file.
#[derive(Debug, Clone, PartialEq)]
pub struct LetorData {
    /// Features, relevances and query bounds, in file order.
    pub dataset: LtrDataset,
    /// The `qid` of each query of `dataset`, as written in the file.
    pub query_ids: Vec<String>,
    /// Counts of what was read.
    pub summary: LetorSummary,
}

/// Reads the LETOR file at `path`; see [`parse_letor`].
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, otherwise as [`parse_letor`] (invalid UTF-8 is
/// reported at its line and column).
pub fn read_letor(path: &Path, num_features: Option<usize>) -> Result<LetorData> {
    let (text, file) = read_utf8(path)?;
    parse_letor(&text, &file, num_features)
}

/// The text of the file at `path` (without a leading byte-order mark) and its name for
/// messages.
///
/// # Errors
/// [`Error::Io`] if it cannot be read, [`Error::Data`] at the line and column of invalid UTF-8.
pub(crate) fn read_utf8(path: &Path) -> Result<(String, String)> {
    let mut bytes = std::fs::read(path).map_err(|err| Error::io(path, err))?;
    let mark = bytes.len() - without_bom(&bytes).len();
    bytes.drain(..mark);
    let file = path.display().to_string();
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, file)),
        Err(err) => {
            let utf8 = err.utf8_error();
            let bytes = err.as_bytes();
            let valid = &bytes[..utf8.valid_up_to()];
            let line_start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let line = valid.iter().filter(|&&b| b == b'\n').count() + 1;
            // the valid prefix of the line is UTF-8, so its characters can be counted
            let column = String::from_utf8_lossy(&valid[line_start..])
                .chars()
                .count()
                + 1;
            Err(Error::Data {
                file,
                line,
                column,
                message: "invalid UTF-8".to_string(),
            })
        }
    }
}

/// Parses LETOR / SVMlight text: one document per line, `<rel> qid:<q> <i>:<v> ... # comment`,
/// with 1-based sparse feature indices (missing features are 0). Blank lines and lines holding
/// only a comment are skipped. `file` names the source in errors. With `num_features`, that is
/// the dimension and larger indices are errors; without, it is the largest index seen.
///
/// # Errors
/// [`Error::Data`] at the first malformed token, quoting it: a relevance that is not an
/// integer in 0..=255, a missing `qid:`, a feature that is not `<index>:<value>` with an index
/// from 1 (to `num_features`) and a finite value, a feature given twice in a line, a query whose
/// documents are not contiguous, or a file without documents.
pub fn parse_letor(text: &str, file: &str, num_features: Option<usize>) -> Result<LetorData> {
    let mut parser = Parser::new(file, num_features);
    let mut rest = text;
    while !rest.is_empty() {
        let (line, next) = match rest.find('\n') {
            Some(end) => (&rest[..end], &rest[end + 1..]),
            None => (rest, ""),
        };
        rest = next;
        parser.line += 1;
        parser.parse_line(line)?;
    }
    parser.finish()
}

/// The state of one pass over a file; borrowed `qid`s live as long as the text.
struct Parser<'a> {
    file: &'a str,
    num_features: Option<usize>,
    /// 1-based number of the line being parsed.
    line: usize,
    /// Dense row-major features, `width` per document, the current document's row included.
    features: Vec<f32>,
    /// `num_features` if given; otherwise at least the largest index seen, grown by doubling so
    /// that a file whose indices keep rising does not copy the matrix at every line.
    width: usize,
    relevance: Vec<u8>,
    /// Per feature, 1 + the document that last set it, to find a feature given twice.
    last_doc: Vec<u32>,
    max_index: usize,
    query_bounds: Vec<usize>,
    query_ids: Vec<String>,
    /// First line of each query seen so far.
    first_lines: HashMap<&'a str, usize>,
    current_qid: Option<&'a str>,
    single_level_queries: usize,
}

impl<'a> Parser<'a> {
    fn new(file: &'a str, num_features: Option<usize>) -> Self {
        Parser {
            file,
            num_features,
            line: 0,
            features: Vec::new(),
            width: num_features.unwrap_or(0),
            relevance: Vec::new(),
            last_doc: vec![0; num_features.unwrap_or(0)],
            max_index: 0,
            query_bounds: vec![0],
            query_ids: Vec::new(),
            first_lines: HashMap::new(),
            current_qid: None,
            single_level_queries: 0,
        }
    }

    /// An error at byte `offset` of `line`, reported as a 1-based character column.
    fn error(&self, line: &str, offset: usize, message: String) -> Error {
        Error::Data {
            file: self.file.to_string(),
            line: self.line,
            column: line[..offset].chars().count() + 1,
            message,
        }
    }

    fn parse_line(&mut self, raw: &'a str) -> Result<()> {
        let content = match raw.find('#') {
            Some(hash) => &raw[..hash],
            None => raw,
        };
        let mut tokens = content
            .split_ascii_whitespace()
            .map(|token| (token.as_ptr() as usize - raw.as_ptr() as usize, token));
        let Some((label_at, label)) = tokens.next() else {
            return Ok(());
        };
        let relevance = label.parse::<u8>().map_err(|_| {
            self.error(
                raw,
                label_at,
                format!("bad relevance '{label}': expected an integer from 0 to 255"),
            )
        })?;

        let (qid_at, qid) = match tokens.next() {
            Some((at, token)) => match token.strip_prefix("qid:") {
                Some("") => {
                    return Err(self.error(raw, at, format!("empty query id in '{token}'")))
                }
                Some(qid) => (at, qid),
                None => {
                    return Err(self.error(
                        raw,
                        at,
                        format!(
                            "missing qid: expected 'qid:<id>' after the relevance, found '{token}'"
                        ),
                    ))
                }
            },
            None => {
                return Err(self.error(
                    raw,
                    content.trim_end().len(),
                    format!("missing qid: nothing follows the relevance '{label}'"),
                ))
            }
        };
        self.start_document(raw, qid_at, qid)?;

        let doc = self.relevance.len() as u32 + 1;
        let rows = self.relevance.len() + 1;
        self.features.resize(rows * self.width, 0.0);
        for (at, token) in tokens {
            let (index, value) = self.feature(raw, at, token)?;
            let seen = &mut self.last_doc[index];
            if *seen == doc {
                return Err(self.error(
                    raw,
                    at,
                    format!(
                        "feature {} is given twice, the second time in '{token}'",
                        index + 1
                    ),
                ));
            }
            *seen = doc;
            self.features[(rows - 1) * self.width + index] = value;
        }
        self.relevance.push(relevance);
        Ok(())
    }

    /// Closes the current query if `qid` starts another one, checking it was not seen before.
    fn start_document(&mut self, raw: &str, at: usize, qid: &'a str) -> Result<()> {
        if self.current_qid == Some(qid) {
            return Ok(());
        }
        if let Some(first) = self.first_lines.get(qid) {
            return Err(self.error(
                raw,
                at,
                format!(
                    "query '{qid}' reappears after other queries (its documents began at line \
                     {first}); the documents of a query must be contiguous"
                ),
            ));
        }
        self.close_query();
        self.first_lines.insert(qid, self.line);
        self.query_ids.push(qid.to_string());
        self.current_qid = Some(qid);
        Ok(())
    }

    fn close_query(&mut self) {
        let start = self.query_bounds[self.query_bounds.len() - 1];
        let end = self.relevance.len();
        if end > start {
            let grades = &self.relevance[start..end];
            if grades.iter().all(|&g| g == grades[0]) {
                self.single_level_queries += 1;
            }
            self.query_bounds.push(end);
        }
    }

    /// The 0-based index and the value of an `<index>:<value>` token at byte `at` of `raw`.
    fn feature(&mut self, raw: &str, at: usize, token: &str) -> Result<(usize, f32)> {
        let Some(colon) = token.find(':') else {
            return Err(self.error(
                raw,
                at,
                format!("expected '<index>:<value>', found '{token}' (truncated line?)"),
            ));
        };
        let (digits, value) = (&token[..colon], &token[colon + 1..]);
        let index = parse_index(digits).ok_or_else(|| {
            self.error(
                raw,
                at,
                format!("bad feature index '{digits}' in '{token}': expected an integer from 1"),
            )
        })?;
        if index == 0 {
            return Err(self.error(
                raw,
                at,
                format!("feature index 0 in '{token}': indices start at 1"),
            ));
        }
        match self.num_features {
            Some(limit) if index > limit => {
                return Err(self.error(
                    raw,
                    at,
                    format!("feature index {index} in '{token}' exceeds num_features = {limit}"),
                ))
            }
            None if index > MAX_INFERRED_FEATURES => {
                return Err(self.error(
                    raw,
                    at,
                    format!(
                        "feature index {index} in '{token}' is above {MAX_INFERRED_FEATURES}; \
                         give num_features to allow it"
                    ),
                ))
            }
            None if index > self.width => self.widen(index),
            _ => {}
        }
        if value.is_empty() {
            return Err(self.error(
                raw,
                at,
                format!("feature {index} has no value in '{token}' (truncated line?)"),
            ));
        }
        let value_at = at + colon + 1;
        let parsed = value.parse::<f32>().map_err(|_| {
            self.error(
                raw,
                value_at,
                format!("bad value '{value}' of feature {index}: expected a number"),
            )
        })?;
        if !parsed.is_finite() {
            return Err(self.error(
                raw,
                value_at,
                format!("value '{value}' of feature {index} is not finite"),
            ));
        }
        self.max_index = self.max_index.max(index);
        Ok((index - 1, parsed))
    }

    /// Makes rows at least `index` wide, moving the documents read so far (and the current one).
    fn widen(&mut self, index: usize) {
        let width = index.max((2 * self.width).min(MAX_INFERRED_FEATURES));
        let rows = self.relevance.len() + 1;
        let mut features = vec![0f32; rows * width];
        if self.width > 0 {
            for (new, old) in features
                .chunks_exact_mut(width)
                .zip(self.features.chunks_exact(self.width))
            {
                new[..self.width].copy_from_slice(old);
            }
        }
        self.features = features;
        self.width = width;
        self.last_doc.resize(width, 0);
    }

    fn finish(mut self) -> Result<LetorData> {
        self.close_query();
        if self.relevance.is_empty() {
            return Err(Error::Data {
                file: self.file.to_string(),
                line: self.line.max(1),
                column: 1,
                message: "no documents".to_string(),
            });
        }
        let width = self.num_features.unwrap_or(self.max_index);
        let mut features = self.features;
        if width < self.width {
            for row in 0..self.relevance.len() {
                let from = row * self.width;
                features.copy_within(from..from + width, row * width);
            }
            features.truncate(self.relevance.len() * width);
        }
        let summary = LetorSummary {
            lines: self.line,
            queries: self.query_ids.len(),
            documents: self.relevance.len(),
            single_level_queries: self.single_level_queries,
        };
        Ok(LetorData {
            dataset: LtrDataset {
                features,
                num_features: width,
                relevance: self.relevance,
                query_bounds: self.query_bounds,
            },
            query_ids: self.query_ids,
            summary,
        })
    }
}

/// A decimal feature index made only of ASCII digits, or `None` (also on overflow).
fn parse_index(digits: &str) -> Option<usize> {
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    digits.bytes().try_fold(0usize, |n, b| {
        b.is_ascii_digit().then(|| n * 10 + usize::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data_error(text: &str, num_features: Option<usize>) -> (usize, usize, String) {
        match parse_letor(text, "t.txt", num_features) {
            Err(Error::Data {
                file,
                line,
                column,
                message,
            }) => {
                assert_eq!(file, "t.txt");
                (line, column, message)
            }
            other => panic!("expected a data error, got {other:?}"),
        }
    }

    #[test]
    fn parses_a_small_file() {
        let text = "# MSLR-like sample\n\
                    2 qid:10 1:0.5 3:-1.25 # doc a\n\
                    0 qid:10\t2:3e-2  4:7\r\n\
                    \n\
                    1 qid:10 1:1\n\
                       # only a comment\n\
                    1 qid:x7 4:0.25 2:1\n\
                    1 qid:x7 3:2";
        let data = parse_letor(text, "t.txt", None).unwrap();
        let d = &data.dataset;
        assert_eq!(d.num_features, 4);
        assert_eq!(d.relevance, vec![2, 0, 1, 1, 1]);
        assert_eq!(d.query_bounds, vec![0, 3, 5]);
        #[rustfmt::skip]
        assert_eq!(d.features, vec![
            0.5, 0.0, -1.25, 0.0,
            0.0, 0.03, 0.0, 7.0,
            1.0, 0.0, 0.0, 0.0,
            0.0, 1.0, 0.0, 0.25,
            0.0, 0.0, 2.0, 0.0,
        ]);
        assert_eq!(data.query_ids, vec!["10", "x7"]);
        assert_eq!(
            data.summary,
            LetorSummary {
                lines: 8,
                queries: 2,
                documents: 5,
                single_level_queries: 1,
            }
        );
        let wider = parse_letor(text, "t.txt", Some(6)).unwrap();
        assert_eq!(wider.dataset.num_features, 6);
        assert_eq!(
            &wider.dataset.features[6..12],
            &[0.0, 0.03, 0.0, 7.0, 0.0, 0.0]
        );
    }

    /// Text, `num_features`, expected (line, column) and the start of the expected message.
    type Case = (&'static str, Option<usize>, (usize, usize), &'static str);

    #[rustfmt::skip]
    const MALFORMED: &[Case] = &[
        ("1 qid:1 1:1\nx qid:1 1:2\n", None, (2, 1), "bad relevance 'x'"),
        ("256 qid:1 1:1\n", None, (1, 1), "bad relevance '256'"),
        ("-1 qid:1 1:1\n", None, (1, 1), "bad relevance '-1'"),
        ("2.5 qid:1 1:1\n", None, (1, 1), "bad relevance '2.5'"),
        ("1 1:0.5 2:1\n", None, (1, 3), "missing qid: expected 'qid:<id>' after the relevance, found '1:0.5'"),
        ("\n\n3   \n", None, (3, 2), "missing qid: nothing follows the relevance '3'"),
        ("1 qid: 1:1\n", None, (1, 3), "empty query id in 'qid:'"),
        ("1 qid:1 1:1 2:abc 3:1\n", None, (1, 15), "bad value 'abc' of feature 2"),
        ("1 qid:1 1:nan\n", None, (1, 11), "value 'nan' of feature 1 is not finite"),
        ("1 qid:1 0:1\n", None, (1, 9), "feature index 0 in '0:1'"),
        ("1 qid:1 1:1 137:2\n", Some(136), (1, 13), "feature index 137 in '137:2' exceeds num_features = 136"),
        ("1 qid:1 1:1 200000:2\n", None, (1, 13), "feature index 200000 in '200000:2' is above 100000"),
        ("1 qid:1 1:1 x:2\n", None, (1, 13), "bad feature index 'x' in 'x:2'"),
        ("1 qid:1 2:1 1:1 2:3\n", None, (1, 17), "feature 2 is given twice, the second time in '2:3'"),
        ("1 qid:1 1:1\n0 qid:1 1:2 3:", None, (2, 13), "feature 3 has no value in '3:'"),
        ("1 qid:1 1:1\n0 qid:1 1:2 3", None, (2, 13), "expected '<index>:<value>', found '3'"),
        ("1 qid:1 1:1\n0 qid:2 1:1\n1 qid:1 1:1\n", None, (3, 3), "query '1' reappears after other queries (its documents began at line 1)"),
        ("", None, (1, 1), "no documents"),
        ("# header\n\n   \n", None, (3, 1), "no documents"),
        ("\u{e9}1 qid:1 1:1\n", None, (1, 1), "bad relevance '\u{e9}1'"),
        ("1 qid:\u{e9} 1:1 1\u{e9}:2\n", None, (1, 13), "bad feature index '1\u{e9}'"),
    ];

    #[test]
    fn reports_each_malformed_input_at_its_line_and_column() {
        for (text, num_features, at, message) in MALFORMED {
            let (line, column, got) = data_error(text, *num_features);
            assert_eq!((line, column), *at, "{text:?}: {got}");
            assert!(got.starts_with(message), "{text:?}: {got}");
        }
    }

    #[test]
    fn the_error_displays_as_file_line_column() {
        let err = parse_letor("1 qid:1 1:1 2:zz\n", "train.txt", None).unwrap_err();
        assert_eq!(err.code(), "ERR_DATA");
        assert_eq!(
            err.to_string(),
            "train.txt:1:15: bad value 'zz' of feature 2: expected a number"
        );
    }

    #[test]
    fn rising_indices_widen_earlier_rows() {
        let text = "1 qid:1 1:1\n0 qid:1 3:2\n2 qid:1 9:5 2:1\n0 qid:2\n";
        let data = parse_letor(text, "t", None).unwrap();
        assert_eq!(data.dataset.num_features, 9);
        let mut want = vec![0f32; 36];
        (want[0], want[9 + 2], want[18 + 8], want[18 + 1]) = (1.0, 2.0, 5.0, 1.0);
        assert_eq!(data.dataset.features, want);
        assert_eq!(data.dataset.query_bounds, vec![0, 3, 4]);
    }

    #[test]
    fn a_query_with_one_relevance_level_is_counted_not_rejected() {
        let data = parse_letor("1 qid:a 1:1\n1 qid:a 1:2\n0 qid:b 1:1\n", "t", None).unwrap();
        assert_eq!(data.summary.single_level_queries, 2);
        assert!(data.dataset.preference_pairs().is_empty());
    }

    fn generated(lines: usize) -> String {
        let mut text = String::new();
        for i in 1..=lines {
            if i % 97 == 0 {
                text.push_str("# a comment line\n");
                continue;
            }
            if i % 89 == 0 {
                text.push('\n');
                continue;
            }
            text.push_str(&format!("{} qid:{} ", i % 5, i / 20));
            for f in 1..=10 {
                if (i + f) % 3 != 0 {
                    text.push_str(&format!("{f}:{:.4} ", (i * f) as f32 / 1000.0));
                }
            }
            text.push_str("# doc\n");
        }
        text
    }

    #[test]
    fn a_planted_error_is_reported_at_its_line() {
        let text = generated(2000);
        let valid = parse_letor(&text, "gen.txt", Some(10)).unwrap();
        assert_eq!(valid.summary.lines, 2000);
        assert_eq!(valid.summary.documents, 2000 - 20 - 22);
        assert_eq!(valid.summary.queries, 101);

        let mut lines: Vec<&str> = text.lines().collect();
        lines[1233] = "3 qid:61 1:0.5 2:O.25 3:1";
        let broken = lines.join("\n");
        let (line, column, message) = data_error(&broken, Some(10));
        assert_eq!((line, column), (1234, 18), "{message}");
        assert!(message.contains("'O.25'"), "{message}");
    }

    #[test]
    fn reads_a_file_and_reports_invalid_utf8() {
        let dir = std::env::temp_dir().join(format!("letor-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("good.txt");
        std::fs::write(&good, "1 qid:1 2:0.5\n0 qid:1 1:1\n").unwrap();
        let data = read_letor(&good, None).unwrap();
        assert_eq!(data.dataset.features, vec![0.0, 0.5, 1.0, 0.0]);

        let bad = dir.join("bad.txt");
        std::fs::write(&bad, b"1 qid:1 1:1\n0 qid:1 \xff:1\n").unwrap();
        let err = read_letor(&bad, None).unwrap_err();
        assert!(
            err.to_string().ends_with("bad.txt:2:9: invalid UTF-8"),
            "{err}"
        );
        let missing = read_letor(&dir.join("none.txt"), None).unwrap_err();
        assert_eq!(missing.code(), "ERR_IO");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
