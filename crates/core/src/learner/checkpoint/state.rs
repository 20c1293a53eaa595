//! What a checkpoint holds and how it is saved and restored: the loop's [`Progress`], the model,
//! optimizers and loss scaler, and each rank's sampler and generator states ([`RankState`]).
//! A done run's checkpoints keep only the model, the progress and the listeners
//! ([`write_final_state`]): enough to return its result again, not to train on.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use tch::Tensor;

use super::faults::{check, Stage};
use super::{
    read_listed, verify_checkpoint_dir, write_checkpoint_dir, write_synced, CheckpointPolicy, INFO,
};
use crate::learner::build::Run;
use crate::learner::EpochReport;
use crate::optim::copy_into;
use crate::runtime::{GeneratorStates, ScalerState};
use crate::{Error, Result};

/// Where the loop stands when a checkpoint is taken (by default: before the first step).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Progress {
    /// Last completed epoch (0 before the first).
    pub epoch: u64,
    /// Global step.
    pub step: u64,
    /// Steps already done in the next epoch (a checkpoint taken inside an epoch).
    pub steps_in_epoch: u64,
    /// That unfinished epoch's metrics so far.
    pub partial_metrics: BTreeMap<String, (f64, i64)>,
    /// That unfinished epoch's summed step losses.
    pub partial_loss: Option<f64>,
    /// Reports of the completed epochs.
    pub history: Vec<EpochReport>,
    /// Checkpointed epochs' model weights.
    pub checkpoints: BTreeMap<u64, String>,
    /// Why the run stopped early, once it did: a run resuming from here trains no further.
    /// Checkpoints written before this field existed have none (not stopped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The metrics of the validation before the first step, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_metrics: Option<BTreeMap<String, f64>>,
    /// That unfinished epoch's step losses, when they are kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub partial_step_losses: Vec<f64>,
}

/// What differs between the ranks of a data-parallel run: each samples its own share of the
/// data and draws its own dropout masks. Rank 0 saves every rank's.
#[derive(Debug, Clone)]
pub(crate) struct RankState {
    /// The trainer's state (sampler positions).
    pub trainer: serde_json::Value,
    /// The libtorch generators' states.
    pub generators: GeneratorStates,
}

impl RankState {
    /// This process's part of `run`'s state.
    ///
    /// # Errors
    /// A libtorch error reading a generator.
    pub fn of(run: &Run) -> Result<Self> {
        Ok(RankState {
            trainer: run.trainer.state(),
            generators: run.random.states()?,
        })
    }
}

#[derive(Debug, Serialize, Deserialize)]
struct StateFile {
    format: u32,
    progress: Progress,
    schedule_steps: u64,
    optimizer_tensors: Vec<usize>,
    /// The trainer's state of each rank, in rank order.
    trainers: Vec<serde_json::Value>,
    listeners: BTreeMap<String, serde_json::Value>,
    /// The loss scaler's state (`16-mixed` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scaler: Option<ScalerState>,
    /// The libtorch generators' streams (the same on every rank); their states are in
    /// [`GENERATORS`], one set per rank.
    generators: Vec<String>,
}

/// Format 2 added the libtorch generators and the state of every rank.
const FORMAT: u32 = 2;
/// The model weights inside a checkpoint directory.
pub(crate) const MODEL: &str = "model/model.safetensors";
const STATE: &str = "state.json";
/// The state a done run's checkpoint keeps instead of [`STATE`] (see [`write_final_state`]).
pub(crate) const FINAL_STATE: &str = "final-state.json";
const TENSORS: &str = "optimizer.safetensors";
/// The states of the libtorch generators: `<rank>/<stream>`, bytes.
const GENERATORS: &str = "generators.safetensors";

fn json_error(what: &Path) -> impl Fn(serde_json::Error) -> Error + '_ {
    move |e| Error::checkpoint(what.display().to_string(), e.to_string())
}

