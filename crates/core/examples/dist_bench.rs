//! Gradient synchronisation cost of data-parallel training on this machine: an MLP
//! 136→512→512→1 (333,313 parameters, one 1.3 MB bucket) trained with SGD, 1 rank against
//! 2 ranks joined over Gloo on the loopback interface, one intra-op thread per rank.
//!
//! `cargo run --release --example dist_bench [-- <batch per rank> <steps>]`
//!
//! For each world size it prints, from rank 0, the median and mean time of
//! `all_reduce_gradients` alone and of a whole step (forward, backward, sync, SGD update).
// A benchmark may stop at the first failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};
use xpm_torch_core::distributed::{Backend, DistEnv, ProcessGroup, DEFAULT_TIMEOUT};

const WARMUP: usize = 20;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let batch: i64 = args
        .first()
        .map_or(64, |a| a.parse().expect("batch per rank"));
    let steps: usize = args.get(1).map_or(300, |a| a.parse().expect("steps"));
    if std::env::var_os("RANK").is_some() {
        worker(batch, steps);
        return;
    }
    println!("MLP 136-512-512-1, batch {batch} per rank, {steps} timed steps after {WARMUP} warm-up, 1 intra-op thread per rank");
    println!("| ranks | sync median (ms) | sync mean (ms) | step median (ms) | step mean (ms) | samples/s |");
    println!("|---|---|---|---|---|---|");
    for world in [1usize, 2] {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..world)
            .map(|rank| {
                Command::new(&exe)
                    .args([batch.to_string(), steps.to_string()])
                    .env("RANK", rank.to_string())
                    .env("LOCAL_RANK", rank.to_string())
                    .env("WORLD_SIZE", world.to_string())
                    .env("LOCAL_WORLD_SIZE", world.to_string())
                    .env("MASTER_ADDR", "127.0.0.1")
                    .env("MASTER_PORT", port.to_string())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let outputs: Vec<_> = children
            .into_iter()
            .map(|c| c.wait_with_output().unwrap())
            .collect();
        for (rank, out) in outputs.iter().enumerate() {
            assert!(
                out.status.success(),
                "rank {rank} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        print!("{}", String::from_utf8_lossy(&outputs[0].stdout));
    }
}

fn stats(mut times: Vec<Duration>) -> (f64, f64) {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = ms(times[times.len() / 2]);
    let mean = times.iter().map(|d| ms(*d)).sum::<f64>() / times.len() as f64;
    (median, mean)
}

fn worker(batch: i64, steps: usize) {
    tch::set_num_threads(1);
    let env = DistEnv::from_env().unwrap();
    let group = ProcessGroup::new(&env, Backend::Gloo, DEFAULT_TIMEOUT).unwrap();
    tch::manual_seed(0);
    let vs = nn::VarStore::new(Device::Cpu);
    let root = vs.root();
    let model = nn::seq()
        .add(nn::linear(&root / "l1", 136, 512, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(&root / "l2", 512, 512, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(&root / "l3", 512, 1, Default::default()));
    let params = vs.trainable_variables();
    tch::manual_seed(1 + group.rank() as i64);
    let x = Tensor::randn([batch, 136], (Kind::Float, Device::Cpu));
    let y = Tensor::randn([batch, 1], (Kind::Float, Device::Cpu));

    let mut sync_times = Vec::with_capacity(steps);
    let mut step_times = Vec::with_capacity(steps);
    for i in 0..WARMUP + steps {
        // Every rank starts the step together, so that the sync time is not the wait for a
        // slower peer.
        group.barrier().unwrap();
        let started = Instant::now();
        for p in &params {
            p.shallow_clone().zero_grad();
        }
        let loss = (model.forward(&x) - &y).square().mean(Kind::Float);
        loss.backward();
        let sync_start = Instant::now();
        group.all_reduce_gradients(&params).unwrap();
        let sync = sync_start.elapsed();
        tch::no_grad(|| {
            for p in &params {
                let _ = p.shallow_clone().f_sub_(&(p.grad() * 0.01)).unwrap();
            }
        });
        if i >= WARMUP {
            sync_times.push(sync);
            step_times.push(started.elapsed());
        }
    }
    if group.rank() == 0 {
        let (sync_median, sync_mean) = stats(sync_times);
        let (step_median, step_mean) = stats(step_times);
        let samples = (batch as f64) * group.world_size() as f64 / (step_median / 1e3);
        println!(
            "| {} | {sync_median:.3} | {sync_mean:.3} | {step_median:.3} | {step_mean:.3} | {samples:.0} |",
            group.world_size()
        );
    }
}
