use super::LtrDataset;
use crate::config::SyntheticLtrConfig;
use crate::rng::Rng;
use crate::{Error, Result};

/// Grade boundaries on the standardised score `(w·x + noise) / sqrt(1 + noise²)`.
const GRADE_THRESHOLDS: [f64; 4] = [-1.0, -0.3, 0.3, 1.0];

/// Builds the planted-signal dataset described by `config`; the same config gives the same data.
///
/// # Errors
/// [`Error::Config`] (at `path`) for empty or non-finite settings.
pub fn synthetic_ltr(config: &SyntheticLtrConfig, path: &str) -> Result<LtrDataset> {
    for (field, value) in [
        ("num_queries", config.num_queries),
        ("docs_per_query", config.docs_per_query),
        ("num_features", config.num_features),
    ] {
        if value == 0 {
            return Err(Error::config(
                format!("{path}.{field}"),
                "must be at least 1",
            ));
        }
    }
    if !(config.noise.is_finite() && config.noise >= 0.0) {
        return Err(Error::config(
            format!("{path}.noise"),
            "must be a finite number >= 0",
        ));
    }
    let dim = config.num_features as usize;
    let docs = (config.num_queries * config.docs_per_query) as usize;

    let mut signal_rng = Rng::derive(config.signal_seed, "synthetic-ltr/signal");
    let mut w: Vec<f64> = (0..dim).map(|_| signal_rng.normal()).collect();
    let norm = w
        .iter()
        .map(|v| v * v)
        .sum::<f64>()
        .sqrt()
        .max(f64::MIN_POSITIVE);
    w.iter_mut().for_each(|v| *v /= norm);

    let mut rng = Rng::derive(config.seed, "synthetic-ltr/documents");
    let scale = (1.0 + config.noise * config.noise).sqrt();
    let mut features = Vec::with_capacity(docs * dim);
    let mut relevance = Vec::with_capacity(docs);
    for _ in 0..docs {
        let mut score = 0.0;
        for wk in &w {
            let x = rng.normal();
            score += wk * x;
            features.push(x as f32);
        }
        score = (score + config.noise * rng.normal()) / scale;
        relevance.push(GRADE_THRESHOLDS.iter().filter(|t| score > **t).count() as u8);
    }
    let per_query = config.docs_per_query as usize;
    let query_bounds = (0..=config.num_queries as usize)
        .map(|q| q * per_query)
        .collect();
    Ok(LtrDataset {
        features,
        num_features: dim,
        relevance,
        query_bounds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(seed: u64) -> SyntheticLtrConfig {
        SyntheticLtrConfig {
            signal_seed: 3,
            seed,
            num_queries: 50,
            docs_per_query: 20,
            num_features: 6,
            noise: 0.1,
        }
    }

    #[test]
    fn deterministic_and_seed_dependent() {
        let a = synthetic_ltr(&config(1), "d").unwrap();
        assert_eq!(a, synthetic_ltr(&config(1), "d").unwrap());
        assert_ne!(a.features, synthetic_ltr(&config(2), "d").unwrap().features);
        assert_eq!(a.num_docs(), 1000);
        assert_eq!(a.query_bounds.len(), 51);
    }

    #[test]
    fn every_grade_occurs() {
        let a = synthetic_ltr(&config(1), "d").unwrap();
        for g in 0..=4u8 {
            let n = a.relevance.iter().filter(|r| **r == g).count();
            assert!(n > 50, "grade {g} occurs {n} times");
        }
    }

    #[test]
    fn zero_queries_is_a_config_error() {
        let mut c = config(1);
        c.num_queries = 0;
        let err = synthetic_ltr(&c, "learner.trainer.sampler.dataset").unwrap_err();
        assert_eq!(
            err.to_string(),
            "learner.trainer.sampler.dataset.num_queries: must be at least 1"
        );
    }
}
