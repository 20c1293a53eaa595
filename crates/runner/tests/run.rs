//! The runner as a GPU host without Node uses it: a configuration written by `xpm-torch wire`
//! (the demo's, crates/core/tests/fixtures/demo.json, with a few fields changed as
//! test/runner-config.test.ts checks), run in a job directory.
// A failed expectation is the verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const RUNNER: &str = env!("CARGO_BIN_EXE_xpm-torch-run");

/// The demo Learner as `xpm-torch wire` writes it (`npm run build` keeps the file current), with
/// seed 3 and 2 epochs of 20 steps.
fn runner_demo() -> serde_json::Value {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures/demo.json");
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(demo).unwrap()).unwrap();
    config["random"]["seed"] = 3.into();
    config["max_epochs"] = 2.into();
    config["steps_per_epoch"] = 20.into();
    config
}

/// `runner_demo()` in a file of its own for the test `name`, outside any job directory.
fn fixture(name: &str) -> PathBuf {
    let file = std::env::temp_dir().join(format!("xpm-run-{name}-{}.json", std::process::id()));
    std::fs::write(&file, runner_demo().to_string()).unwrap();
    file
}

fn job_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xpm-run-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn run(args: &[&str]) -> Output {
    Command::new(RUNNER)
        .args(args)
        .output()
        .expect("start the runner")
}

#[test]
fn runs_a_wired_learner_in_its_job_directory() {
    let dir = job_dir("demo");
    let config = fixture("demo");
    let out = run(&[config.to_str().unwrap(), "--job-dir", dir.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let epochs: Vec<&str> = stderr.lines().filter(|l| l.starts_with("epoch ")).collect();
    assert_eq!(epochs.len(), 2, "{stderr}");
    assert!(epochs[1].starts_with("epoch 2 step 40 loss "), "{stderr}");
    assert!(epochs[1].contains("heldout/pairwise_accuracy"), "{stderr}");

    let output: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    let model = output["learned_model"].as_str().expect("a learned model");
    assert!(
        dir.join(model).is_file() || Path::new(model).is_file(),
        "{model}"
    );
    // One report time per epoch, in order (a benchmark times the epochs after the first).
    let times: Vec<f64> = output["epoch_report_seconds"]
        .as_array()
        .expect("epoch_report_seconds")
        .iter()
        .map(|t| t.as_f64().expect("seconds"))
        .collect();
    assert_eq!(times.len(), 2, "{output}");
    assert!(0.0 < times[0] && times[0] < times[1], "{times:?}");
    let runs: Vec<_> = std::fs::read_dir(dir.join("runs"))
        .expect("runs/")
        .collect();
    assert_eq!(runs.len(), 1, "one TensorBoard event file");
    assert!(dir.join("checkpoints/last").is_dir());

    // The same job again resumes from its last checkpoint: nothing is left to train.
    let again = run(&[config.to_str().unwrap(), "--job-dir", dir.to_str().unwrap()]);
    assert!(again.status.success());
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).expect("JSON output");
    assert!(again["resumed_from"].as_str().is_some(), "{again}");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_file(&config);
}

#[test]
fn a_bad_command_line_exits_2_and_a_bad_file_1() {
    let usage = run(&[]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("usage: xpm-torch-run CONFIG.json"));
    assert_eq!(run(&["a.json", "--color"]).status.code(), Some(2));

    let missing = run(&["no-such-config.json"]);
    assert_eq!(missing.status.code(), Some(1));
    let text = String::from_utf8_lossy(&missing.stderr);
    assert!(
        text.starts_with("ERR_CONFIG: no-such-config.json: "),
        "{text}"
    );

    let dir = job_dir("bad");
    std::fs::create_dir_all(&dir).unwrap();
    let wrong = dir.join("wrong.json");
    std::fs::write(
        &wrong,
        r#"{"__xpmtype__": "xpm_torch.learner.Learner", "max_epochs": "many"}"#,
    )
    .unwrap();
    let bad = run(&[wrong.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).starts_with("ERR_CONFIG: learner"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A CPU run, on any machine, reports no CUDA peaks: `cuda_memory` is null.
#[test]
fn a_cpu_run_reports_no_cuda_memory() {
    let mut config = runner_demo();
    config["fabric_config"]["accelerator"] = "cpu".into();
    config["max_epochs"] = 1.into();
    config["steps_per_epoch"] = 2.into();
    let dir = job_dir("cpu");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cpu.json");
    std::fs::write(&file, config.to_string()).unwrap();
    let out = run(&[file.to_str().unwrap(), "--job-dir", dir.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let output: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    // Present and null (indexing a missing key would give null too).
    assert_eq!(
        output.get("cuda_memory"),
        Some(&serde_json::Value::Null),
        "{output}"
    );
    assert_eq!(
        output["epoch_report_seconds"].as_array().map(Vec::len),
        Some(1)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// On a machine where CUDA is unusable (this one has no GPU), asking for it is a configuration
/// error naming the accelerator and what is missing; the CPU run of the same job trains.
#[test]
fn cuda_where_it_is_unusable_is_a_clear_error_not_a_crash() {
    let mut config = runner_demo();
    config["fabric_config"]["accelerator"] = "cuda".into();
    let dir = job_dir("cuda");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cuda.json");
    std::fs::write(&file, config.to_string()).unwrap();
    // The CUDA library is pointed nowhere, so a GPU machine refuses it as well.
    let out = Command::new(RUNNER)
        .args([file.to_str().unwrap(), "--job-dir", dir.to_str().unwrap()])
        .env("XPM_TORCH_CUDA_LIBRARY", dir.join("no-such-library.so"))
        .output()
        .expect("start the runner");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.starts_with(
            "ERR_CONFIG: learner.fabric_config.accelerator: CUDA was requested but is unusable here: "
        ),
        "{stderr}"
    );
    // Whichever piece is missing first is named with its fix.
    assert!(
        stderr.contains("npx xpm-torch setup --cuda")
            || stderr.contains("XPM_TORCH_CUDA_LIBRARY")
            || stderr.contains("no CUDA GPU is usable"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
