//! Tests of the batchers on a [`SimulatedDevice`]: power-adaptative shrinking and replay after
//! out of memory, predictive probing, fitting and packing, and configuration checks.

use std::collections::BTreeMap;

use super::super::formula::tests::{names, square_formula, square_terms};
use super::super::packers::tests::{length_dims, Lengths};
use super::super::SimulatedDevice;
use super::*;
use crate::config::{
    AdaptivePackerConfig, AnyBatchDimsProvider, AnyMicroBatchPacker, BatchDimsProviderConfig,
    BatcherConfig, PowerAdaptativeBatcherConfig, ProbePointConfig, Typed, UniformPackerConfig,
};

fn dims(bs: u64, l: u64) -> Dims {
    Dims::from([("bs".to_string(), bs), ("l".to_string(), l)])
}

/// The true cost `a·bs·l² + b·bs·l + c` as a model with set coefficients.
fn truth(a: f64, b: f64, c: f64) -> CostModel {
    let mut m = CostModel::new(square_formula(), "bs", "truth").unwrap();
    m.set_coefficients(vec![a, b, c, 0.0]).unwrap();
    m
}

fn predictive_config(
    probes: &[(u64, u64)],
    packer: AnyMicroBatchPacker,
) -> PredictiveBatcherConfig {
    PredictiveBatcherConfig {
        formula: "a*bs*l**2 + b*bs*l + c".into(),
        formula_terms: square_terms(),
        coefficient_names: names(&["a", "b", "c"]),
        variable_names: names(&["bs", "l"]),
        batch_size_variable: "bs".into(),
        memory_fraction: 0.75,
        extra_overhead_bytes: 0,
        min_batch_size: 1,
        dims_provider: AnyBatchDimsProvider::BatchDimsProvider(BatchDimsProviderConfig {
            probe_dims: probes
                .iter()
                .map(|(bs, l)| {
                    Typed(ProbePointConfig {
                        values: BTreeMap::from([("bs".into(), *bs), ("l".into(), *l)]),
                    })
                })
                .collect(),
        }),
        packer,
    }
}

const REFERENCE_PROBES: [(u64, u64); 4] = [(1, 64), (1, 128), (2, 128), (4, 64)];

fn uniform() -> AnyMicroBatchPacker {
    AnyMicroBatchPacker::UniformPacker(UniformPackerConfig {})
}

fn device(capacity: u64, truth: CostModel) -> SimulatedDevice {
    SimulatedDevice::new(capacity, 0, truth, 0.0, 3)
}

/// What [`record`] saw.
type Recorded = (
    Result<BatchReport>,
    Vec<(Vec<u64>, usize)>,
    usize,
    Vec<String>,
);

/// Runs `batcher` on `records`: the report, the micro-batches' lengths with the outer count
/// (of the last attempt), the resets, and the warnings.
fn record(batcher: &mut Batcher, records: Vec<u64>) -> Recorded {
    let seen = std::cell::RefCell::new(Vec::new());
    let mut resets = 0;
    let mut warnings = Vec::new();
    let report = batcher.process(
        &Lengths(records),
        &length_dims,
        |b: &Lengths, n| {
            seen.borrow_mut().push((b.0.clone(), n));
            Ok(())
        },
        || {
            resets += 1;
            seen.borrow_mut().clear();
            Ok(())
        },
        &mut |w| warnings.push(w),
    );
    (report, seen.into_inner(), resets, warnings)
}

#[test]
fn power_adaptative_shrinks_like_the_reference() {
    // Reference scenario 27.
    let mut s = Shrinker::new(16);
    assert_eq!(s.size(), 16);
    let sizes: Vec<usize> = std::iter::from_fn(|| s.shrink()).collect();
    assert_eq!(sizes, [8, 5, 4, 3, 2, 1]);
    assert_eq!(s.shrink(), None);
    let mut one = Shrinker::new(1);
    assert_eq!(one.shrink(), None);
}

