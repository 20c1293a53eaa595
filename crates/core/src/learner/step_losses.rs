//! The training loss of every step of an epoch, kept when the Learner's `step_losses` asks:
//! held on the device as the steps run and read once, when the epoch ends or is interrupted.

use tch::{Kind, Tensor};

use crate::Result;

pub(crate) struct StepLosses {
    keep: bool,
    /// Losses already read (those of an interrupted epoch's first steps, after a resume).
    read: Vec<f64>,
    /// Losses of the steps since, not yet read.
    pending: Vec<Tensor>,
}

impl StepLosses {
    /// Keeps losses when `keep`, after those of an unfinished epoch's first steps (`partial`).
    pub fn new(keep: bool, partial: Vec<f64>) -> Self {
        StepLosses {
            keep,
            read: partial,
            pending: Vec::new(),
        }
    }

    /// Records one step's loss (a scalar tensor).
    pub fn push(&mut self, loss: &Tensor) -> Result<()> {
        if self.keep {
            self.pending.push(loss.f_detach()?);
        }
        Ok(())
    }

    /// Every loss of the epoch so far.
    pub fn values(&mut self) -> Result<Vec<f64>> {
        if !self.pending.is_empty() {
            let losses = Tensor::f_stack(&self.pending, 0)?.f_to_kind(Kind::Double)?;
            self.read.extend(Vec::<f64>::try_from(losses)?);
            self.pending.clear();
        }
        Ok(self.read.clone())
    }

    /// Every loss of the epoch that ends, leaving none for the next.
    pub fn take(&mut self) -> Result<Vec<f64>> {
        let values = self.values()?;
        self.read.clear();
        Ok(values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_follow_the_partial_ones_and_start_again_each_epoch() {
        let mut kept = StepLosses::new(true, vec![0.5]);
        kept.push(&Tensor::from(0.25f32)).unwrap();
        assert_eq!(kept.values().unwrap(), vec![0.5, 0.25]);
        kept.push(&Tensor::from(0.125f32)).unwrap();
        assert_eq!(kept.take().unwrap(), vec![0.5, 0.25, 0.125]);
        assert!(kept.take().unwrap().is_empty());
        let mut not_kept = StepLosses::new(false, Vec::new());
        not_kept.push(&Tensor::from(1.0f32)).unwrap();
        assert!(not_kept.take().unwrap().is_empty());
    }
}
