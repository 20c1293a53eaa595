//! [`synthetic_ltr`]: a LETOR-like dataset with a planted linear signal, graded from a noisy
//! score; deterministic in its seed, for tests and examples without data files.

use crate::config::SyntheticLtrDatasetConfig;
use crate::data::LtrDataset;
use crate::rng::Rng;

/// Grade boundaries on the standardised score `(w·x + noise) / sqrt(1 + noise²)`.
const GRADE_THRESHOLDS: [f64; 4] = [-1.0, -0.3, 0.3, 1.0];

/// Builds the planted-signal dataset described by `config`; the same config gives the same data.
/// Its sizes are at least 1 and its noise at least 0: the configuration's value rules hold.
pub fn synthetic_ltr(config: &SyntheticLtrDatasetConfig) -> LtrDataset {
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
    LtrDataset {
        features,
        num_features: dim,
        relevance,
        query_bounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(seed: u64) -> SyntheticLtrDatasetConfig {
        SyntheticLtrDatasetConfig {
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
        let a = synthetic_ltr(&config(1));
        assert_eq!(a, synthetic_ltr(&config(1)));
        assert_ne!(a.features, synthetic_ltr(&config(2)).features);
        assert_eq!(a.num_docs(), 1000);
        assert_eq!(a.query_bounds.len(), 51);
    }

    #[test]
    fn every_grade_occurs() {
        let a = synthetic_ltr(&config(1));
        for g in 0..=4u8 {
            let n = a.relevance.iter().filter(|r| **r == g).count();
            assert!(n > 50, "grade {g} occurs {n} times");
        }
    }
}