#[test]
fn plain_hands_over_the_whole_batch() {
    let mut b = Batcher::new(
        &AnyBatcher::Batcher(BatcherConfig {}),
        4,
        Box::new(device(1 << 40, truth(1.0, 0.0, 0.0))),
        "batcher",
    )
    .unwrap();
    let (report, seen, resets, _) = record(&mut b, vec![3, 1, 2]);
    assert_eq!(report.unwrap().micro_batches, 1);
    assert_eq!(seen, vec![(vec![3, 1, 2], 3)]);
    assert_eq!(resets, 0);
    assert!(!b.needs_fit());
    assert_eq!(b.budget().unwrap(), f64::INFINITY);
}

#[test]
fn power_adaptative_replays_the_batch_smaller_after_out_of_memory() {
    // 16 records of length 10 cost 100 each; 5 fit in 500 bytes, 8 do not.
    let sim = device(500, truth(1.0, 0.0, 0.0));
    let mut b = Batcher::new(
        &AnyBatcher::PowerAdaptativeBatcher(PowerAdaptativeBatcherConfig {}),
        16,
        Box::new(sim.clone()),
        "batcher",
    )
    .unwrap();
    let (report, seen, resets, warnings) = record(&mut b, vec![10; 16]);
    let report = report.unwrap();
    assert_eq!(report.out_of_memory, 2);
    assert_eq!(report.micro_batches, 4);
    assert_eq!(resets, 2);
    assert_eq!(
        seen.iter().map(|(r, n)| (r.len(), *n)).collect::<Vec<_>>(),
        [(5, 16), (5, 16), (5, 16), (1, 16)]
    );
    assert!(
        warnings[0].contains("micro-batches of 16 record(s)"),
        "{}",
        warnings[0]
    );
    assert_eq!(b.micro_batch_size(), Some(5));
    assert_eq!(sim.stats().unwrap().cache_emptied, 2);
    // The size never grows back.
    let (report, ..) = record(&mut b, vec![1; 16]);
    assert_eq!(report.unwrap().micro_batches, 4);
}

#[test]
fn power_adaptative_gives_up_below_one_record() {
    let mut b = Batcher::new(
        &AnyBatcher::PowerAdaptativeBatcher(PowerAdaptativeBatcherConfig {}),
        4,
        Box::new(device(50, truth(1.0, 0.0, 0.0))),
        "batcher",
    )
    .unwrap();
    let (report, ..) = record(&mut b, vec![10; 4]);
    let err = report.unwrap_err();
    assert!(
        err.to_string()
            .contains("even with micro-batches of 1 record"),
        "{err}"
    );
    assert!(is_out_of_memory(&err));
}

#[test]
fn power_adaptative_lets_other_errors_through() {
    let mut b = Batcher::new(
        &AnyBatcher::PowerAdaptativeBatcher(PowerAdaptativeBatcherConfig {}),
        4,
        Box::new(device(1 << 40, truth(1.0, 0.0, 0.0))),
        "batcher",
    )
    .unwrap();
    let err = b
        .process(
            &Lengths(vec![1, 2]),
            &length_dims,
            |_: &Lengths, _| Err(Error::Callback("listener failed".into())),
            || panic!("no replay for other errors"),
            &mut |_| {},
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "listener failed");
    assert_eq!(b.micro_batch_size(), Some(4));
}

#[test]
fn an_unfitted_predictive_batcher_refuses_to_process() {
    // Reference scenario 20.
    let mut b = Batcher::new(
        &AnyBatcher::PredictiveBatcher(predictive_config(&REFERENCE_PROBES, uniform())),
        16,
        Box::new(device(1 << 40, truth(1.0, 0.0, 0.0))),
        "trainer.batcher",
    )
    .unwrap();
    assert!(b.needs_fit());
    let (report, seen, ..) = record(&mut b, vec![64; 4]);
    let err = report.unwrap_err().to_string();
    assert!(err.contains("before fit/broadcast"), "{err}");
    assert!(err.starts_with("trainer.batcher:"), "{err}");
    assert!(seen.is_empty());
}

