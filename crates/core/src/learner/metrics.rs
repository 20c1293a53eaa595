//! [`Metrics`]: count-weighted means accumulated over an epoch, kept as detached tensors until
//! read so that adding a metric never waits for the device.

use std::collections::BTreeMap;

use tch::{Kind, Tensor};

use crate::Result;

/// A running sum and the count it averages over. Host values stay plain numbers: turning them
/// into tensors would cost several dispatcher calls per step.
#[derive(Debug)]
struct Entry {
    sum: Tensor,
    value_sum: f64,
    count: i64,
}

/// Count-weighted means accumulated over an epoch. Sums stay detached tensors until read, so
/// adding a metric never waits for the device.
#[derive(Debug, Default)]
pub struct Metrics {
    entries: BTreeMap<String, Entry>,
}

impl Metrics {
    /// A copy of the sums so far (sums are never updated in place, so the copy is shallow),
    /// to roll back to when a batch is replayed.
    pub fn mark(&self) -> Metrics {
        Metrics {
            entries: self
                .entries
                .iter()
                .map(|(k, e)| {
                    (
                        k.clone(),
                        Entry {
                            sum: e.sum.shallow_clone(),
                            value_sum: e.value_sum,
                            count: e.count,
                        },
                    )
                })
                .collect(),
        }
    }

    /// Adds `sum` (of `count` items) under `key`. Zero counts are ignored.
    ///
    /// # Errors
    /// A libtorch error.
    pub fn add(&mut self, key: &str, sum: &Tensor, count: i64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        // Each call on a tensor costs a dispatch: skip those with nothing to do.
        let sum = if sum.requires_grad() {
            sum.f_detach()?
        } else {
            sum.shallow_clone()
        };
        let sum = if sum.kind() == Kind::Double {
            sum
        } else {
            sum.f_to_kind(Kind::Double)?
        };
        match self.entries.get_mut(key) {
            Some(entry) if entry.sum.defined() => {
                entry.sum = entry.sum.f_add(&sum)?;
                entry.count += count;
            }
            Some(entry) => {
                entry.sum = sum;
                entry.count += count;
            }
            None => {
                self.entries.insert(
                    key.to_string(),
                    Entry {
                        sum,
                        value_sum: 0.0,
                        count,
                    },
                );
            }
        }
        Ok(())
    }

    /// Adds a plain value observed once per item of `count` items (its sum is `value · count`).
    ///
    /// # Errors
    /// A libtorch error.
    pub fn add_value(&mut self, key: &str, value: f64, count: i64) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let sum = value * count as f64;
        match self.entries.get_mut(key) {
            Some(entry) => {
                entry.value_sum += sum;
                entry.count += count;
            }
            None => {
                self.entries.insert(
                    key.to_string(),
                    Entry {
                        sum: Tensor::new(),
                        value_sum: sum,
                        count,
                    },
                );
            }
        }
        Ok(())
    }

    /// Every metric's sum and count, for checkpoints taken inside an epoch.
    ///
    /// # Errors
    /// A libtorch error while reading the sums.
    pub fn snapshot(&self) -> Result<BTreeMap<String, (f64, i64)>> {
        self.entries
            .iter()
            .map(|(k, e)| {
                let tensor_sum = if e.sum.defined() {
                    e.sum.f_double_value(&[])?
                } else {
                    0.0
                };
                Ok((k.clone(), (tensor_sum + e.value_sum, e.count)))
            })
            .collect()
    }

    /// Metrics continuing from a [`Metrics::snapshot`].
    pub fn from_snapshot(snapshot: &BTreeMap<String, (f64, i64)>) -> Self {
        let entries = snapshot
            .iter()
            .map(|(k, (sum, count))| {
                (
                    k.clone(),
                    Entry {
                        sum: Tensor::new(),
                        value_sum: *sum,
                        count: *count,
                    },
                )
            })
            .collect();
        Metrics { entries }
    }

    /// The mean of every metric.
    ///
    /// # Errors
    /// A libtorch error while reading the sums.
    pub fn means(&self) -> Result<BTreeMap<String, f64>> {
        Ok(self
            .snapshot()?
            .into_iter()
            .map(|(k, (sum, count))| (k, sum / count as f64))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn means_are_weighted_by_counts() {
        let mut m = Metrics::default();
        m.add("loss", &Tensor::from(6.0f64), 3).unwrap();
        m.add("loss", &Tensor::from(4.0f64), 1).unwrap();
        m.add_value("lr", 0.5, 2).unwrap();
        m.add("empty", &Tensor::from(1.0f64), 0).unwrap();
        let means = m.means().unwrap();
        assert_eq!(means["loss"], 2.5);
        assert_eq!(means["lr"], 0.5);
        assert!(!means.contains_key("empty"));
    }
}
