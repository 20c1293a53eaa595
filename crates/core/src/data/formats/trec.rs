//! The other files of the MS MARCO layout: TREC qrels, TREC runs and training triples of ids,
//! read line by line (a run of 1000 candidates per dev query holds 7 M lines).

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::data::formats::bom::without_bom;
use crate::data::{Entry, TextCollection};
use crate::{Error, Result};

/// A file's line for messages: `file:line`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place<'a> {
    pub file: &'a str,
    pub line: usize,
}

impl Place<'_> {
    pub fn error(&self, column: usize, message: impl Into<String>) -> Error {
        Error::Data {
            file: self.file.to_string(),
            line: self.line,
            column,
            message: message.into(),
        }
    }
}

/// Calls `each` with every non-blank line of `path` (end of line trimmed, and a byte-order
/// mark before the first) and its place.
///
/// # Errors
/// [`Error::Io`], [`Error::Data`] for invalid UTF-8, and what `each` returns.
pub(crate) fn each_line(
    path: &Path,
    mut each: impl FnMut(&str, Place<'_>) -> Result<()>,
) -> Result<()> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut bytes = Vec::new();
    for line in 1.. {
        bytes.clear();
        if reader
            .read_until(b'\n', &mut bytes)
            .map_err(|e| Error::io(path, e))?
            == 0
        {
            return Ok(());
        }
        let place = Place { file: &name, line };
        let bytes = if line == 1 {
            without_bom(&bytes)
        } else {
            &bytes
        };
        let text = std::str::from_utf8(bytes).map_err(|e| {
            let valid = String::from_utf8_lossy(&bytes[..e.valid_up_to()]);
            place.error(valid.chars().count() + 1, "invalid UTF-8")
        })?;
        let text = text.trim_end_matches(['\n', '\r']);
        if !text.trim().is_empty() {
            each(text, place)?;
        }
    }
    Ok(())
}

/// The whitespace-separated fields of a TREC line, exactly `N` of them.
fn fields<'a, const N: usize>(line: &'a str, place: Place, layout: &str) -> Result<[&'a str; N]> {
    let found: Vec<&str> = line.split_whitespace().collect();
    found.try_into().map_err(|found: Vec<&str>| {
        place.error(
            1,
            format!("expected {N} fields ({layout}), found {}", found.len()),
        )
    })
}

/// Relevance judgements: the grade of each judged document, by query id.
#[derive(Debug, Default)]
pub struct Qrels {
    /// Query id → document id → grade (negative grades read as 0).
    pub grades: HashMap<String, HashMap<String, u8>>,
}

impl Qrels {
    /// Reads TREC qrels: `qid iteration docid grade` per line, whitespace-separated.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Data`] at `file:line` for a wrong field count, a grade that
    /// is not an integer up to 255, a (query, document) judged twice, or an empty file.
    pub fn read(path: &Path) -> Result<Self> {
        let mut qrels = Qrels::default();
        each_line(path, |line, place| {
            let [qid, _, docid, grade] = fields(line, place, "qid iteration docid grade")?;
            let grade: i64 = grade
                .parse()
                .map_err(|_| place.error(1, format!("the grade {grade:?} is not an integer")))?;
            let grade = u8::try_from(grade.max(0))
                .map_err(|_| place.error(1, format!("the grade {grade} is above 255")))?;
            let judged = qrels.grades.entry(qid.to_string()).or_default();
            if judged.insert(docid.to_string(), grade).is_some() {
                return Err(place.error(
                    1,
                    format!("query {qid:?} judges document {docid:?} on an earlier line too"),
                ));
            }
            Ok(())
        })?;
        if qrels.grades.is_empty() {
            return Err(Error::Data {
                file: path.display().to_string(),
                line: 1,
                column: 1,
                message: "the file holds no judgement".into(),
            });
        }
        Ok(qrels)
    }
}

/// A ranked document of a run.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The document id.
    pub docid: String,
    /// Its entry in the documents.
    pub entry: Entry,
    /// Its rank in the run.
    pub rank: i64,
}

/// A TREC run: each query's candidates by rank, queries in the file's order.
#[derive(Debug, Default)]
pub struct TrecRun {
    /// (query id, its entry in the queries, candidates by increasing rank).
    pub queries: Vec<(String, Entry, Vec<Candidate>)>,
}

