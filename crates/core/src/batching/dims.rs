//! The formula variables of the records of one outer batch, read once per batch, from which the
//! dimensions of any group of its records are computed without asking again: the batch-size
//! variable is the group's record count, every other variable the maximum (padding to the
//! longest record) or the sum of its records' values.

use super::cost::Dims;
use crate::{Error, Result};

/// How a group's value of a variable is made from its records' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Combine {
    /// The largest value: what padding every record to the longest one costs.
    #[default]
    Max,
    /// The total: what concatenating the records costs.
    Sum,
}

impl Combine {
    /// The combination a provider names (`"max"` or `"sum"`).
    ///
    /// # Errors
    /// Any other name, saying which are known.
    pub fn parse(name: &str) -> std::result::Result<Self, String> {
        match name {
            "max" => Ok(Combine::Max),
            "sum" => Ok(Combine::Sum),
            other => Err(format!(
                "unknown combination {other:?}: use \"max\" or \"sum\""
            )),
        }
    }
}

/// One variable's value for every record of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Column {
    name: String,
    combine: Combine,
    values: Vec<u64>,
}

/// The per-record variables of one batch of `len` records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchDims {
    batch_size_variable: String,
    len: usize,
    columns: Vec<Column>,
}

impl BatchDims {
    /// A batch of `len` records whose only variable so far is `batch_size_variable`.
    pub fn new(batch_size_variable: impl Into<String>, len: usize) -> Self {
        BatchDims {
            batch_size_variable: batch_size_variable.into(),
            len,
            columns: Vec::new(),
        }
    }

    /// Adds the variable `name`, one value per record, combined by `combine` over a group.
    ///
    /// # Errors
    /// When `values` does not have one value per record, or `name` is the batch-size variable
    /// (always the group's record count) or already given.
    pub fn with(mut self, name: &str, combine: Combine, values: Vec<u64>) -> Result<Self> {
        if values.len() != self.len {
            return Err(Error::Callback(format!(
                "{} values of \"{name}\" for a batch of {} records",
                values.len(),
                self.len
            )));
        }
        if name == self.batch_size_variable {
            return Err(Error::Callback(format!(
                "\"{name}\" is the batch-size variable, always the record count of a group: \
                 leave it out of the per-record dimensions"
            )));
        }
        if self.columns.iter().any(|c| c.name == name) {
            return Err(Error::Callback(format!("\"{name}\" is given twice")));
        }
        self.columns.push(Column {
            name: name.to_string(),
            combine,
            values,
        });
        Ok(self)
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the batch has no record.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The dimensions of the group of records `records` (indices into the batch).
    pub fn group(&self, records: &[usize]) -> Dims {
        let mut dims = Dims::new();
        dims.insert(self.batch_size_variable.clone(), records.len() as u64);
        for column in &self.columns {
            let values = records.iter().map(|r| column.values[*r]);
            let value = match column.combine {
                Combine::Max => values.max().unwrap_or(0),
                Combine::Sum => values.fold(0u64, u64::saturating_add),
            };
            dims.insert(column.name.clone(), value);
        }
        dims
    }
}

/// Reads the per-record variables of a batch, once per outer batch. Closures
/// `Fn(&B) -> Result<BatchDims>` are providers.
pub trait DimsProvider<B: ?Sized> {
    /// The per-record dimensions of `batch`.
    ///
    /// # Errors
    /// When they cannot be computed.
    fn batch_dims(&self, batch: &B) -> Result<BatchDims>;
}

impl<B: ?Sized, F: Fn(&B) -> Result<BatchDims>> DimsProvider<B> for F {
    fn batch_dims(&self, batch: &B) -> Result<BatchDims> {
        self(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lengths() -> BatchDims {
        BatchDims::new("bs", 4)
            .with("l", Combine::Max, vec![3, 9, 1, 4])
            .unwrap()
            .with("tokens", Combine::Sum, vec![3, 9, 1, 4])
            .unwrap()
    }

    #[test]
    fn a_group_counts_its_records_and_combines_their_values() {
        let dims = lengths();
        let group = dims.group(&[0, 2, 3]);
        assert_eq!(group["bs"], 3);
        assert_eq!(group["l"], 4);
        assert_eq!(group["tokens"], 8);
        assert_eq!(dims.group(&[1])["l"], 9);
        let empty = dims.group(&[]);
        assert_eq!((empty["bs"], empty["l"], empty["tokens"]), (0, 0, 0));
    }

    #[test]
    fn refuses_the_batch_size_variable_a_short_column_or_a_name_twice() {
        let err = BatchDims::new("bs", 2)
            .with("bs", Combine::Max, vec![1, 1])
            .unwrap_err()
            .to_string();
        assert!(err.contains("\"bs\" is the batch-size variable"), "{err}");
        let err = BatchDims::new("bs", 2)
            .with("l", Combine::Max, vec![1])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "1 values of \"l\" for a batch of 2 records");
        let err = lengths()
            .with("l", Combine::Sum, vec![0; 4])
            .unwrap_err()
            .to_string();
        assert_eq!(err, "\"l\" is given twice");
    }

    #[test]
    fn combinations_are_named_max_or_sum() {
        assert_eq!(Combine::parse("max"), Ok(Combine::Max));
        assert_eq!(Combine::parse("sum"), Ok(Combine::Sum));
        assert!(Combine::parse("mean")
            .unwrap_err()
            .contains("\"max\" or \"sum\""));
    }
}
