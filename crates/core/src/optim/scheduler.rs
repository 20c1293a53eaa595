//! Learning-rate schedules: a factor applied to each optimizer's base learning rate, as
//! `torch.optim.lr_scheduler.LambdaLR` applies the lambdas of `xpm_torch.schedulers`.

use crate::config::AnyScheduler;

/// A learning-rate schedule.
pub trait Schedule {
    /// The factor of the base learning rate at `step` (0 for the first optimizer step).
    fn factor(&self, step: u64) -> f64;
}

/// The warmup ramp `s / max(1, W)`, shared by every schedule.
fn warmup_factor(step: f64, warmup: u64) -> f64 {
    step / (warmup.max(1) as f64)
}

/// Length of the decay phase from `from` to `to`; at least 1 so it can divide.
fn span(from: u64, to: u64) -> f64 {
    (to as f64 - from as f64).max(1.0)
}

/// Linear warmup over `warmup` steps, then linear decay to `min_factor / (1 + min_factor)` at
/// `total` steps (`xpm_torch.schedulers.LinearWithWarmup`).
#[derive(Debug, Clone, PartialEq)]
pub struct LinearWithWarmup {
    /// Warmup steps.
    pub warmup: u64,
    /// Steps of the whole run (`max_epochs × steps_per_epoch`).
    pub total: u64,
    /// Sets the floor of the decay.
    pub min_factor: f64,
}

impl LinearWithWarmup {
    fn at(&self, step: f64) -> f64 {
        if step < self.warmup as f64 {
            return warmup_factor(step, self.warmup);
        }
        let r = ((self.total as f64 - step) / span(self.warmup, self.total)).max(0.0);
        (r + self.min_factor) / (1.0 + self.min_factor)
    }
}

impl Schedule for LinearWithWarmup {
    fn factor(&self, step: u64) -> f64 {
        self.at(step as f64)
    }
}

/// Linear warmup over `warmup` steps, then `num_cycles` cosine cycles over the remaining steps
/// up to `total` (`xpm_torch.schedulers.CosineWithWarmup`). As in the reference, the cosine goes
/// on past `total`, so with `num_cycles = 0.5` the factor rises again after the run's end.
#[derive(Debug, Clone, PartialEq)]
pub struct CosineWithWarmup {
    /// Warmup steps.
    pub warmup: u64,
    /// Steps of the whole run (`max_epochs × steps_per_epoch`).
    pub total: u64,
    /// Cosine cycles after warmup (0.5: a half cosine from 1 down to 0).
    pub num_cycles: f64,
}

impl CosineWithWarmup {
    fn at(&self, step: f64) -> f64 {
        if step < self.warmup as f64 {
            return warmup_factor(step, self.warmup);
        }
        let progress = (step - self.warmup as f64) / span(self.warmup, self.total);
        let angle = 2.0 * std::f64::consts::PI * self.num_cycles * progress;
        (0.5 * (1.0 + angle.cos())).max(0.0)
    }
}

impl Schedule for CosineWithWarmup {
    fn factor(&self, step: u64) -> f64 {
        self.at(step as f64)
    }
}