/// Writes the whole state of a run to `dest` (atomically), with the state of every rank, in rank
/// order (`[RankState::of(run)]` for a single process).
pub(crate) fn save_checkpoint(
    run: &Run,
    progress: &Progress,
    ranks: &[RankState],
    dest: &Path,
) -> Result<()> {
    let (optimizers, schedule_steps) = run.optimizers.state();
    let mut tensors: Vec<(String, Tensor)> = Vec::new();
    let mut counts = Vec::new();
    for (i, ts) in optimizers.into_iter().enumerate() {
        counts.push(ts.len());
        for (j, t) in ts.into_iter().enumerate() {
            tensors.push((format!("{i}.{j}"), t));
        }
    }
    let state = StateFile {
        format: FORMAT,
        progress: progress.clone(),
        schedule_steps,
        optimizer_tensors: counts,
        trainers: ranks.iter().map(|r| r.trainer.clone()).collect(),
        listeners: run
            .listeners
            .iter()
            .map(|l| (l.id().to_string(), l.state()))
            .collect(),
        scaler: run.scaler.as_ref().map(|s| s.state()).transpose()?,
        generators: ranks
            .first()
            .map(|r| r.generators.iter().map(|(name, _)| name.clone()).collect())
            .unwrap_or_default(),
    };
    let mut generators = Vec::new();
    for (rank, state) in ranks.iter().enumerate() {
        for (name, bytes) in &state.generators {
            generators.push((format!("{rank}/{name}"), Tensor::f_from_slice(bytes)?));
        }
    }
    write_checkpoint_dir(dest, |tmp| {
        run.model.save(&tmp.join(MODEL))?;
        check(Stage::Files, dest)?;
        if !generators.is_empty() {
            Tensor::write_safetensors(&generators, tmp.join(GENERATORS))?;
        }
        if !tensors.is_empty() {
            Tensor::write_safetensors(&tensors, tmp.join(TENSORS))?;
        }
        let info = serde_json::json!({ "epoch": progress.epoch, "steps": progress.step });
        std::fs::write(tmp.join(INFO), info.to_string())
            .map_err(|e| Error::io(tmp.join(INFO), e))?;
        let text = serde_json::to_vec(&state).map_err(json_error(dest))?;
        std::fs::write(tmp.join(STATE), text).map_err(|e| Error::io(tmp.join(STATE), e))
    })
}

/// The model weights file of a checkpoint directory.
pub(crate) fn model_file(dir: &Path) -> String {
    dir.join(MODEL).display().to_string()
}

/// Restores `run`, the process of rank `rank`, from the checkpoint in `dir` after verifying it;
/// returns its progress. A done run's checkpoint (its training state dropped) restores the model
/// and listeners only, and only when `policy` leaves nothing to train from it.
///
/// # Errors
/// [`Error::Checkpoint`] naming the directory when it is incomplete, corrupt or does not fit
/// this configuration. `run` may be partly restored then: build it again before retrying.
pub(crate) fn load_checkpoint(
    run: &mut Run,
    dir: &Path,
    rank: usize,
    policy: &CheckpointPolicy,
) -> Result<Progress> {
    let listed = verify_checkpoint_dir(dir)?;
    let done = listed.contains(FINAL_STATE);
    let what = dir.display().to_string();
    let name = if done { FINAL_STATE } else { STATE };
    let text = std::fs::read(dir.join(name)).map_err(|e| Error::io(dir.join(name), e))?;
    let state: StateFile = serde_json::from_slice(&text).map_err(json_error(dir))?;
    if state.format != FORMAT {
        return Err(Error::checkpoint(
            what,
            format!("state format {} is not {FORMAT}", state.format),
        ));
    }
    let progress = &state.progress;
    if done && !policy.done_at(progress.epoch, progress.stopped.is_some()) {
        return Err(Error::checkpoint(
            what,
            format!(
                "holds the models of a done run, not its training state (dropped when that run \
                 ended; the Learner's keep_training_state: true keeps it), so it cannot continue \
                 to epoch {}",
                policy.max_epochs
            ),
        ));
    }
    restore_model(run, dir)?;
    if !done {
        restore_training_state(run, dir, &state, rank)?;
    }
    for listener in &mut run.listeners {
        if let Some(s) = state.listeners.get(listener.id()) {
            listener.restore(s)?;
        }
    }
    Ok(state.progress)
}

/// Restores the model's weights from checkpoint `dir`.
fn restore_model(run: &mut Run, dir: &Path) -> Result<()> {
    let what = dir.display().to_string();
    let saved: BTreeMap<String, Tensor> = Tensor::read_safetensors(dir.join(MODEL))?
        .into_iter()
        .collect();
    let params = run.model.named_parameters();
    let mut targets = Vec::with_capacity(params.len());
    let mut sources = Vec::with_capacity(params.len());
    for p in params {
        let t = saved.get(&p.name).ok_or_else(|| {
            Error::checkpoint(&what, format!("the model has no tensor {:?}", p.name))
        })?;
        sources.push(t.shallow_clone());
        targets.push(p.tensor);
    }
    copy_into(&mut targets, sources, &format!("{what}: model"))
}

