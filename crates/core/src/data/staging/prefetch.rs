//! [`BatchSource`]: batches of a sampler prepared and staged ahead on a producer thread, in the
//! same order whatever the look-ahead, reporting the position of the last batch consumed.

use std::sync::mpsc::{sync_channel, Receiver};
use std::time::{Duration, Instant};

use crate::data::{Batch, RecordKind, Sampler, Staging, Truncation};
use crate::{Error, Result};

/// A batch, the sampler's position after it and its truncation counts so far.
type Prepared = Result<(Batch, serde_json::Value, Option<Truncation>)>;

/// Batches of a [`Sampler`], prepared ahead on a thread of their own when `ahead > 0`, and
/// staged there for their device ([`Batch::staged`]).
/// One producer makes the batches in order, so the sequence is the same whatever `ahead` is;
/// the position reported is that of the last batch *consumed*, which is what a checkpoint
/// must record.
pub struct BatchSource {
    template: Box<dyn Sampler>,
    batch_size: usize,
    ahead: usize,
    staging: Staging,
    position: serde_json::Value,
    inline: Option<Box<dyn Sampler>>,
    producer: Option<Receiver<Prepared>>,
    waited: Duration,
    /// The sampler's truncation counts after the last batch consumed.
    truncation: Option<Truncation>,
    /// What the batches consumed since the last [`BatchSource::take_truncation`] had cut.
    truncated: Truncation,
}

impl BatchSource {
    /// Batches of `batch_size` pairs from `sampler`, `ahead` of them prepared in advance,
    /// staged as `staging` says.
    pub fn new(
        sampler: Box<dyn Sampler>,
        batch_size: usize,
        ahead: usize,
        staging: Staging,
    ) -> Self {
        let mut source = BatchSource {
            position: sampler.position(),
            template: sampler,
            batch_size,
            ahead,
            staging,
            inline: None,
            producer: None,
            waited: Duration::ZERO,
            truncation: None,
            truncated: Truncation::default(),
        };
        source.start();
        source
    }

    /// Starts producing from the template's position (it is kept there).
    fn start(&mut self) {
        self.position = self.template.position();
        self.truncation = self.template.truncation();
        let mut sampler = self.template.fork();
        self.producer = None;
        if self.ahead == 0 {
            self.inline = Some(sampler);
            return;
        }
        self.inline = None;
        let (tx, rx) = sync_channel::<Prepared>(self.ahead);
        let (batch_size, staging) = (self.batch_size, self.staging);
        let spawned = std::thread::Builder::new()
            .name("xpm-torch-batches".into())
            .spawn(move || loop {
                let batch = sampler
                    .next_batch(batch_size)
                    .and_then(|b| b.staged(staging))
                    .map(|b| (b, sampler.position(), sampler.truncation()));
                let failed = batch.is_err();
                // A closed channel means the trainer went away (end of run, restore): stop.
                if tx.send(batch).is_err() || failed {
                    return;
                }
            });
        match spawned {
            Ok(_) => self.producer = Some(rx),
            // Without a thread, the batches are prepared inline: the same batches, later.
            Err(_) => self.inline = Some(self.template.fork()),
        }
    }

    /// The next batch.
    ///
    /// # Errors
    /// A libtorch error while gathering the batch, or [`Error::Panic`] if the producer died.
    pub fn next_batch(&mut self) -> Result<Batch> {
        if let Some(sampler) = &mut self.inline {
            let batch = sampler.next_batch(self.batch_size)?.staged(self.staging)?;
            self.position = sampler.position();
            let truncation = sampler.truncation();
            self.count_truncation(truncation);
            return Ok(batch);
        }
        let Some(rx) = &self.producer else {
            return Err(Error::Panic("no batch source".into()));
        };
        let started = Instant::now();
        let received = rx.recv();
        self.waited += started.elapsed();
        let (batch, position, truncation) =
            received.map_err(|_| Error::Panic("the batch thread stopped".into()))??;
        self.position = position;
        self.count_truncation(truncation);
        Ok(batch)
    }

    fn count_truncation(&mut self, now: Option<Truncation>) {
        if let (Some(now), Some(before)) = (now, self.truncation) {
            self.truncated = self.truncated.plus(now.since(before));
        }
        self.truncation = now;
    }

    /// For samplers of texts: the inputs cut by truncation among those encoded in the batches
    /// consumed since the last call.
    pub fn take_truncation(&mut self) -> Option<Truncation> {
        self.truncation?;
        Some(std::mem::take(&mut self.truncated))
    }

    /// The batch that would come next, without consuming it.
    ///
    /// # Errors
    /// The sampler's errors.
    pub fn peek(&self) -> Result<Batch> {
        self.template.fork().next_batch(self.batch_size)
    }

    /// Where the consumed batches end.
    pub fn position(&self) -> serde_json::Value {
        self.position.clone()
    }

    /// What the batches hold.
    pub fn kind(&self) -> RecordKind {
        self.template.kind()
    }

