//! The byte-order mark (U+FEFF, `EF BB BF` in UTF-8) that some tools write at the start of a
//! UTF-8 text file (Windows Notepad, Excel's "CSV UTF-8", PowerShell). Kept, it would become
//! part of the first line's first field: a collection's first id would no longer be `0`, and
//! the file naming that id would be blamed. Every reader of text data skips it, as Python's
//! `utf-8-sig` codec, pandas and most CSV readers do.

/// The UTF-8 byte-order mark.
const BOM: &[u8] = "\u{FEFF}".as_bytes();

/// `first` (a file's first line, or its whole text) without a leading byte-order mark.
///
/// Every text format of the core passes its file's start through here, in one of three
/// places: [`crate::data::read_utf8`] (LETOR/SVMlight, triplets of token ids, text triplets and
/// scored text pairs, TSV and JSONL), [`crate::data::formats::trec::each_line`] (qrels, runs, triplets of ids)
/// and [`crate::data::TextCollection::open`] (collections and queries).
pub(crate) fn without_bom(first: &[u8]) -> &[u8] {
    first.strip_prefix(BOM).unwrap_or(first)
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::config::tests_support::scratch_dir;
    use crate::config::{
        IdTripletSamplerConfig, TextCollectionConfig, TextPairFileConfig, TextTripletFileConfig,
        TokenTripletFileConfig, Typed,
    };
    use crate::data::formats::msmarco::tests::{
        fixture, id_triplets, qrels, reranking_config, run_file,
    };
    use crate::data::{
        read_letor, read_text_pairs, read_text_triplets, read_triplets, IdTriplets, Reranking,
        TripletTexts,
    };

    /// `text` written as `name` in two new directories, the second time after a BOM.
    fn both(name: &str, text: &str) -> [PathBuf; 2] {
        let plain = scratch_dir().join(name);
        let marked = scratch_dir().join(name);
        std::fs::write(&plain, text).unwrap();
        std::fs::write(&marked, [BOM, text.as_bytes()].concat()).unwrap();
        [plain, marked]
    }

    fn show(path: &Path) -> String {
        path.display().to_string()
    }

    #[test]
    fn the_helper_strips_one_leading_mark_only() {
        assert_eq!(without_bom(b"\xEF\xBB\xBF0\tzero"), b"0\tzero");
        assert_eq!(without_bom(b"0\tzero"), b"0\tzero");
        assert_eq!(without_bom(b"\xEF\xBB"), b"\xEF\xBB");
        assert_eq!(without_bom(b"x\xEF\xBB\xBF"), b"x\xEF\xBB\xBF");
    }

    #[test]
    fn letor_and_triplet_and_pair_files_read_the_same_with_a_mark() {
        let [plain, marked] = both("l.txt", "2 qid:1 1:0.5 3:1 # d\n0 qid:1 2:1\n");
        assert_eq!(
            read_letor(&plain, None).unwrap(),
            read_letor(&marked, None).unwrap()
        );
        // An error on the first line is at the same column: the mark is not a character.
        let [plain, marked] = both("l.txt", "1 qid:1 2:x\n");
        let columns = [plain, marked].map(|p| {
            let err = read_letor(&p, None).unwrap_err().to_string();
            err.split_once("l.txt:1:").unwrap().1.to_string()
        });
        assert_eq!(columns[0], columns[1]);

        for (name, text) in [
            ("t.tsv", "1 2\t3\t4 5\n6\t7\t8\n"),
            (
                "t.jsonl",
                "{\"query\": [1], \"positive\": [2], \"negative\": [3]}\n",
            ),
        ] {
            let read = |path: &Path| {
                let config = TokenTripletFileConfig {
                    id: "t".into(),
                    path: show(path),
                    format: None,
                };
                read_triplets(&config, "data").unwrap()
            };
            let [plain, marked] = both(name, text);
            assert_eq!(read(&plain), read(&marked), "{name}");
        }

        for (name, text) in [
            ("x.tsv", "what\tthe answer\tnot it\n"),
            (
                "x.jsonl",
                "{\"query\": \"what\", \"positive\": \"yes\", \"negative\": \"no\"}\n",
            ),
        ] {
            let read = |path: &Path| {
                let config = TextTripletFileConfig {
                    id: "x".into(),
                    path: show(path),
                    format: None,
                };
                read_text_triplets(&config, "data").unwrap()
            };
            let [plain, marked] = both(name, text);
            assert_eq!(read(&plain), read(&marked), "{name}");
            assert_eq!(read(&marked).query[0], "what");
        }

        for (name, text) in [
            ("p.tsv", "what\tthe answer\t1\n"),
            (
                "p.jsonl",
                "{\"query\": \"what\", \"document\": \"yes\", \"score\": 0.5}\n",
            ),
        ] {
            let read = |path: &Path| {
                let config = TextPairFileConfig {
                    id: "p".into(),
                    path: show(path),
                    format: None,
                };
                read_text_pairs(&config, "data").unwrap()
            };
            let [plain, marked] = both(name, text);
            assert_eq!(read(&plain), read(&marked), "{name}");
            assert_eq!(read(&marked).query[0], "what");
        }
    }

    /// The MS MARCO fixture's files, each with a mark, in a new directory.
    fn marked_msmarco() -> PathBuf {
        let dir = scratch_dir();
        for name in [
            "collection.tsv",
            "queries.dev.tsv",
            "queries.train.tsv",
            "qrels.dev.tsv",
            "run.dev.trec",
            "triples.train.tsv",
        ] {
            let text = std::fs::read(fixture(name)).unwrap();
            std::fs::write(dir.join(name), [BOM, &text].concat()).unwrap();
        }
        dir
    }

    fn collection(path: PathBuf) -> Typed<TextCollectionConfig> {
        Typed(TextCollectionConfig {
            id: "c".into(),
            path: show(&path),
        })
    }

    #[test]
    fn collections_qrels_runs_and_id_triplets_read_the_same_with_a_mark() {
        let dir = marked_msmarco();
        let triplets = |at: &dyn Fn(&str) -> PathBuf| {
            let config = IdTripletSamplerConfig {
                queries: collection(at("queries.train.tsv")),
                documents: collection(at("collection.tsv")),
                triplets: Typed(id_triplets(at("triples.train.tsv"))),
            };
            let triplets = IdTriplets::open(&config).unwrap();
            let rows: Vec<usize> = (0..triplets.count()).collect();
            triplets.texts(&rows).unwrap()
        };
        assert_eq!(triplets(&|n| dir.join(n)), triplets(&|n| fixture(n)));

        let reranking = |at: &dyn Fn(&str) -> PathBuf| {
            let mut config = reranking_config(at("run.dev.trec"), None);
            config.queries = collection(at("queries.dev.tsv"));
            config.documents = collection(at("collection.tsv"));
            config.qrels = Typed(qrels(at("qrels.dev.tsv")));
            config.run = Typed(run_file(at("run.dev.trec")));
            let set = Reranking::open(&config, "d").unwrap();
            let mut judged = set.judged.clone();
            judged.iter_mut().for_each(|grades| grades.sort_unstable());
            (set.data.clone(), judged, set.pairs.clone())
        };
        assert_eq!(reranking(&|n| dir.join(n)), reranking(&|n| fixture(n)));
    }
}