/// Restores what only resuming needs: the optimizers and schedules, rank `rank`'s trainer
/// (sampler positions) and generators, and the loss scaler.
fn restore_training_state(run: &mut Run, dir: &Path, state: &StateFile, rank: usize) -> Result<()> {
    let what = dir.display().to_string();
    let mut tensors: BTreeMap<String, Tensor> = if state.optimizer_tensors.iter().any(|n| *n > 0) {
        Tensor::read_safetensors(dir.join(TENSORS))?
            .into_iter()
            .collect()
    } else {
        BTreeMap::new()
    };
    let mut optimizers = Vec::with_capacity(state.optimizer_tensors.len());
    for (i, count) in state.optimizer_tensors.iter().enumerate() {
        let ts = (0..*count)
            .map(|j| {
                tensors.remove(&format!("{i}.{j}")).ok_or_else(|| {
                    Error::checkpoint(&what, format!("optimizer tensor {i}.{j} is missing"))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        optimizers.push(ts);
    }
    run.optimizers.restore(optimizers, state.schedule_steps)?;
    let trainer = state.trainers.get(rank).ok_or_else(|| {
        Error::checkpoint(
            &what,
            format!(
                "holds the state of {} rank(s), not of rank {rank}: resume with as many \
                 processes as the run that wrote it",
                state.trainers.len()
            ),
        )
    })?;
    run.trainer.restore(trainer)?;
    match (&mut run.scaler, &state.scaler) {
        (Some(scaler), Some(saved)) => scaler.restore(saved)?,
        (Some(_), None) => {
            return Err(Error::checkpoint(
                what,
                "holds no loss scaler state, which this 16-mixed run needs",
            ))
        }
        _ => {}
    }
    restore_generators(run, dir, state, rank)
}

/// Writes into checkpoint `dir` the state a done run keeps, [`FINAL_STATE`]: its progress, the
/// schedules' step and the listeners (their bests), read from its [`STATE`] (checked against
/// the manifest), without what only resuming needs (the optimizers' tensors, each rank's
/// sampler positions and generators, the loss scaler). The caller lists it in the manifest.
///
/// # Errors
/// [`Error::Checkpoint`] when the state is unreadable or does not match the manifest;
/// [`Error::Io`] when the write fails.
pub(crate) fn write_final_state(dir: &Path) -> Result<()> {
    let state: StateFile =
        serde_json::from_slice(&read_listed(dir, STATE)?).map_err(json_error(dir))?;
    let kept = StateFile {
        optimizer_tensors: Vec::new(),
        trainers: Vec::new(),
        scaler: None,
        generators: Vec::new(),
        ..state
    };
    let text = serde_json::to_vec(&kept).map_err(json_error(dir))?;
    write_synced(&dir.join(FINAL_STATE), &text)
}

/// Restores rank `rank`'s generator states.
fn restore_generators(run: &Run, dir: &Path, state: &StateFile, rank: usize) -> Result<()> {
    let what = dir.display().to_string();
    let mut saved: BTreeMap<String, Tensor> = if state.generators.is_empty() {
        BTreeMap::new()
    } else {
        Tensor::read_safetensors(dir.join(GENERATORS))?
            .into_iter()
            .collect()
    };
    let streams = state
        .generators
        .iter()
        .map(|name| {
            let tensor = saved.remove(&format!("{rank}/{name}")).ok_or_else(|| {
                Error::checkpoint(&what, format!("generator state {rank}/{name} is missing"))
            })?;
            Ok((name.clone(), Vec::<u8>::try_from(&tensor)?))
        })
        .collect::<Result<GeneratorStates>>()?;
    run.random.restore(&streams, &what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_written_before_early_stops_were_recorded_reads_as_not_stopped() {
        let older = r#"{"epoch":2,"step":40,"steps_in_epoch":0,"partial_metrics":{},
            "partial_loss":null,"history":[],"checkpoints":{}}"#;
        let progress: Progress = serde_json::from_str(older).unwrap();
        assert_eq!((progress.epoch, progress.stopped.as_deref()), (2, None));
        // Not stopped: written as before; stopped: read back.
        let text = serde_json::to_string(&progress).unwrap();
        assert!(!text.contains("stopped"), "{text}");
        let stopped = Progress {
            stopped: Some("stopped after epoch 2 by listener(s) heldout".into()),
            ..progress
        };
        let back: Progress =
            serde_json::from_str(&serde_json::to_string(&stopped).unwrap()).unwrap();
        assert_eq!(back.stopped, stopped.stopped);
    }
}
