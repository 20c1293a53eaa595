//! Tests of the built-in formula variables of records: the length `l` of token pairs and of
//! query groups, and the record count `bs`.

use tch::Kind;

use super::*;
use crate::config::BatcherConfig;
use crate::data::{BatchwiseBatch, PairwiseBatch};

/// Token rows of the given lengths (ids all 1, padded to the longest).
fn tokens(lengths: &[i64]) -> Tokens {
    let width = lengths.iter().copied().max().unwrap_or(1);
    Tokens {
        ids: Tensor::ones([lengths.len() as i64, width], (Kind::Int64, Device::Cpu)),
        lengths: Tensor::from_slice(lengths),
    }
}

fn text(query: &[i64], document: &[i64]) -> ScoreInput {
    ScoreInput::Text {
        query: tokens(query),
        document: tokens(document),
    }
}

fn built_in() -> RecordDims {
    RecordDims::new(&AnyBatcher::Batcher(BatcherConfig {}), &None, "b").unwrap()
}

#[test]
fn a_token_pair_is_as_long_as_its_longer_side_and_a_group_as_its_longest_record() {
    let pairs = Batch::Pairwise(PairwiseBatch::new(
        text(&[2, 3, 1], &[5, 1, 1]),
        text(&[2, 3, 1], &[1, 9, 2]),
    ));
    let dims = built_in().batch_dims(&pairs).unwrap();
    // Records: max(2+5, 2+1) = 7, max(3+1, 3+9) = 12, max(1+1, 1+2) = 3.
    assert_eq!(dims.group(&[0, 2])["l"], 7);
    assert_eq!(dims.group(&[2])["l"], 3);
    assert_eq!(dims.group(&[0, 1, 2])["l"], 12);
    assert_eq!(dims.group(&[0, 1, 2])["bs"], 3);
}

#[test]
fn a_query_group_is_as_long_as_its_longest_document() {
    // Two queries of two documents each: rows 0-1 belong to query 0, rows 2-3 to query 1.
    let groups = Batch::Batchwise(BatchwiseBatch {
        input: text(&[1, 1, 1, 1], &[3, 8, 2, 2]),
        relevance: Tensor::zeros([2, 2], (Kind::Float, Device::Cpu)),
    });
    let dims = built_in().batch_dims(&groups).unwrap();
    assert_eq!(dims.len(), 2);
    assert_eq!(dims.group(&[0])["l"], 9);
    assert_eq!(dims.group(&[1])["l"], 3);
}
