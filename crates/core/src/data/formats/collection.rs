//! Texts by id in a file read where needed, never parsed whole: `id<TAB>text` per line, as
//! MS MARCO's `collection.tsv` (8.8 M passages, 3 GB) and `queries.tsv`.
//!
//! One pass builds an index of line offsets; a text is then one positioned read. The index
//! costs 8 bytes per entry when the ids are the entries' positions (`0, 1, 2, ...` in file
//! order, as MS MARCO's passages), 12 bytes for other decimal ids, and 20 bytes for any ids
//! (hashed, 64 bits).

use std::collections::hash_map::DefaultHasher;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::data::formats::bom::without_bom;
use crate::{Error, Result};

/// A collection's position of an entry (its line among the non-blank ones, from 0).
pub type Entry = u32;

const NONE: Entry = Entry::MAX;

/// Where an id's entry is.
#[derive(Debug)]
enum IdMap {
    /// Entry `k` has the id `k`.
    Identity,
    /// Decimal ids: the entry of id `i` at `i` ([`NONE`] where none).
    Dense(Vec<Entry>),
    /// Any other ids: their 64-bit hashes, sorted, with their entries.
    Hashed {
        hashes: Vec<u64>,
        entries: Vec<Entry>,
    },
}

/// `id<TAB>text` lines read by id through an offset index.
#[derive(Debug)]
pub struct TextCollection {
    file: File,
    name: String,
    /// Byte offset of each entry's line, then the file's length.
    starts: Vec<u64>,
    ids: IdMap,
}

fn hash_id(id: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

/// The value of a decimal id written without leading zeros (so that `7` and `007` differ).
fn decimal(id: &[u8]) -> Option<u64> {
    if id.is_empty() || id.len() > 18 || (id[0] == b'0' && id.len() > 1) {
        return None;
    }
    id.iter().try_fold(0u64, |v, &b| {
        b.is_ascii_digit().then(|| v * 10 + u64::from(b - b'0'))
    })
}

/// Ids gathered while indexing: none while each id is its entry's position, then decimal
/// values while every id is one, else hashes.
enum IdsSeen {
    Positions(u64),
    Decimal(Vec<u64>),
    Hashed(Vec<u64>),
}

impl IdsSeen {
    fn push(&mut self, id: &[u8]) {
        if let IdsSeen::Positions(count) = self {
            if decimal(id) == Some(*count) {
                *count += 1;
                return;
            }
            *self = IdsSeen::Decimal((0..*count).collect());
        }
        if let IdsSeen::Decimal(values) = self {
            match decimal(id) {
                Some(v) => return values.push(v),
                None => {
                    let hashes = values
                        .iter()
                        .map(|v| hash_id(v.to_string().as_bytes()))
                        .collect();
                    *self = IdsSeen::Hashed(hashes);
                }
            }
        }
        if let IdsSeen::Hashed(hashes) = self {
            hashes.push(hash_id(id));
        }
    }
}

fn data_error(file: &str, line: usize, column: usize, message: impl Into<String>) -> Error {
    Error::Data {
        file: file.to_string(),
        line,
        column,
        message: message.into(),
    }
}

/// Checks one `id<TAB>text` line (without its end of line) and returns its id.
fn check_line<'a>(line: &'a [u8], file: &str, number: usize) -> Result<&'a [u8]> {
    let text = std::str::from_utf8(line).map_err(|e| {
        let column = String::from_utf8_lossy(&line[..e.valid_up_to()])
            .chars()
            .count()
            + 1;
        data_error(file, number, column, "invalid UTF-8")
    })?;
    let Some((id, body)) = text.split_once('\t') else {
        return Err(data_error(
            file,
            number,
            1,
            "expected an id, a tab, then the text",
        ));
    };
    if id.trim().is_empty() || id.trim() != id {
        return Err(data_error(
            file,
            number,
            1,
            format!("the id {id:?} is empty or has spaces around it"),
        ));
    }
    if body.trim().is_empty() {
        return Err(data_error(
            file,
            number,
            id.chars().count() + 2,
            format!("the text of {id:?} is empty"),
        ));
    }
    Ok(&line[..id.len()])
}

