//! Whole queries as padded lists (slates), for listwise losses.

use std::sync::Arc;

use tch::{Kind, Tensor};

use crate::data::{
    pass_position, restore_pass, Batch, LtrDataset, RecordKind, Reranking, Sampler, ScoreInput,
    Shard, ShuffledPass, SlateBatch, TextEncoding, Truncation,
};
use crate::rng::Rng;
use crate::{Error, Result};

/// One query per record: its documents in a random order, padded to the slate width. A query with
/// more documents than `slate_length` is subsampled to `slate_length` of them, one of its
/// top-grade documents always among them. Queries whose documents all share one grade are left
/// out: such a slate states no preference, and what allRank's losses do with it teaches no
/// ranking (`docs/data.md`). The slate width is `slate_length`, or the largest query when every
/// query is shorter.
#[derive(Debug)]
pub struct SlateSampler {
    rows: SlateRows,
    grades: Arc<Vec<u8>>,
    /// Document range of each usable query.
    queries: Arc<Vec<(usize, usize)>>,
    width: usize,
    pass: ShuffledPass,
}

/// What the documents of the slates are.
#[derive(Debug)]
enum SlateRows {
    /// The dataset's features and, as the last row, a zero row that padded positions point to.
    Features(Tensor),
    /// A run's candidates, read and encoded per batch; padded positions repeat the slate's
    /// first document. Counts the inputs cut by truncation.
    Texts {
        set: Arc<Reranking>,
        encoding: TextEncoding,
        truncation: Truncation,
    },
}

impl SlateRows {
    fn fork(&self) -> Self {
        match self {
            SlateRows::Features(f) => SlateRows::Features(f.shallow_clone()),
            SlateRows::Texts {
                set,
                encoding,
                truncation,
            } => SlateRows::Texts {
                set: set.clone(),
                encoding: encoding.clone(),
                truncation: *truncation,
            },
        }
    }

    /// The model input of documents `rows` (`padding` marks a padded position).
    fn input(&mut self, rows: &[i64], padding: i64, width: usize) -> Result<ScoreInput> {
        match self {
            SlateRows::Features(f) => Ok(ScoreInput::Features(
                f.f_index_select(0, &Tensor::f_from_slice(rows)?)?,
            )),
            SlateRows::Texts {
                set,
                encoding,
                truncation,
            } => {
                let real: Vec<usize> = rows
                    .chunks(width)
                    .flat_map(|slate| {
                        slate
                            .iter()
                            .map(move |&r| if r == padding { slate[0] } else { r })
                    })
                    .map(|r| r as usize)
                    .collect();
                let (input, cut) = set.encode(&real, encoding)?;
                *truncation = truncation.plus(cut);
                Ok(input)
            }
        }
    }
}

impl SlateSampler {
    /// A sampler of slates of at most `slate_length` documents over `dataset`, this `shard` of
    /// its queries, drawn with `rng`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when no query has two grades.
    pub fn new(
        dataset: &LtrDataset,
        slate_length: usize,
        rng: Rng,
        shard: Shard,
        path: &str,
    ) -> Result<Self> {
        let dataset_features = dataset.features_tensor()?;
        let padding_row = Tensor::f_zeros(
            [1, dataset.num_features as i64],
            (Kind::Float, dataset_features.device()),
        )?;
        let rows = SlateRows::Features(Tensor::f_cat(&[dataset_features, padding_row], 0)?);
        Self::over(dataset, rows, slate_length, rng, shard, path)
    }

    /// A sampler of slates of a run's candidates to re-rank (the texts of a
    /// [`Reranking`]), encoded by `encoding`; see [`SlateSampler::new`].
    ///
    /// # Errors
    /// As [`SlateSampler::new`].
    pub fn over_texts(
        set: Arc<Reranking>,
        encoding: TextEncoding,
        slate_length: usize,
        rng: Rng,
        shard: Shard,
        path: &str,
    ) -> Result<Self> {
        let rows = SlateRows::Texts {
            set: set.clone(),
            encoding,
            truncation: Truncation::default(),
        };
        Self::over(&set.data, rows, slate_length, rng, shard, path)
    }

