//! Tests of the packers on records that are only lengths: uniform and adaptive splitting,
//! sorting, batch-size bounds, and records over budget.

use super::super::cost::Dims;
use super::super::dims::{BatchDims, Combine};
use super::super::formula::tests::square_formula;
use super::*;

/// Records that are only lengths, as in the reference's packer fixtures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Lengths(pub Vec<u64>);

impl MicroBatchable for Lengths {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn select(&self, indices: &[usize]) -> Result<Self> {
        Ok(Lengths(indices.iter().map(|i| self.0[*i]).collect()))
    }
}

/// `bs` = record count, `l` = longest record.
pub(crate) fn length_dims(batch: &Lengths) -> Result<BatchDims> {
    BatchDims::new("bs", batch.0.len()).with("l", Combine::Max, batch.0.clone())
}

/// The reference's packer fixture: `cost = bs·l²`, fitted on three heterogeneous probes.
pub(crate) fn square_cost_model() -> CostModel {
    let mut m = CostModel::new(square_formula(), "bs", "batcher").unwrap();
    for (bs, l) in [(1u64, 64u64), (2, 128), (4, 256)] {
        let d = Dims::from([("bs".to_string(), bs), ("l".to_string(), l)]);
        m.observe(&d, (bs * l * l) as f64).unwrap();
    }
    m.fit().unwrap();
    m
}

fn pack(
    packer: &Packer,
    records: Vec<u64>,
    budget: f64,
    batch_size: usize,
) -> (Vec<Vec<u64>>, Vec<String>) {
    let model = square_cost_model();
    let batch = Lengths(records);
    let limits = PackingLimits {
        model: &model,
        budget,
        batch_size,
        min_batch_size: 1,
    };
    let mut warnings = Vec::new();
    let groups = packer
        .pack(&length_dims(&batch).unwrap(), &limits, &mut |w| {
            warnings.push(w)
        })
        .unwrap();
    let lengths = groups
        .iter()
        .map(|g| g.iter().map(|i| batch.0[*i]).collect())
        .collect();
    (lengths, warnings)
}

const FOUR_OF_128: f64 = (4 * 128 * 128 + 1) as f64;

#[test]
fn uniform_cuts_equal_slices() {
    // Reference scenario 21.
    let (groups, warnings) = pack(&Packer::Uniform, vec![128; 12], FOUR_OF_128, 16);
    assert_eq!(groups, vec![vec![128; 4]; 3]);
    assert!(warnings.is_empty());
    let (groups, _) = pack(&Packer::Uniform, vec![128; 10], FOUR_OF_128, 16);
    assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), [4, 4, 2]);
}

#[test]
fn uniform_is_bounded_by_the_batch_size() {
    let (groups, _) = pack(&Packer::Uniform, vec![1; 10], 1e12, 3);
    assert_eq!(
        groups.iter().map(Vec::len).collect::<Vec<_>>(),
        [3, 3, 3, 1]
    );
    let (groups, _) = pack(&Packer::Uniform, vec![1; 5], 1e12, 64);
    assert_eq!(groups, vec![vec![1; 5]]);
}

#[test]
fn uniform_warns_when_one_record_is_over_budget() {
    let (groups, warnings) = pack(&Packer::Uniform, vec![256, 256], 1000.0, 16);
    assert_eq!(groups, vec![vec![256], vec![256]]);
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].contains("over the budget of 1000 bytes"),
        "{}",
        warnings[0]
    );
}

#[test]
fn adaptive_fills_each_micro_batch() {
    // Reference scenario 22.
    let mut records = vec![128; 4];
    records.extend([32; 16]);
    let adaptive = Packer::Adaptive { sort_by: None };
    let (groups, _) = pack(&adaptive, records, FOUR_OF_128, 64);
    assert_eq!(groups, vec![vec![128; 4], vec![32; 16]]);
}

#[test]
fn sorting_reduces_the_micro_batches_of_mixed_lengths() {
    // Reference scenario 23.
    let records = vec![32, 128, 32, 128, 32, 32, 128, 32, 128, 32, 32, 32];
    let (unsorted, _) = pack(
        &Packer::Adaptive { sort_by: None },
        records.clone(),
        FOUR_OF_128,
        64,
    );
    assert_eq!(
        unsorted,
        vec![
            vec![32, 128, 32, 128],
            vec![32, 32, 128, 32],
            vec![128, 32, 32, 32]
        ]
    );
    let sorted_packer = Packer::Adaptive {
        sort_by: Some("l".into()),
    };
    let (sorted, _) = pack(&sorted_packer, records.clone(), FOUR_OF_128, 64);
    assert_eq!(sorted, vec![vec![128; 4], vec![32; 8]]);
    assert!(sorted.len() <= unsorted.len());
    let multiset = |groups: &[Vec<u64>]| {
        let mut all: Vec<u64> = groups.concat();
        all.sort_unstable();
        all
    };
    let mut expected = records;
    expected.sort_unstable();
    assert_eq!(multiset(&sorted), expected);
    assert_eq!(multiset(&unsorted), expected);
}

#[test]
fn a_record_over_budget_goes_alone_with_a_warning() {
    // Reference scenario 24.
    let (groups, warnings) = pack(
        &Packer::Adaptive { sort_by: None },
        vec![256, 256],
        1000.0,
        64,
    );
    assert_eq!(groups, vec![vec![256], vec![256]]);
    assert_eq!(warnings.len(), 2);
    assert!(
        warnings[0].starts_with("record 0 alone is predicted"),
        "{}",
        warnings[0]
    );
    // Records around it are still packed together.
    let (groups, warnings) = pack(
        &Packer::Adaptive { sort_by: None },
        vec![8, 8, 256, 8],
        1000.0,
        64,
    );
    assert_eq!(groups, vec![vec![8, 8], vec![256], vec![8]]);
    assert_eq!(warnings.len(), 1);
}

#[test]
fn adaptive_respects_the_batch_size() {
    let (groups, _) = pack(&Packer::Adaptive { sort_by: None }, vec![1; 7], 1e12, 3);
    assert_eq!(groups.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1]);
}

#[test]
fn sorting_by_an_unknown_dimension_is_an_error() {
    let model = square_cost_model();
    let limits = PackingLimits {
        model: &model,
        budget: 1e9,
        batch_size: 8,
        min_batch_size: 1,
    };
    let packer = Packer::Adaptive {
        sort_by: Some("tokens".into()),
    };
    let err = packer
        .pack(
            &length_dims(&Lengths(vec![1, 2])).unwrap(),
            &limits,
            &mut |_| {},
        )
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("batcher.packer.sort_by"), "{err}");
}

#[test]
fn the_default_packer_is_uniform() {
    // Reference scenario 25.
    assert_eq!(Packer::default(), Packer::Uniform);
    use crate::config::AdaptivePackerConfig;
    use crate::config::UniformPackerConfig;
    assert_eq!(
        Packer::from_config(&AnyMicroBatchPacker::UniformPacker(UniformPackerConfig {})),
        Packer::Uniform
    );
    let sorted = AnyMicroBatchPacker::AdaptivePacker(AdaptivePackerConfig {
        sort_by: Some("l".into()),
    });
    assert_eq!(
        Packer::from_config(&sorted),
        Packer::Adaptive {
            sort_by: Some("l".into())
        }
    );
}

#[test]
fn an_empty_batch_has_no_micro_batch() {
    for packer in [Packer::Uniform, Packer::Adaptive { sort_by: None }] {
        assert!(pack(&packer, vec![], 1e9, 4).0.is_empty());
    }
}