impl TextCollection {
    /// Indexes the file at `path` in one pass (no text is kept). A byte-order mark at its start
    /// is skipped.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::Data`] at `file:line:column` for a line without a tab, an empty
    /// id or text, invalid UTF-8, an id seen before, or a file without any line.
    pub fn open(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut reader = BufReader::with_capacity(1 << 20, &file);
        let mut starts = Vec::new();
        let mut ids = IdsSeen::Positions(0);
        let mut offset = 0u64;
        let mut line = Vec::new();
        for number in 1.. {
            line.clear();
            let read = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| Error::io(path, e))?;
            if read == 0 {
                break;
            }
            let trimmed = trim_end(&line);
            // A byte-order mark before the first line is no part of its id: the entry starts
            // after it.
            let content = if number == 1 {
                without_bom(trimmed)
            } else {
                trimmed
            };
            if !content.iter().all(u8::is_ascii_whitespace) {
                ids.push(check_line(content, &name, number)?);
                starts.push(offset + (trimmed.len() - content.len()) as u64);
            }
            offset += read as u64;
        }
        if starts.is_empty() {
            return Err(data_error(
                &name,
                1,
                1,
                "the file holds no `id<TAB>text` line",
            ));
        }
        if starts.len() >= NONE as usize {
            return Err(data_error(&name, 1, 1, "more than 4 294 967 294 entries"));
        }
        starts.push(offset);
        starts.shrink_to_fit();
        let mut collection = TextCollection {
            file,
            name,
            starts,
            ids: IdMap::Identity,
        };
        collection.ids = collection.id_map(ids)?;
        Ok(collection)
    }

    fn id_map(&self, ids: IdsSeen) -> Result<IdMap> {
        let n = self.len();
        match ids {
            IdsSeen::Positions(_) => Ok(IdMap::Identity),
            // Dense when the id range costs at most a few slots per entry.
            IdsSeen::Decimal(values)
                if values
                    .iter()
                    .all(|&v| v < (4 * n as u64 + 1024).min(NONE as u64)) =>
            {
                let largest = values.iter().copied().max().unwrap_or(0);
                let mut by_id = vec![NONE; largest as usize + 1];
                for (entry, &v) in values.iter().enumerate() {
                    if by_id[v as usize] != NONE {
                        return Err(self.duplicate(entry as Entry));
                    }
                    by_id[v as usize] = entry as Entry;
                }
                Ok(IdMap::Dense(by_id))
            }
            IdsSeen::Decimal(values) => Ok(self.hashed(
                values
                    .iter()
                    .map(|v| hash_id(v.to_string().as_bytes()))
                    .collect(),
            )?),
            IdsSeen::Hashed(hashes) => self.hashed(hashes),
        }
    }

    fn hashed(&self, hashes: Vec<u64>) -> Result<IdMap> {
        let mut order: Vec<Entry> = (0..hashes.len() as Entry).collect();
        order.sort_unstable_by_key(|&e| (hashes[e as usize], e));
        let sorted: Vec<u64> = order.iter().map(|&e| hashes[e as usize]).collect();
        for k in 1..order.len() {
            // Equal hashes: a repeated id, or (odds ~n²/2⁶⁵) two ids sharing a hash.
            if sorted[k] == sorted[k - 1] {
                let (a, b) = (order[k - 1], order[k]);
                if self.id(a)? == self.id(b)? {
                    return Err(self.duplicate(b));
                }
            }
        }
        Ok(IdMap::Hashed {
            hashes: sorted,
            entries: order,
        })
    }

    fn duplicate(&self, entry: Entry) -> Error {
        match (self.id(entry), self.line_of(entry)) {
            (Ok(id), Ok(line)) => data_error(
                &self.name,
                line,
                1,
                format!("the id {id:?} is on an earlier line too: ids must be unique"),
            ),
            (Err(e), _) | (_, Err(e)) => e,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Whether there is no entry (never, once opened).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The file, as named when opened.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Bytes the index holds (offsets and id map).
    pub fn index_bytes(&self) -> usize {
        let map = match &self.ids {
            IdMap::Identity => 0,
            IdMap::Dense(v) => v.capacity() * 4,
            IdMap::Hashed { hashes, entries } => hashes.capacity() * 8 + entries.capacity() * 4,
        };
        self.starts.capacity() * 8 + map
    }

    /// The entry of `id`, if the collection holds it. With ids that are not all decimal
    /// numbers, an absent id whose 64-bit hash equals a present one's would be taken for it
    /// (odds about 1 in 10¹² per look-up at 8.8 M ids).
    pub fn entry(&self, id: &str) -> Option<Entry> {
        let found = match &self.ids {
            IdMap::Identity => decimal(id.as_bytes()).filter(|&v| v < self.len() as u64)? as Entry,
            IdMap::Dense(by_id) => *by_id.get(decimal(id.as_bytes())? as usize)?,
            IdMap::Hashed { hashes, entries } => {
                let h = hash_id(id.as_bytes());
                let first = first_not_below(hashes, h);
                let last = first + hashes[first..].iter().take_while(|&&x| x == h).count();
                match last - first {
                    0 => return None,
                    1 => entries[first],
                    // Ids sharing a hash: compare them.
                    _ => *entries[first..last]
                        .iter()
                        .find(|&&e| self.id(e).is_ok_and(|x| x == id))?,
                }
            }
        };
        (found != NONE).then_some(found)
    }

    /// The raw line of `entry` (its end of line trimmed).
    fn line(&self, entry: Entry) -> Result<Vec<u8>> {
        let start = self.starts[entry as usize];
        let end = self.starts[entry as usize + 1];
        let mut bytes = vec![0u8; (end - start) as usize];
        self.file
            .read_exact_at(&mut bytes, start)
            .map_err(|e| Error::io(&self.name, e))?;
        let kept = trim_end(&bytes).len();
        bytes.truncate(kept);
        Ok(bytes)
    }

    fn split(&self, entry: Entry) -> Result<(String, String)> {
        let line = String::from_utf8(self.line(entry)?).map_err(|_| Error::Io {
            path: self.name.clone(),
            message: "the file changed since it was indexed (invalid UTF-8 now)".into(),
        })?;
        match line.split_once('\t') {
            Some((id, text)) => Ok((id.to_string(), text.to_string())),
            None => Err(Error::Io {
                path: self.name.clone(),
                message: "the file changed since it was indexed (a line lost its tab)".into(),
            }),
        }
    }

    /// The id of `entry`.
    ///
    /// # Errors
    /// [`Error::Io`], also when the file changed since it was indexed.
    pub fn id(&self, entry: Entry) -> Result<String> {
        Ok(self.split(entry)?.0)
    }

    /// The text of `entry`.
    ///
    /// # Errors
    /// [`Error::Io`], also when the file changed since it was indexed.
    pub fn text(&self, entry: Entry) -> Result<String> {
        Ok(self.split(entry)?.1)
    }

    /// The 1-based line of `entry` (counted from the file: for messages only).
    fn line_of(&self, entry: Entry) -> Result<usize> {
        let end = self.starts[entry as usize];
        let mut buf = vec![0u8; 1 << 16];
        let (mut at, mut newlines) = (0u64, 0);
        while at < end {
            let n = buf.len().min((end - at) as usize);
            self.file
                .read_exact_at(&mut buf[..n], at)
                .map_err(|e| Error::io(&self.name, e))?;
            newlines += buf[..n].iter().filter(|&&b| b == b'\n').count();
            at += n as u64;
        }
        Ok(newlines + 1)
    }
}

/// The position of the first of `sorted` hashes not below `h` (as `partition_point`), by
/// interpolation: hashes are spread uniformly, so each probe lands near `h`'s place and a look-up
/// touches a few cache lines rather than a binary search's ~23 far apart (7 M look-ups among
/// 8.8 M hashes: 3.0 s against 5.9 s on a 2-core machine). A run's every line is looked up.
/// A binary search finishes a range that interpolation has not shrunk in 8 probes.
fn first_not_below(sorted: &[u64], h: u64) -> usize {
    // All of sorted[..lo] are below h, none of sorted[hi..] is.
    let (mut lo, mut hi) = (0, sorted.len());
    for _ in 0..8 {
        if hi - lo <= 8 {
            break;
        }
        let (a, b) = (sorted[lo], sorted[hi - 1]);
        if h <= a {
            return lo;
        }
        if h > b {
            return hi;
        }
        // a < h <= b: the probe is in lo..hi.
        let span = (hi - 1 - lo) as u128;
        let probe = lo + (u128::from(h - a) * span / u128::from(b - a)) as usize;
        if sorted[probe] < h {
            lo = probe + 1;
        } else {
            hi = probe;
        }
    }
    lo + sorted[lo..hi].partition_point(|&x| x < h)
}

/// `line` without its end of line (`\n`, `\r\n`) nor the blank lines a range may hold.
fn trim_end(line: &[u8]) -> &[u8] {
    let end = line
        .iter()
        .rposition(|&b| b != b'\n' && b != b'\r')
        .map_or(0, |i| i + 1);
    &line[..end]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests_support::scratch_dir;

    fn collection(text: &str) -> Result<TextCollection> {
        let path = scratch_dir().join("c.tsv");
        std::fs::write(&path, text).unwrap();
        TextCollection::open(&path)
    }

    fn texts(c: &TextCollection, ids: &[&str]) -> Vec<Option<String>> {
        ids.iter()
            .map(|id| c.entry(id).map(|e| c.text(e).unwrap()))
            .collect()
    }

    #[test]
    fn ids_in_order_need_no_map_and_read_back() {
        let c = collection("0\tzéro\r\n1\tun 🍕\n\n2\tdeux\ttabs kept");
        let c = c.unwrap();
        assert!(matches!(c.ids, IdMap::Identity));
        assert_eq!(c.index_bytes(), 4 * 8);
        assert_eq!(
            texts(&c, &["2", "0", "1", "3", "01", "x"]),
            [
                Some("deux\ttabs kept".into()),
                Some("zéro".into()),
                Some("un 🍕".into()),
                None,
                None,
                None
            ]
        );
    }

    #[test]
    fn decimal_ids_out_of_order_and_string_ids_are_found() {
        let dense = collection("7\tseven\n3\tthree\n0\tzero\n");
        let dense = dense.unwrap();
        assert!(matches!(dense.ids, IdMap::Dense(_)));
        assert_eq!(
            texts(&dense, &["3", "7", "0", "1", "8", "07"]),
            [
                Some("three".into()),
                Some("seven".into()),
                Some("zero".into()),
                None,
                None,
                None
            ]
        );
        let sparse = collection("12\ta\n99999999999\tb\n");
        let sparse = sparse.unwrap();
        assert!(matches!(sparse.ids, IdMap::Hashed { .. }));
        assert_eq!(
            texts(&sparse, &["99999999999", "12", "13"]),
            [Some("b".into()), Some("a".into()), None]
        );
        let named = collection("1\tone\nD-2\ttwo\n007\tthree\n");
        let named = named.unwrap();
        assert_eq!(
            texts(&named, &["D-2", "007", "1", "7", "d-2"]),
            [
                Some("two".into()),
                Some("three".into()),
                Some("one".into()),
                None,
                None
            ]
        );
        assert_eq!(named.id(named.entry("D-2").unwrap()).unwrap(), "D-2");
    }

    #[test]
    fn the_interpolation_search_finds_what_a_binary_search_does() {
        let mut rng = crate::rng::Rng::new(3);
        for n in [0, 1, 2, 3, 10, 1000, 100_000] {
            let mut sorted: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
            // Repeated hashes, and the extremes.
            for k in (0..n).step_by(7) {
                sorted.push(sorted[k]);
            }
            sorted.extend([0, 0, u64::MAX, u64::MAX]);
            sorted.sort_unstable();
            let mut probes: Vec<u64> = (0..2000).map(|_| rng.next_u64()).collect();
            probes.extend(sorted.iter().step_by(3).copied());
            probes.extend(sorted.iter().step_by(5).map(|x| x.wrapping_add(1)));
            probes.extend([0, 1, u64::MAX, u64::MAX - 1]);
            for h in probes {
                assert_eq!(
                    first_not_below(&sorted, h),
                    sorted.partition_point(|&x| x < h),
                    "n {n}, h {h}"
                );
            }
        }
        assert_eq!(first_not_below(&[], 5), 0);
        // Far from uniform: interpolation misses, the binary search finishes.
        let skewed: Vec<u64> = (0..5000u64).chain([u64::MAX / 2, u64::MAX]).collect();
        for h in [
            0,
            1,
            17,
            4999,
            5000,
            5001,
            u64::MAX / 2,
            u64::MAX / 2 + 1,
            u64::MAX,
        ] {
            assert_eq!(
                first_not_below(&skewed, h),
                skewed.partition_point(|&x| x < h),
                "{h}"
            );
        }
    }

    #[test]
    fn malformed_lines_name_the_file_line_and_column() {
        let cases = [
            ("0\ta\n1 b\n", "c.tsv:2:1: expected an id, a tab"),
            ("0\ta\n\n1\t  \n", "c.tsv:3:3: the text of \"1\" is empty"),
            ("\tx\n", "c.tsv:1:1: the id \"\" is empty"),
            (
                "a\tx\nb\ty\na\tz\n",
                "c.tsv:3:1: the id \"a\" is on an earlier line",
            ),
            (
                "5\tx\n2\ty\n5\tz\n",
                "c.tsv:3:1: the id \"5\" is on an earlier line",
            ),
            ("\n \n", "c.tsv:1:1: the file holds no"),
        ];
        for (text, want) in cases {
            let err = collection(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?}: {err}");
        }
        let path = scratch_dir().join("c.tsv");
        std::fs::write(&path, b"0\tok\n1\tbad \xff\n").unwrap();
        let err = TextCollection::open(&path).unwrap_err().to_string();
        assert!(err.contains("c.tsv:2:7: invalid UTF-8"), "{err}");
    }
}
