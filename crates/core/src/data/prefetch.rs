use std::sync::mpsc::{sync_channel, Receiver};
use std::time::{Duration, Instant};

use super::{Batch, RecordKind, Sampler};
use crate::{Error, Result};

type Prepared = Result<(Batch, serde_json::Value)>;

/// Batches of a [`Sampler`], prepared ahead on a thread of their own when `ahead > 0`.
/// One producer makes the batches in order, so the sequence is the same whatever `ahead` is;
/// the position reported is that of the last batch *consumed*, which is what a checkpoint
/// must record.
pub struct BatchSource {
    template: Box<dyn Sampler>,
    batch_size: usize,
    ahead: usize,
    position: serde_json::Value,
    inline: Option<Box<dyn Sampler>>,
    producer: Option<Receiver<Prepared>>,
    waited: Duration,
}

impl BatchSource {
    /// Batches of `batch_size` pairs from `sampler`, `ahead` of them prepared in advance.
    pub fn new(sampler: Box<dyn Sampler>, batch_size: usize, ahead: usize) -> Self {
        let mut source = BatchSource {
            position: sampler.position(),
            template: sampler,
            batch_size,
            ahead,
            inline: None,
            producer: None,
            waited: Duration::ZERO,
        };
        source.start();
        source
    }

    /// Starts producing from the template's position (it is kept there).
    fn start(&mut self) {
        self.position = self.template.position();
        let mut sampler = self.template.fork();
        self.producer = None;
        if self.ahead == 0 {
            self.inline = Some(sampler);
            return;
        }
        self.inline = None;
        let (tx, rx) = sync_channel::<Prepared>(self.ahead);
        let batch_size = self.batch_size;
        let spawned = std::thread::Builder::new()
            .name("xpm-torch-batches".into())
            .spawn(move || loop {
                let batch = sampler
                    .next_batch(batch_size)
                    .map(|b| (b, sampler.position()));
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
            let batch = sampler.next_batch(self.batch_size)?;
            self.position = sampler.position();
            return Ok(batch);
        }
        let Some(rx) = &self.producer else {
            return Err(Error::Panic("no batch source".into()));
        };
        let started = Instant::now();
        let received = rx.recv();
        self.waited += started.elapsed();
        let (batch, position) =
            received.map_err(|_| Error::Panic("the batch thread stopped".into()))??;
        self.position = position;
        Ok(batch)
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
        let mut source = BatchSource::new(sampler(), 7, ahead);
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
    fn restoring_continues_after_the_last_consumed_batch() {
        let mut a = BatchSource::new(sampler(), 7, 3);
        for _ in 0..5 {
            a.next_batch().unwrap();
        }
        let position = a.position();
        let expected: Vec<Vec<f32>> = (0..10).map(|_| positives(&mut a)).collect();
        let mut b = BatchSource::new(sampler(), 7, 2);
        b.next_batch().unwrap();
        b.restore(&position, "s").unwrap();
        let got: Vec<Vec<f32>> = (0..10).map(|_| positives(&mut b)).collect();
        assert_eq!(got, expected);
    }
}