#[test]
fn probing_fits_the_device_and_skips_probes_that_do_not_fit() {
    let sim = device(10_000_000, truth(2.0, 3.0, 100.0));
    let mut probes = REFERENCE_PROBES.to_vec();
    probes.push((64, 4096)); // ~2 GiB: out of memory
    probes.push((2, 256));
    let mut b = Batcher::new(
        &AnyBatcher::PredictiveBatcher(predictive_config(&probes, uniform())),
        16,
        Box::new(sim.clone()),
        "batcher",
    )
    .unwrap();
    let mut probed = Vec::new();
    let mut resets = 0;
    let mut warnings = Vec::new();
    b.probe(
        |d| {
            probed.push((d["bs"], d["l"]));
            Ok(())
        },
        || {
            resets += 1;
            Ok(())
        },
        &mut |w| warnings.push(w),
    )
    .unwrap();
    // Sorted order; the out-of-memory probe never reached the caller.
    assert_eq!(probed, [(1, 64), (1, 128), (2, 128), (2, 256), (4, 64)]);
    assert_eq!(resets, 7);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("ran out of memory"), "{}", warnings[0]);
    let c = b.coefficients().unwrap();
    for (got, want) in c.iter().zip([2.0, 3.0, 100.0, 0.0]) {
        assert!((got - want).abs() < 1e-6, "{c:?}");
    }
    assert!(!b.needs_fit());
}

#[test]
fn a_probe_error_other_than_out_of_memory_stops_probing() {
    let mut b = Batcher::new(
        &AnyBatcher::PredictiveBatcher(predictive_config(&REFERENCE_PROBES, uniform())),
        16,
        Box::new(device(1 << 40, truth(1.0, 0.0, 0.0))),
        "batcher",
    )
    .unwrap();
    let err = b
        .probe(
            |_| Err(Error::Callback("bad probe batch".into())),
            || Ok(()),
            &mut |_| {},
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "bad probe batch");
    assert!(b.needs_fit());
}

#[test]
fn the_budget_is_reread_for_every_outer_batch() {
    // Cost bs·l²; half of the capacity is a budget of exactly four records of 128.
    let capacity = 2 * 4 * 128 * 128;
    let mut config = predictive_config(&REFERENCE_PROBES, uniform());
    config.memory_fraction = 0.5;
    let sim = device(capacity, truth(1.0, 0.0, 0.0));
    let mut b = Batcher::new(
        &AnyBatcher::PredictiveBatcher(config),
        16,
        Box::new(sim.clone()),
        "batcher",
    )
    .unwrap();
    b.set_coefficients(vec![1.0, 0.0, 0.0, 0.0]).unwrap();
    assert_eq!(b.budget().unwrap(), (4 * 128 * 128) as f64);
    let (report, seen, ..) = record(&mut b, vec![128; 12]);
    assert_eq!(report.unwrap().micro_batches, 3);
    assert!(seen.iter().all(|(r, n)| r.len() == 4 && *n == 12));
    // Half the free memory on the next batch: micro-batches of two.
    sim.set_resident(capacity / 2).unwrap();
    let (report, seen, ..) = record(&mut b, vec![128; 12]);
    assert_eq!(report.unwrap().micro_batches, 6);
    assert!(seen.iter().all(|(r, _)| r.len() == 2));
}

#[test]
fn the_overhead_comes_off_the_budget() {
    let mut config = predictive_config(&REFERENCE_PROBES, uniform());
    config.memory_fraction = 0.5;
    config.extra_overhead_bytes = 100;
    let mut b = Batcher::new(
        &AnyBatcher::PredictiveBatcher(config),
        16,
        Box::new(SimulatedDevice::new(
            1_000,
            200,
            truth(1.0, 0.0, 0.0),
            0.0,
            1,
        )),
        "batcher",
    )
    .unwrap();
    assert_eq!(b.budget().unwrap(), 300.0);
    let mut b = Batcher::new(
        &AnyBatcher::PredictiveBatcher(predictive_config(&REFERENCE_PROBES, uniform())),
        16,
        Box::new(SimulatedDevice::new(
            1_000,
            1_000,
            truth(1.0, 0.0, 0.0),
            0.0,
            1,
        )),
        "batcher",
    )
    .unwrap();
    assert_eq!(b.budget().unwrap(), 0.0);
}

