//! [`MultipleTrainer`]: several trainers adding their gradients to one optimizer step, each
//! logging its metrics under its own scope.

use tch::Tensor;

use super::Trainer;
use crate::learner::TrainerContext;
use crate::models::Model;
use crate::Result;

/// `MultipleTrainer`: every sub-trainer adds its gradients to the same optimizer step, its
/// metrics under its own scope.
pub(crate) struct MultipleTrainer {
    pub trainers: Vec<(String, Box<dyn Trainer>)>,
}

impl Trainer for MultipleTrainer {
    fn prepare(&mut self, model: &dyn Model, ctx: &mut TrainerContext) -> Result<()> {
        for (_, trainer) in &mut self.trainers {
            trainer.prepare(model, ctx)?;
        }
        Ok(())
    }

    fn process_step(&mut self, model: &dyn Model, ctx: &mut TrainerContext) -> Result<Tensor> {
        let mut total: Option<Tensor> = None;
        for (name, trainer) in &mut self.trainers {
            let loss = ctx.in_scope(name, |ctx| trainer.process_step(model, ctx))?;
            total = Some(match total {
                Some(t) => t.f_add(&loss)?,
                None => loss,
            });
        }
        match total {
            Some(t) => Ok(t),
            None => Err(crate::Error::config(
                "learner.trainer.trainers",
                "needs at least one trainer",
            )),
        }
    }

    fn state(&self) -> serde_json::Value {
        let states: serde_json::Map<String, serde_json::Value> = self
            .trainers
            .iter()
            .map(|(name, t)| (name.clone(), t.state()))
            .collect();
        states.into()
    }

    fn restore(&mut self, state: &serde_json::Value) -> Result<()> {
        for (name, trainer) in &mut self.trainers {
            trainer.restore(&state[name.as_str()])?;
        }
        Ok(())
    }
}