    /// Continues after the batch that ended at `position`.
    ///
    /// # Errors
    /// [`Error::Config`] at `path` when the position does not fit the data.
    pub fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()> {
        self.template.restore(position, path)?;
        self.start();
        Ok(())
    }

    /// Time spent waiting for the batch thread since the last call.
    pub fn take_waited(&mut self) -> Duration {
        std::mem::take(&mut self.waited)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{LtrDataset, PairwiseSampler, ScoreInput, Shard};
    use crate::rng::Rng;

    fn sampler() -> Box<dyn Sampler> {
        let data = LtrDataset {
            features: (0..40).map(|x| x as f32).collect(),
            num_features: 1,
            relevance: (0..40).map(|x| (x % 5) as u8).collect(),
            query_bounds: vec![0, 10, 20, 30, 40],
        };
        Box::new(PairwiseSampler::new(&data, Rng::new(3), Shard::WHOLE, "s").unwrap())
    }

    fn positives(source: &mut BatchSource) -> Vec<f32> {
        let Batch::Pairwise(b) = source.next_batch().unwrap() else {
            panic!("pairwise expected")
        };
        let ScoreInput::Features(f) = b.positive else {
            panic!("features expected")
        };
        Vec::<f32>::try_from(f.flatten(0, -1)).unwrap()
    }

    fn batches(ahead: usize, n: usize) -> Vec<Vec<f32>> {
        let mut source = BatchSource::new(sampler(), 7, ahead, Staging::Host);
        (0..n).map(|_| positives(&mut source)).collect()
    }

    #[test]
    fn the_same_batches_whatever_the_number_ahead() {
        let inline = batches(0, 40);
        assert_eq!(batches(1, 40), inline);
        assert_eq!(batches(2, 40), inline);
        assert_eq!(batches(4, 40), inline);
    }

    #[test]
    fn the_producer_thread_stages_the_batches() {
        for ahead in [0, 2] {
            let mut source = BatchSource::new(sampler(), 7, ahead, Staging::Host);
            let Batch::Pairwise(b) = source.next_batch().unwrap() else {
                panic!("pairwise expected")
            };
            let (Some(ScoreInput::Features(joined)), ScoreInput::Features(positive)) =
                (&b.joined, &b.positive)
            else {
                panic!("joined features expected (ahead {ahead})")
            };
            assert_eq!(joined.size(), [14, 1]);
            assert!(joined.narrow(0, 0, 7).equal(positive));
        }
    }

    #[test]
    fn restoring_continues_after_the_last_consumed_batch() {
        let mut a = BatchSource::new(sampler(), 7, 3, Staging::Host);
        for _ in 0..5 {
            a.next_batch().unwrap();
        }
        let position = a.position();
        let expected: Vec<Vec<f32>> = (0..10).map(|_| positives(&mut a)).collect();
        let mut b = BatchSource::new(sampler(), 7, 2, Staging::Host);
        b.next_batch().unwrap();
        b.restore(&position, "s").unwrap();
        let got: Vec<Vec<f32>> = (0..10).map(|_| positives(&mut b)).collect();
        assert_eq!(got, expected);
    }

    /// A sampler that "cuts" one input of every batch it makes.
    struct Cutting(Box<dyn Sampler>, Truncation);

    impl Sampler for Cutting {
        fn kind(&self) -> RecordKind {
            self.0.kind()
        }
        fn next_batch(&mut self, size: usize) -> Result<Batch> {
            self.1 = self.1.plus(Truncation {
                cut: 1,
                inputs: size as u64,
            });
            self.0.next_batch(size)
        }
        fn position(&self) -> serde_json::Value {
            self.0.position()
        }
        fn restore(&mut self, position: &serde_json::Value, path: &str) -> Result<()> {
            self.0.restore(position, path)
        }
        fn fork(&self) -> Box<dyn Sampler> {
            Box::new(Cutting(self.0.fork(), self.1))
        }
        fn truncation(&self) -> Option<Truncation> {
            Some(self.1)
        }
    }

    #[test]
    fn truncation_counts_the_consumed_batches_only() {
        for ahead in [0, 3] {
            let mut source = BatchSource::new(
                Box::new(Cutting(sampler(), Truncation::default())),
                7,
                ahead,
                Staging::Host,
            );
            let _ = source.peek().unwrap();
            for _ in 0..5 {
                source.next_batch().unwrap();
            }
            let five = Truncation { cut: 5, inputs: 35 };
            assert_eq!(source.take_truncation(), Some(five), "ahead {ahead}");
            source.next_batch().unwrap();
            assert_eq!(
                source.take_truncation(),
                Some(Truncation { cut: 1, inputs: 7 })
            );
        }
        let mut plain = BatchSource::new(sampler(), 7, 1, Staging::Host);
        plain.next_batch().unwrap();
        assert_eq!(
            plain.take_truncation(),
            None,
            "samplers of features count nothing"
        );
    }
}