#[test]
fn predictive_runs_the_packers_groups() {
    let adaptive = AnyMicroBatchPacker::AdaptivePacker(AdaptivePackerConfig {
        sort_by: Some("l".into()),
    });
    let mut config = predictive_config(&REFERENCE_PROBES, adaptive);
    config.memory_fraction = 0.5;
    let sim = device(2 * 4 * 128 * 128, truth(1.0, 0.0, 0.0));
    let mut b = Batcher::new(
        &AnyBatcher::PredictiveBatcher(config),
        64,
        Box::new(sim.clone()),
        "batcher",
    )
    .unwrap();
    b.set_coefficients(vec![1.0, 0.0, 0.0, 0.0]).unwrap();
    let records = vec![32, 128, 32, 128, 32, 32, 128, 32, 128, 32, 32, 32];
    let (report, seen, ..) = record(&mut b, records);
    assert_eq!(report.unwrap().micro_batches, 2);
    assert_eq!(seen, vec![(vec![128; 4], 12), (vec![32; 8], 12)]);
    assert_eq!(sim.stats().unwrap().out_of_memory, 0);
}

#[test]
fn configurations_are_checked_with_their_paths() {
    let build = |config: PredictiveBatcherConfig| {
        Batcher::new(
            &AnyBatcher::PredictiveBatcher(config),
            8,
            Box::new(device(1, truth(1.0, 0.0, 0.0))),
            "b",
        )
        .unwrap_err()
        .to_string()
    };
    // Reference scenarios 12 and 13.
    let empty = build(predictive_config(&[], uniform()));
    assert!(
        empty.starts_with("b.dims_provider.probe_dims: probe_dims is empty"),
        "{empty}"
    );
    let mut partial = predictive_config(&REFERENCE_PROBES, uniform());
    if let AnyBatchDimsProvider::BatchDimsProvider(provider) = &mut partial.dims_provider {
        provider.probe_dims[1] = Typed(ProbePointConfig {
            values: BTreeMap::from([("l".into(), 64)]),
        });
    }
    let partial = build(partial);
    assert!(
        partial.starts_with("b.dims_provider.probe_dims[1]:"),
        "{partial}"
    );
    assert!(
        partial.contains("don't match formula variables"),
        "{partial}"
    );
    let mut formula = predictive_config(&REFERENCE_PROBES, uniform());
    formula.formula_terms[1].coefficient = Some("d".into());
    assert!(build(formula).starts_with("b.formula_terms[1]: \"d\" is not one of the coefficients"));
    let mut variable = predictive_config(&REFERENCE_PROBES, uniform());
    variable.batch_size_variable = "n".into();
    assert!(build(variable).starts_with("b.batch_size_variable"));
    // Reference scenario 14: a valid configuration passes.
    let valid = Batcher::new(
        &AnyBatcher::PredictiveBatcher(predictive_config(&REFERENCE_PROBES, uniform())),
        8,
        Box::new(device(1, truth(1.0, 0.0, 0.0))),
        "b",
    );
    assert!(valid.is_ok());
    assert_eq!(dims(1, 2)["l"], 2);
}

#[test]
fn only_the_predictive_batcher_takes_coefficients() {
    let mut b = Batcher::new(
        &AnyBatcher::Batcher(BatcherConfig {}),
        4,
        Box::new(device(1, truth(1.0, 0.0, 0.0))),
        "batcher",
    )
    .unwrap();
    assert!(b.set_coefficients(vec![1.0]).is_err());
    assert!(b.coefficients().is_none());
    b.probe(
        |_| panic!("plain batchers do not probe"),
        || Ok(()),
        &mut |_| {},
    )
    .unwrap();
}