/// The schedule `config` describes for a run of `total_steps` optimizer steps
/// (`max_epochs × steps_per_epoch`).
pub fn schedule(config: &AnyScheduler, total_steps: u64) -> Box<dyn Schedule + Send> {
    match config {
        AnyScheduler::LinearWithWarmup(c) => Box::new(LinearWithWarmup {
            warmup: c.num_warmup_steps,
            total: total_steps,
            min_factor: c.min_factor,
        }),
        AnyScheduler::CosineWithWarmup(c) => Box::new(CosineWithWarmup {
            warmup: c.num_warmup_steps,
            total: total_steps,
            num_cycles: c.num_cycles,
        }),
        // The same decay over `total_training_steps` when set, whatever the length of this run
        // (training in several phases).
        AnyScheduler::LinearWithWarmupAndMaxEpochs(c) => Box::new(LinearWithWarmup {
            warmup: c.num_warmup_steps,
            total: c.total_training_steps.unwrap_or(total_steps),
            min_factor: c.min_factor,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: f64, expected: f64, tol: f64, what: &str) {
        assert!(
            (actual - expected).abs() <= tol,
            "{what}: got {actual}, expected {expected}"
        );
    }

    #[test]
    fn linear_with_warmup_reference_values() {
        let s = LinearWithWarmup {
            warmup: 10,
            total: 100,
            min_factor: 0.0,
        };
        for (step, f) in [
            (0, 0.0),
            (5, 0.5),
            (9, 0.9),
            (10, 1.0),
            (55, 0.5),
            (100, 0.0),
            (120, 0.0),
        ] {
            close(s.factor(step), f, 1e-6, &format!("f({step})"));
        }
        let s = LinearWithWarmup {
            min_factor: 0.1,
            ..s
        };
        for (step, f) in [(9, 0.9), (10, 1.0), (55, 0.545455), (100, 0.090909)] {
            close(s.factor(step), f, 1e-6, &format!("m=0.1, f({step})"));
        }
        // The floor holds after the end, and warmup starts at 0 whatever the floor.
        close(s.factor(500), 0.1 / 1.1, 1e-12, "m=0.1, f(500)");
        close(s.factor(0), 0.0, 0.0, "m=0.1, f(0)");
    }

    #[test]
    fn cosine_with_warmup_reference_values() {
        let s = CosineWithWarmup {
            warmup: 10,
            total: 100,
            num_cycles: 0.5,
        };
        for (step, f) in [
            (5.0, 0.5),
            (10.0, 1.0),
            (32.5, 0.853553),
            (55.0, 0.5),
            (77.5, 0.146447),
            (100.0, 0.0),
        ] {
            close(s.at(step), f, 1e-6, &format!("f({step})"));
        }
        close(s.factor(55), 0.5, 1e-6, "factor(55)");
    }

    #[test]
    fn linear_with_max_epochs_ignores_the_run_length() {
        let config: AnyScheduler = serde_json::from_str(
            r#"{"__xpmtype__":"xpm_torch.schedulers.LinearWithWarmupAndMaxEpochs",
                "num_warmup_steps":1000,"min_factor":0.0,"total_training_steps":35000}"#,
        )
        .unwrap();
        let s = schedule(&config, 15000);
        for (step, f) in [
            (0, 0.0),
            (1000, 1.0),
            (15000, 20000.0 / 34000.0),
            (35000, 0.0),
        ] {
            close(s.factor(step), f, 1e-4, &format!("f({step})"));
        }
        close(s.factor(15000), 0.588235, 1e-4, "f(15000)");
        // Without total_training_steps: the run's length, and min_factor is the floor.
        let config: AnyScheduler = serde_json::from_str(
            r#"{"__xpmtype__":"xpm_torch.schedulers.LinearWithWarmupAndMaxEpochs",
                "num_warmup_steps":10,"min_factor":0.25}"#,
        )
        .unwrap();
        let s = schedule(&config, 110);
        close(s.factor(60), (0.5 + 0.25) / 1.25, 1e-12, "f(60)");
        close(s.factor(200), 0.25 / 1.25, 1e-12, "f(200)");
    }

    #[test]
    fn no_warmup_starts_at_full_rate() {
        let s = LinearWithWarmup {
            warmup: 0,
            total: 10,
            min_factor: 0.0,
        };
        close(s.factor(0), 1.0, 0.0, "f(0)");
        // More warmup steps than steps: the decay denominator is clamped to 1, never 0.
        let s = CosineWithWarmup {
            warmup: 20,
            total: 10,
            num_cycles: 0.5,
        };
        assert!(s.factor(25).is_finite());
    }

    /// Factor sequences computed by `torch.optim.lr_scheduler.LambdaLR`
    /// (`scripts/fixtures/gen_schedulers.py`).
    #[test]
    fn matches_pytorch_lambda_lr() {
        let fixture: serde_json::Value = serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/schedulers.json"
        )))
        .unwrap();
        let cases = fixture["cases"].as_array().unwrap();
        assert!(cases.len() >= 6);
        for case in cases {
            let config: AnyScheduler = serde_json::from_value(case["config"].clone()).unwrap();
            let total = case["total_steps"].as_u64().unwrap();
            let s = schedule(&config, total);
            let factors = case["factors"].as_array().unwrap();
            assert!(factors.len() as u64 > total);
            for (step, expected) in factors.iter().enumerate() {
                close(
                    s.factor(step as u64),
                    expected.as_f64().unwrap(),
                    1e-6,
                    &format!("{} (N={total}) at step {step}", case["config"]),
                );
            }
        }
    }
}