    fn over(
        dataset: &LtrDataset,
        rows: SlateRows,
        slate_length: usize,
        rng: Rng,
        shard: Shard,
        path: &str,
    ) -> Result<Self> {
        let queries = dataset.graded_queries(0);
        let Some(longest) = queries.iter().map(|(start, end)| end - start).max() else {
            return Err(Error::config(
                path,
                "no query has documents of two different grades, so no slate can be ranked",
            ));
        };
        Ok(SlateSampler {
            rows,
            grades: Arc::new(dataset.relevance.clone()),
            pass: ShuffledPass::new(queries.len(), rng, shard, path)?,
            queries: Arc::new(queries),
            width: slate_length.min(longest),
        })
    }

    /// Documents per slate (padding included).
    pub fn width(&self) -> usize {
        self.width
    }

    /// The documents of one slate, in a random order: all of the query's when they fit, else
    /// one of its top grade and `width − 1` others drawn without replacement.
    fn slate(&self, (start, end): (usize, usize), rng: &mut Rng) -> Vec<usize> {
        let mut docs: Vec<usize> = (start..end).collect();
        if docs.len() > self.width {
            let grades = &self.grades[start..end];
            let best = grades.iter().copied().max().unwrap_or(0);
            let tops: Vec<usize> = (0..docs.len()).filter(|&i| grades[i] == best).collect();
            let keep = tops[rng.below(tops.len())];
            docs.swap(0, keep);
            // A partial Fisher–Yates shuffle of the others picks `width − 1` of them.
            for i in 1..self.width {
                let j = i + rng.below(docs.len() - i);
                docs.swap(i, j);
            }
            docs.truncate(self.width);
        }
        rng.shuffle(&mut docs);
        docs
    }
}

impl Sampler for SlateSampler {
    fn kind(&self) -> RecordKind {
        RecordKind::Slate
    }

    fn next_batch(&mut self, size: usize) -> Result<Batch> {
        let padding = self.grades.len() as i64;
        let mut rows = Vec::with_capacity(size * self.width);
        let mut labels = Vec::with_capacity(size * self.width);
        let mut mask = Vec::with_capacity(size * self.width);
        for _ in 0..size {
            let query = self.queries[self.pass.next_item()];
            let mut rng = self.pass.item_rng();
            let docs = self.slate(query, &mut rng);
            for position in 0..self.width {
                match docs.get(position) {
                    Some(&d) => {
                        rows.push(d as i64);
                        labels.push(f32::from(self.grades[d]));
                        mask.push(true);
                    }
                    None => {
                        rows.push(padding);
                        labels.push(0.0);
                        mask.push(false);
                    }
                }
            }
        }
        let shape = [size as i64, self.width as i64];
        Ok(Batch::Slate(SlateBatch {
            input: self.rows.input(&rows, padding, self.width)?,
            labels: Tensor::f_from_slice(&labels)?.f_view(shape)?,
            mask: Tensor::f_from_slice(&mask)?.f_view(shape)?,
        }))
    }

    fn position(&self) -> serde_json::Value {
        pass_position(&self.pass)
    }

    fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()> {
        restore_pass(&mut self.pass, position, path)
    }

    fn truncation(&self) -> Option<Truncation> {
        match &self.rows {
            SlateRows::Features(_) => None,
            SlateRows::Texts { truncation, .. } => Some(*truncation),
        }
    }

