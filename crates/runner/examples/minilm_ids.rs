//! `minilm_ids MODEL_DIR TRIPLETS.tsv MAX_LENGTH PAIRS OUT.safetensors`: the (query, document)
//! pairs of a text triplet file tokenised as xpm-torch's `TextTripletSampler` tokenises them for
//! a cross-encoder (the core's `TextEncoding`), `PAIRS` a batch (the batch's positives, then its
//! negatives), written as `input_ids`, `token_type_ids` and `attention_mask` (int64, one row
//! per pair) for the GPU suite's plain PyTorch loop, which has no tokenizer. Every batch must
//! fill `MAX_LENGTH`, so that each step of the loop has the shape of xpm-torch's.
// A build step stops at the first failure, with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use tch::Tensor;
use xpm_torch_core::data::{EncodedTexts, ScoreInput, TextEncoding};
use xpm_torch_core::text::TextTokenizer;

const USAGE: &str = "usage: minilm_ids MODEL_DIR TRIPLETS.tsv MAX_LENGTH PAIRS OUT.safetensors";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, triplets, max_length, pairs, out] = args.as_slice() else {
        eprintln!("{USAGE}");
        std::process::exit(2);
    };
    let max_length: i64 = max_length.parse().expect("MAX_LENGTH is a number");
    let pairs: usize = pairs.parse().expect("PAIRS is a number");
    assert!(
        pairs.is_multiple_of(2),
        "PAIRS is even: half positives, half negatives"
    );
    let tokenizer = TextTokenizer::from_dir(Path::new(model), max_length as usize)
        .expect("reading the tokenizer");
    let encoding = TextEncoding::Pairs(Arc::new(tokenizer));
    let text = std::fs::read_to_string(triplets).expect("reading the triplets");
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| l.split('\t').collect())
        .collect();
    assert!(
        rows.iter().all(|r| r.len() == 3),
        "{triplets}: every line is query<TAB>positive<TAB>negative"
    );
    let (mut ids, mut types, mut masks) = (Vec::new(), Vec::new(), Vec::new());
    for batch in rows.chunks_exact(pairs / 2) {
        let queries: Vec<&str> = batch.iter().chain(batch).map(|r| r[0]).collect();
        let documents: Vec<&str> = batch
            .iter()
            .map(|r| r[1])
            .chain(batch.iter().map(|r| r[2]))
            .collect();
        let (input, _) = encoding.encode(&queries, &documents).expect("encoding");
        let ScoreInput::Encoded(EncodedTexts::Pairs(encoded)) = input else {
            unreachable!("a cross-encoder's encoding gives encoded pairs")
        };
        assert_eq!(
            encoded.ids.size()[1],
            max_length,
            "{triplets}: a batch is shorter than MAX_LENGTH tokens; use longer documents"
        );
        ids.push(encoded.ids);
        types.push(encoded.type_ids);
        masks.push(encoded.mask);
    }
    assert!(!ids.is_empty(), "{triplets}: fewer triplets than one batch");
    let tensors = [
        ("input_ids", Tensor::cat(&ids, 0)),
        ("token_type_ids", Tensor::cat(&types, 0)),
        ("attention_mask", Tensor::cat(&masks, 0)),
    ];
    Tensor::write_safetensors(&tensors, out).expect("writing the ids");
    println!(
        "{out}: {} batches of {pairs} pairs x {max_length} tokens",
        ids.len()
    );
}
