//! `xpm-torch-run CONFIG.json [--job-dir DIR]`: runs the Learner configuration that `learn()`
//! hands the core (written by `xpm-torch wire`), on a machine without Node — a GPU host with
//! only a Python torch, for instance. Relative paths in the configuration (the generated ones:
//! `runs`, `checkpoints`, `out/...`) are taken under the job directory, the current one by
//! default. One line per epoch goes to stderr; the run's output, as JSON, to stdout, with two
//! fields for benchmarks: `epoch_report_seconds`, when each epoch's report arrived (seconds
//! since the runner started; a report follows the read of the epoch's loss, so the device's
//! queued work is done), and `cuda_memory`, the CUDA caching allocator's peaks over the run
//! (`peak_allocated_bytes`, `peak_reserved_bytes` of the device trained on; `null` when the run
//! was not on CUDA).
//!
//! Exit status: 0 when the run ended, 1 on an error (printed as `<code>: <message>`), 2 on a
//! wrong command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use tch::Device;
use xpm_torch_core::learner::{learn, EpochReport, Observer};
use xpm_torch_core::runtime::memory::cuda_memory_stats;
use xpm_torch_core::runtime::Runtime;
use xpm_torch_core::{config, Error};

const USAGE: &str = "usage: xpm-torch-run CONFIG.json [--job-dir DIR]";

/// Prints what the loop reports, as the Node side's plain progress does, and notes when each
/// epoch's report arrived.
struct Printer {
    started: Instant,
    epoch_report_seconds: Vec<f64>,
}

impl Observer for Printer {
    fn on_epoch(&mut self, report: &EpochReport) -> xpm_torch_core::Result<()> {
        self.epoch_report_seconds
            .push(self.started.elapsed().as_secs_f64());
        let metrics: Vec<String> = report
            .metrics
            .iter()
            .map(|(tag, value)| format!("{tag} {value:.4}"))
            .collect();
        eprintln!(
            "epoch {} step {} loss {:.6} {:.2} steps/s {}",
            report.epoch,
            report.step,
            report.loss,
            report.steps_per_second,
            metrics.join(" ")
        );
        Ok(())
    }

    fn warning(&mut self, message: &str) {
        eprintln!("warning: {message}");
    }
}

struct Args {
    config: PathBuf,
    job_dir: Option<PathBuf>,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut config = None;
    let mut job_dir = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--job-dir" => job_dir = Some(args.next().ok_or("--job-dir needs a directory")?.into()),
            "-h" | "--help" => return Err(String::new()),
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            other if config.is_none() => config = Some(PathBuf::from(other)),
            other => return Err(format!("unexpected argument {other}")),
        }
    }
    Ok(Args {
        config: config.ok_or("no configuration file given")?,
        job_dir,
    })
}

/// The CUDA allocator's peaks on the device `config` trained on, or `None` off CUDA. Nothing
/// resets them during a run with a plain batcher: they cover the whole run.
fn cuda_peaks(config: &config::LearnerConfig) -> xpm_torch_core::Result<Option<serde_json::Value>> {
    let (runtime, _) = Runtime::from_config(&config.fabric_config)?;
    let Device::Cuda(index) = runtime.device else {
        return Ok(None);
    };
    let stats = cuda_memory_stats(index)?;
    Ok(Some(serde_json::json!({
        "device": index,
        "peak_allocated_bytes": stats.peak_allocated,
        "peak_reserved_bytes": stats.peak_reserved,
    })))
}

fn run(args: &Args) -> xpm_torch_core::Result<serde_json::Value> {
    let started = Instant::now();
    let text = std::fs::read_to_string(&args.config)
        .map_err(|e| Error::config(args.config.display().to_string(), e.to_string()))?;
    let config = config::parse_learner(&text)?;
    if let Some(dir) = &args.job_dir {
        let moved = std::fs::create_dir_all(dir).and_then(|()| std::env::set_current_dir(dir));
        moved.map_err(|e| Error::config("--job-dir", format!("{}: {e}", dir.display())))?;
    }
    let mut printer = Printer {
        started,
        epoch_report_seconds: Vec::new(),
    };
    let output = learn(&config, &mut printer, &AtomicBool::new(false))?;
    let mut value = serde_json::to_value(output).map_err(|e| Error::Panic(e.to_string()))?;
    value["epoch_report_seconds"] = printer.epoch_report_seconds.into();
    value["cuda_memory"] = cuda_peaks(&config)?.into();
    Ok(value)
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("xpm-torch-run: {message}");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(output) => {
            println!("{output}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{}: {error}", error.code());
            ExitCode::from(1)
        }
    }
}