impl TrecRun {
    /// Reads a TREC run, `qid Q0 docid rank score tag` per line, keeping each query's `depth`
    /// best-ranked candidates (all when `None`). The ids of every line, past `depth` too, are
    /// looked up in `queries` and `documents` (a query's once, at its first line; a hash
    /// look-up or less each).
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Data`] at `file:line` for a wrong field count, a rank that is
    /// not an integer or a score that is not a number, a query or document id absent from its
    /// collection, a document listed twice for a query, or an empty file.
    pub fn read(
        path: &Path,
        depth: Option<usize>,
        queries: &TextCollection,
        documents: &TextCollection,
    ) -> Result<Self> {
        let mut run = TrecRun::default();
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut seen: HashMap<(usize, String), usize> = HashMap::new();
        each_line(path, |line, place| {
            let [qid, _, docid, rank, score, _] =
                fields(line, place, "qid Q0 docid rank score tag")?;
            let rank: i64 = rank
                .parse()
                .map_err(|_| place.error(1, format!("the rank {rank:?} is not an integer")))?;
            if score.parse::<f64>().is_err() {
                return Err(place.error(1, format!("the score {score:?} is not a number")));
            }
            let q = match index.get(qid) {
                Some(&q) => q,
                None => {
                    let entry = resolve(queries, qid, "query", place)?;
                    run.queries.push((qid.to_string(), entry, Vec::new()));
                    index.insert(qid.to_string(), run.queries.len() - 1);
                    run.queries.len() - 1
                }
            };
            let entry = resolve(documents, docid, "document", place)?;
            if let Some(first) = seen.insert((q, docid.to_string()), place.line) {
                return Err(place.error(
                    1,
                    format!("query {qid:?} lists document {docid:?} on line {first} too"),
                ));
            }
            run.queries[q].2.push(Candidate {
                docid: docid.to_string(),
                entry,
                rank,
            });
            Ok(())
        })?;
        if run.queries.is_empty() {
            return Err(Error::Data {
                file: path.display().to_string(),
                line: 1,
                column: 1,
                message: "the file holds no candidate".into(),
            });
        }
        for (_, _, candidates) in &mut run.queries {
            candidates.sort_by_key(|c| c.rank);
            candidates.truncate(depth.unwrap_or(usize::MAX));
        }
        Ok(run)
    }
}

/// `id`'s entry in `collection`, or an error at `place` naming both.
fn resolve(collection: &TextCollection, id: &str, what: &str, place: Place) -> Result<Entry> {
    collection.entry(id).ok_or_else(|| {
        place.error(
            1,
            format!(
                "the {what} id {id:?} is not in {} (check that the files belong together)",
                collection.name()
            ),
        )
    })
}

/// Training triples of ids, `qid<TAB>positive docid<TAB>negative docid` per line, resolved
/// against the collections: 12 bytes per triple in memory.
///
/// # Errors
/// [`Error::Io`]; [`Error::Data`] at `file:line` for a wrong field count, an id absent from
/// its collection, or an empty file.
pub fn read_id_triplets(
    path: &Path,
    queries: &TextCollection,
    documents: &TextCollection,
) -> Result<Vec<[Entry; 3]>> {
    let mut triplets = Vec::new();
    each_line(path, |line, place| {
        let ids: Vec<&str> = line.split('\t').collect();
        let [qid, pos, neg] = ids[..] else {
            return Err(place.error(
                1,
                format!(
                    "expected 3 tab-separated ids (qid, positive docid, negative docid), found {}",
                    ids.len()
                ),
            ));
        };
        triplets.push([
            resolve(queries, qid.trim(), "query", place)?,
            resolve(documents, pos.trim(), "document", place)?,
            resolve(documents, neg.trim(), "document", place)?,
        ]);
        Ok(())
    })?;
    if triplets.is_empty() {
        return Err(Error::Data {
            file: path.display().to_string(),
            line: 1,
            column: 1,
            message: "the file holds no triplet".into(),
        });
    }
    triplets.shrink_to_fit();
    Ok(triplets)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests_support::scratch_dir;

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let path = scratch_dir().join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn qrels_read_grades_and_refuse_bad_lines() {
        let q = Qrels::read(&file("q.txt", "1 0 d1 2\n1\t0\td2 0\n\n2 0 d1 -1\r\n")).unwrap();
        assert_eq!(q.grades["1"]["d1"], 2);
        assert_eq!(q.grades["1"]["d2"], 0);
        assert_eq!(q.grades["2"]["d1"], 0, "negative grades read as 0");
        for (text, want) in [
            ("1 0 d1 2\n1 0 d1\n", "q.txt:2:1: expected 4 fields"),
            ("1 0 d1 x\n", "q.txt:1:1: the grade \"x\" is not an integer"),
            ("1 0 d1 300\n", "is above 255"),
            (
                "1 0 d1 1\n1 0 d1 0\n",
                "q.txt:2:1: query \"1\" judges document \"d1\" on an earlier",
            ),
            ("\n", "holds no judgement"),
        ] {
            let err = Qrels::read(&file("q.txt", text)).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
    }

    #[test]
    fn runs_keep_the_best_ranked_candidates() {
        let queries = TextCollection::open(&file("q.tsv", "q1\tone\nq2\ttwo\nq\tq\n")).unwrap();
        let docs = TextCollection::open(&file("d.tsv", "a\tA\nb\tB\nc\tC\nz\tZ\n")).unwrap();
        let read = |text: &str, depth| TrecRun::read(&file("r.txt", text), depth, &queries, &docs);
        let text =
            "q1 Q0 a 2 1.5 bm25\nq2 Q0 c 1 3 bm25\nq1 Q0 b 1 2.5 bm25\nq1 Q0 z 3 -1e3 bm25\n";
        let run = read(text, Some(2)).unwrap();
        let docs_of: Vec<(&str, Vec<&str>)> = run
            .queries
            .iter()
            .map(|(q, _, c)| (q.as_str(), c.iter().map(|c| c.docid.as_str()).collect()))
            .collect();
        assert_eq!(docs_of, [("q1", vec!["b", "a"]), ("q2", vec!["c"])]);
        assert_eq!(
            (run.queries[1].1, run.queries[0].2[0].entry),
            (queries.entry("q2").unwrap(), docs.entry("b").unwrap())
        );
        for (text, want) in [
            ("q Q0 a 1 1\n", "r.txt:1:1: expected 6 fields"),
            ("q Q0 a one 1 t\n", "the rank \"one\" is not an integer"),
            ("q Q0 a 1 high t\n", "the score \"high\" is not a number"),
            (
                "q Q0 a 1 1 t\nq Q0 a 2 0 t\n",
                "r.txt:2:1: query \"q\" lists document \"a\" on line 1",
            ),
            (
                "q Q0 a 1 1 t\nq Q0 y 2 0 t\n",
                "r.txt:2:1: the document id \"y\" is not in",
            ),
            (
                "q Q0 a 1 1 t\nq3 Q0 a 1 0 t\n",
                "r.txt:2:1: the query id \"q3\"",
            ),
        ] {
            let err = read(text, None).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        // Past depth too.
        let err = read("q Q0 a 1 1 t\nq Q0 y 2 0 t\n", Some(1))
            .unwrap_err()
            .to_string();
        assert!(err.contains("r.txt:2:1: the document id \"y\""), "{err}");
    }

    #[test]
    fn id_triplets_resolve_against_the_collections() {
        let queries = TextCollection::open(&file("queries.tsv", "10\twhat\n11\twho\n")).unwrap();
        let docs = TextCollection::open(&file("docs.tsv", "0\ta\n1\tb\n2\tc\n")).unwrap();
        let t = read_id_triplets(&file("t.tsv", "11\t2\t0\n10\t1\t2\n"), &queries, &docs).unwrap();
        assert_eq!(queries.text(t[0][0]).unwrap(), "who");
        assert_eq!(
            t.iter().map(|t| [t[1], t[2]]).collect::<Vec<_>>(),
            [[2, 0], [1, 2]]
        );
        let err = read_id_triplets(&file("t.tsv", "10\t1\t2\n10\t1\t9\n"), &queries, &docs)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.tsv:2:1: the document id \"9\" is not in") && err.contains("docs.tsv"),
            "{err}"
        );
        let err = read_id_triplets(&file("t.tsv", "10 1 2\n"), &queries, &docs)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("t.tsv:1:1: expected 3 tab-separated ids"),
            "{err}"
        );
    }
}