    fn fork(&self) -> Box<dyn Sampler> {
        Box::new(SlateSampler {
            rows: self.rows.fork(),
            grades: self.grades.clone(),
            queries: self.queries.clone(),
            width: self.width,
            pass: self.pass.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    /// Feature of document `d` is `d + 1` (so 0 marks padding); grades `d % 3`, and a query of
    /// a single grade (documents 30..34, all grade 0 after the override).
    fn dataset() -> LtrDataset {
        let mut relevance: Vec<u8> = (0..34).map(|d| (d % 3) as u8).collect();
        relevance[30..34].fill(0);
        LtrDataset {
            features: (0..34).map(|d| (d + 1) as f32).collect(),
            num_features: 1,
            relevance,
            query_bounds: vec![0, 4, 12, 30, 34],
        }
    }

    fn slates(batch: &Batch) -> Vec<Vec<(i64, f32, bool)>> {
        let Batch::Slate(b) = batch else {
            panic!("slates expected")
        };
        let ScoreInput::Features(f) = &b.input else {
            panic!("features expected")
        };
        let docs = Vec::<f32>::try_from(f.flatten(0, -1)).unwrap();
        let labels = Vec::<f32>::try_from(b.labels.flatten(0, -1)).unwrap();
        let mask = Vec::<bool>::try_from(b.mask.flatten(0, -1)).unwrap();
        let width = b.labels.size()[1] as usize;
        (0..docs.len() / width)
            .map(|s| {
                (s * width..(s + 1) * width)
                    .map(|i| (docs[i] as i64 - 1, labels[i], mask[i]))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn slates_hold_whole_short_queries_padded_and_subsample_long_ones() {
        let data = dataset();
        let mut s = SlateSampler::new(&data, 8, Rng::new(3), Shard::WHOLE, "s").unwrap();
        assert_eq!(s.width(), 8);
        let mut seen_queries = BTreeSet::new();
        for _ in 0..30 {
            for slate in slates(&s.next_batch(3).unwrap()) {
                let real: Vec<i64> = slate.iter().filter(|x| x.2).map(|x| x.0).collect();
                let query = data
                    .query_bounds
                    .windows(2)
                    .position(|q| (q[0] as i64..q[1] as i64).contains(&real[0]))
                    .unwrap();
                let (lo, hi) = (data.query_bounds[query], data.query_bounds[query + 1]);
                seen_queries.insert(query);
                assert_ne!(query, 3, "a query of a single grade is left out");
                assert!(real.iter().all(|&d| (lo as i64..hi as i64).contains(&d)));
                assert_eq!(real.len(), (hi - lo).min(8), "{slate:?}");
                assert_eq!(real.iter().collect::<BTreeSet<_>>().len(), real.len());
                let top = (lo..hi).map(|d| data.relevance[d]).max().unwrap();
                assert!(real.iter().any(|&d| data.relevance[d as usize] == top));
                for &(d, label, real) in &slate {
                    if real {
                        assert_eq!(label, f32::from(data.relevance[d as usize]));
                    } else {
                        assert_eq!((d, label), (-1, 0.0), "padding points to the zero row");
                    }
                }
            }
        }
        assert_eq!(seen_queries, BTreeSet::from([0, 1, 2]));
    }

    #[test]
    fn slate_order_and_subsets_vary_and_cover_long_queries() {
        let data = dataset();
        let mut s = SlateSampler::new(&data, 5, Rng::new(1), Shard::WHOLE, "s").unwrap();
        let mut orders = BTreeSet::new();
        let mut covered = BTreeSet::new();
        for _ in 0..60 {
            for slate in slates(&s.next_batch(1).unwrap()) {
                let docs: Vec<i64> = slate.iter().filter(|x| x.2).map(|x| x.0).collect();
                if docs[0] < 4 {
                    orders.insert(docs.clone());
                }
                covered.extend(docs);
            }
        }
        assert!(orders.len() > 3, "the short query comes in several orders");
        assert_eq!(
            covered.len(),
            30,
            "every document of a usable query is drawn"
        );
    }

    #[test]
    fn the_width_shrinks_to_the_longest_query_and_restores_continue() {
        let data = dataset();
        let mut a = SlateSampler::new(&data, 100, Rng::new(5), Shard::WHOLE, "s").unwrap();
        assert_eq!(a.width(), 18);
        let _ = a.next_batch(2).unwrap();
        let mut b = SlateSampler::new(&data, 100, Rng::new(77), Shard::WHOLE, "s").unwrap();
        b.restore(&a.position(), "s").unwrap();
        for _ in 0..4 {
            assert_eq!(
                slates(&a.next_batch(2).unwrap()),
                slates(&b.next_batch(2).unwrap())
            );
        }
    }

    #[test]
    fn ranks_share_the_queries_of_a_pass() {
        let data = dataset();
        let mut seen = Vec::new();
        for rank in 0..3 {
            let shard = Shard::new(rank, 3).unwrap();
            let mut s = SlateSampler::new(&data, 30, Rng::new(2), shard, "s").unwrap();
            let slate = &slates(&s.next_batch(1).unwrap())[0];
            seen.push(slate.iter().filter(|x| x.2).map(|x| x.0).min().unwrap());
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![0, 4, 12], "one query per rank, each once");
    }

    #[test]
    fn bad_settings_name_the_place() {
        let mut flat = dataset();
        flat.relevance.fill(1);
        let err = SlateSampler::new(&flat, 4, Rng::new(0), Shard::WHOLE, "t.sampler")
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("t.sampler: no query has documents of two"),
            "{err}"
        );
    }
}
