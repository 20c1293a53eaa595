//! Builds the offset index of an MS MARCO-sized text collection and reads passages by id.
//!
//! `cargo run --release -p xpm-torch-core --example collection_index -- [PASSAGES] [ids] [DIR]`
//! writes `PASSAGES` (default 8 841 823, MS MARCO's count) passages of about 330 bytes (MS
//! MARCO's mean) to a file in `DIR` (default: the system's temporary directory), with ids
//! `0, 1, 2, ...` in order or, with `ids` = `strings`, ids `D<n>` in a shuffled order; then
//! indexes it, reports the time, the index's bytes and the process's peak resident memory,
//! reads 200 000 passages by random ids, and removes the file.
// An example may stop at the first failure.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::time::Instant;

use xpm_torch_core::data::TextCollection;

const WORDS: [&str; 16] = [
    "the",
    "river",
    "capital",
    "of",
    "mountain",
    "population",
    "is",
    "a",
    "city",
    "known",
    "for",
    "its",
    "train",
    "station",
    "and",
    "museum",
];

struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

fn id_of(strings: bool, n: u64) -> String {
    if strings {
        format!("D{:x}", n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
    } else {
        n.to_string()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let passages: u64 = args.get(1).map_or(8_841_823, |a| a.parse().unwrap());
    let strings = args.get(2).is_some_and(|a| a == "strings");
    let dir = args
        .get(3)
        .map_or_else(std::env::temp_dir, std::path::PathBuf::from);
    let path = dir.join(format!("xpm-collection-{}.tsv", std::process::id()));

    let started = Instant::now();
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut out = std::io::BufWriter::with_capacity(1 << 22, std::fs::File::create(&path).unwrap());
    let mut line = String::with_capacity(512);
    for n in 0..passages {
        line.clear();
        line.push_str(&id_of(strings, n));
        line.push('\t');
        while line.len() < 280 + (rng.next() % 100) as usize {
            line.push_str(WORDS[(rng.next() % 16) as usize]);
            line.push(' ');
        }
        line.push_str("end\n");
        out.write_all(line.as_bytes()).unwrap();
    }
    out.flush().unwrap();
    drop(out);
    let bytes = std::fs::metadata(&path).unwrap().len();
    println!(
        "wrote {passages} passages, {:.2} GB, in {:.1} s",
        bytes as f64 / 1e9,
        started.elapsed().as_secs_f64()
    );
    let before = peak_rss_mib();

    let started = Instant::now();
    let collection = TextCollection::open(&path).unwrap();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "indexed in {seconds:.2} s ({:.0} MB/s); index {:.1} MiB = {:.1} bytes per passage; \
         peak RSS {:.0} MiB (before indexing {before:.0} MiB)",
        bytes as f64 / 1e6 / seconds,
        collection.index_bytes() as f64 / (1 << 20) as f64,
        collection.index_bytes() as f64 / passages as f64,
        peak_rss_mib(),
    );

    let reads = 200_000;
    let started = Instant::now();
    let mut total = 0usize;
    for _ in 0..reads {
        let id = id_of(strings, rng.next() % passages);
        let entry = collection.entry(&id).unwrap();
        total += collection.text(entry).unwrap().len();
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{reads} random reads by id in {seconds:.2} s: {:.0} passages/s ({} bytes)",
        reads as f64 / seconds,
        total
    );
    std::fs::remove_file(&path).unwrap();
}
