//! Data-parallel primitives across real processes: each test starts this test executable again
//! as worker ranks (the ignored `worker` test, told what to do through the environment) joined
//! over c10d with Gloo on a free loopback port, and bounds every wait.
// Worker helpers are test code outside `#[test]` functions; a failed expectation is the verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};
use xpm_torch_core::distributed::{
    Backend, DistEnv, GradReduction, ProcessGroup, ReduceOp, DEFAULT_TIMEOUT, LISTEN_FD_VAR,
};

const SCENARIO: &str = "XPM_DIST_TEST_SCENARIO";
const OUT_DIR: &str = "XPM_DIST_TEST_OUT";
const TIMEOUT_MS: &str = "XPM_DIST_TEST_TIMEOUT_MS";
/// `nccl` makes the workers join with NCCL, each on the GPU of its local rank (Gloo otherwise).
const BACKEND: &str = "XPM_DIST_TEST_BACKEND";
/// No test waits for its workers longer than this.
const TEST_BOUND: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------------
// The worker side.

#[test]
#[ignore = "a worker rank, started by the other tests of this file"]
fn worker() {
    let scenario = std::env::var(SCENARIO).expect("started without a scenario");
    let env = DistEnv::from_env().expect("worker environment");
    let timeout = std::env::var(TIMEOUT_MS)
        .ok()
        .map(|ms| Duration::from_millis(ms.parse().expect("timeout in ms")))
        .unwrap_or(DEFAULT_TIMEOUT);
    let backend = match std::env::var(BACKEND).as_deref() {
        Ok("nccl") => Backend::Nccl {
            device: env.local_rank,
        },
        _ => Backend::Gloo,
    };
    let group = ProcessGroup::new(&env, backend, timeout).expect("rendezvous");
    assert_eq!(
        (group.rank(), group.world_size()),
        (env.rank, env.world_size)
    );
    match scenario.as_str() {
        "collectives" => collectives(&group),
        "sgd-mean" | "sgd-sum" => {
            let out = PathBuf::from(std::env::var(OUT_DIR).expect("output directory"));
            let weights = train(Some(&group), scenario == "sgd-sum");
            write_weights(&out.join(format!("rank{}.txt", group.rank())), &weights);
        }
        "until-failure" => until_failure(&group),
        other => panic!("unknown scenario {other}"),
    }
    println!("WORKER DONE");
}

fn values(t: &Tensor) -> Vec<f64> {
    Vec::<f64>::try_from(t.to_kind(Kind::Double).flatten(0, -1)).expect("values")
}

fn collectives(group: &ProcessGroup) {
    let rank = group.rank() as f64;
    let world = group.world_size() as f64;
    let ranks_sum: f64 = (0..group.world_size()).map(|r| r as f64 + 1.0).sum();

    let a = Tensor::from_slice(&[rank + 1.0]).to_kind(Kind::Float);
    let b = Tensor::from_slice(&[1.0f64, 2.0, 3.0]) * (rank + 1.0);
    // A transposed (non-contiguous) tensor goes through a contiguous copy and back.
    let c = (Tensor::arange(6, (Kind::Float, Device::Cpu)).view([2, 3]) * (rank + 1.0)).tr();
    assert!(!c.is_contiguous());
    group
        .all_reduce(
            &[a.shallow_clone(), b.shallow_clone(), c.shallow_clone()],
            ReduceOp::Sum,
        )
        .expect("all_reduce sum");
    assert_eq!(values(&a), vec![ranks_sum]);
    assert_eq!(
        values(&b),
        vec![ranks_sum, 2.0 * ranks_sum, 3.0 * ranks_sum]
    );
    let expected_c: Vec<f64> = [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        .iter()
        .map(|v| v * ranks_sum)
        .collect();
    assert_eq!(values(&c), expected_c);

    let m = Tensor::from_slice(&[rank, -rank, 10.0]);
    group
        .all_reduce(&[m.shallow_clone()], ReduceOp::Max)
        .expect("all_reduce max");
    assert_eq!(values(&m), vec![world - 1.0, 0.0, 10.0]);

    let root = group.world_size() - 1;
    let x = Tensor::from_slice(&[rank * 10.0, rank * 20.0]);
    let y = Tensor::from_slice(&[rank as i64 + 5]);
    group
        .broadcast(&[x.shallow_clone(), y.shallow_clone()], root)
        .expect("broadcast");
    assert_eq!(values(&x), vec![root as f64 * 10.0, root as f64 * 20.0]);
    assert_eq!(values(&y), vec![root as f64 + 5.0]);
    // Calls refused before sending anything leave the group usable.
    let bad_root = group.broadcast(&[x.shallow_clone()], group.world_size());
    assert!(bad_root
        .expect_err("bad root")
        .to_string()
        .contains("root 3 is not a rank"));
    let undefined = group.all_reduce(&[x.shallow_clone(), Tensor::new()], ReduceOp::Sum);
    let undefined = undefined.expect_err("undefined tensor").to_string();
    assert!(
        undefined.contains("all_reduce failed: an undefined tensor"),
        "{undefined}"
    );

    group.barrier().expect("barrier");
    assert!(!group.any_flag(false).expect("no flag"));
    assert!(group.any_flag(group.rank() == 1).expect("rank 1 flags"));
    assert!(group.any_flag(true).expect("all flag"));

    // Gradient averaging: rank r's gradient is (r+1)·[1, 2]; a parameter without gradient
    // counts as zeros; a frozen one is left alone.
    let p = Tensor::zeros([2], (Kind::Float, Device::Cpu)).set_requires_grad(true);
    (p.shallow_clone() * Tensor::from_slice(&[1.0f32, 2.0]) * (rank + 1.0))
        .sum(Kind::Float)
        .backward();
    let unused = Tensor::zeros([3], (Kind::Float, Device::Cpu)).set_requires_grad(true);
    let frozen = Tensor::ones([4], (Kind::Float, Device::Cpu));
    let params = [
        p.shallow_clone(),
        unused.shallow_clone(),
        frozen.shallow_clone(),
    ];
    group.all_reduce_gradients(&params).expect("gradient mean");
    let mean = ranks_sum / world;
    assert_eq!(values(&p.grad()), vec![mean, 2.0 * mean]);
    assert_eq!(values(&unused.grad()), vec![0.0; 3]);
    assert!(!frozen.grad().defined());
    group
        .all_reduce_gradients_with(&params, GradReduction::Sum)
        .expect("gradient sum");
    assert_eq!(values(&p.grad()), vec![mean * world, 2.0 * mean * world]);
    // A different parameter list on a later call is refused before anything is sent.
    let err = group
        .all_reduce_gradients(&params[..1])
        .expect_err("layout changed");
    assert!(err.to_string().contains("the parameters changed"), "{err}");
}

fn until_failure(group: &ProcessGroup) {
    group.barrier().expect("first barrier");
    println!("READY");
    let hang = std::env::var("XPM_DIST_TEST_HANG_RANK")
        .ok()
        .and_then(|r| r.parse::<usize>().ok());
    if hang == Some(group.rank()) {
        std::thread::sleep(TEST_BOUND);
        return;
    }
    let mut t = Tensor::ones([1000], (Kind::Float, Device::Cpu));
    let started = Instant::now();
    while started.elapsed() < TEST_BOUND {
        if let Err(e) = group.all_reduce(&[t.shallow_clone()], ReduceOp::Sum) {
            println!("FAILED [{}]: {e}", e.code());
            // The group is broken: later calls fail at once with the first cause.
            let again = group.barrier().expect_err("a broken group must refuse");
            println!("AGAIN: {again}");
            return;
        }
        let _ = t.fill_(1.0);
    }
    panic!("no failure within {TEST_BOUND:?}");
}

// ---------------------------------------------------------------------------------------------
// The model both sides train: 2 processes × batch 4 (two micro-batches of 2 each) against
// 1 process × batch 8.

const STEPS: usize = 5;
const BATCH: i64 = 8;
const LR: f64 = 0.1;

/// Rows of the global batch each rank owns: even halves, or an uneven 3 + 5 split.
fn shard(rank: usize, world: usize, uneven: bool) -> (i64, i64) {
    match (world, uneven) {
        (1, _) => (0, BATCH),
        (2, false) => (rank as i64 * BATCH / 2, BATCH / 2),
        (2, true) => [(0, 3), (3, 5)][rank],
        _ => panic!("world {world} not planned"),
    }
}

/// Trains the small MLP for [`STEPS`] SGD steps and returns its weights. With a group, each rank
/// trains on its shard in two micro-batches and synchronises the gradients once per step:
/// averaged (each rank's loss is the mean over its equal shard), or summed (`sum_of_shares`:
/// each rank divides by the global batch size, which also works for uneven shards).
fn train(group: Option<&ProcessGroup>, sum_of_shares: bool) -> Vec<f64> {
    tch::manual_seed(7);
    let vs = nn::VarStore::new(Device::Cpu);
    let root = vs.root();
    let model = nn::seq()
        .add(nn::linear(&root / "l1", 8, 16, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(&root / "l2", 16, 1, Default::default()));
    let params = vs.trainable_variables();
    let (rank, world) = group.map_or((0, 1), |g| (g.rank(), g.world_size()));
    let (start, rows) = shard(rank, world, sum_of_shares);
    for step in 0..STEPS {
        tch::manual_seed(100 + step as i64);
        let x = Tensor::randn([BATCH, 8], (Kind::Float, Device::Cpu)).narrow(0, start, rows);
        let y = Tensor::randn([BATCH, 1], (Kind::Float, Device::Cpu)).narrow(0, start, rows);
        for p in &params {
            p.shallow_clone().zero_grad();
        }
        let divisor = if sum_of_shares { BATCH } else { rows } as f64;
        let micro = if group.is_some() { 2 } else { 1 };
        let mut offset = 0;
        for m in 0..micro {
            let len = rows / micro + i64::from(m < rows % micro);
            let pred = model.forward(&x.narrow(0, offset, len));
            let loss = (pred - y.narrow(0, offset, len)).square().sum(Kind::Float) / divisor;
            loss.backward();
            offset += len;
        }
        if let Some(group) = group {
            let reduction = if sum_of_shares {
                GradReduction::Sum
            } else {
                GradReduction::Mean
            };
            group
                .all_reduce_gradients_with(&params, reduction)
                .expect("gradient sync");
        }
        tch::no_grad(|| {
            for p in &params {
                let _ = p
                    .shallow_clone()
                    .f_sub_(&(p.grad() * LR))
                    .expect("sgd step");
            }
        });
    }
    params.iter().flat_map(values).collect()
}

fn write_weights(path: &Path, weights: &[f64]) {
    let text: Vec<String> = weights.iter().map(|w| w.to_string()).collect();
    std::fs::write(path, text.join("\n")).expect("write weights");
}

fn read_weights(path: &Path) -> Vec<f64> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| l.parse().expect("a weight"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The launching side.

struct Rank {
    child: Child,
    lines: mpsc::Receiver<String>,
    output: Vec<String>,
}

impl Rank {
    /// The next line of output, waiting at most until `deadline`.
    fn next_line(&mut self, deadline: Instant) -> Option<String> {
        let wait = deadline.saturating_duration_since(Instant::now());
        let line = self.lines.recv_timeout(wait).ok()?;
        self.output.push(line.clone());
        Some(line)
    }

    fn wait_for(&mut self, marker: &str, deadline: Instant) -> bool {
        while let Some(line) = self.next_line(deadline) {
            if line.contains(marker) {
                return true;
            }
        }
        false
    }

    /// Waits for the process to end (killing it past `deadline`); its status and all output.
    fn finish(mut self, deadline: Instant) -> (Option<i32>, String) {
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(200)) {
                    self.output.push(line);
                }
                return (status.code(), self.output.join("\n"));
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "a worker outlived its time bound; output:\n{}",
                    self.output.join("\n")
                );
            }
            while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(50)) {
                self.output.push(line);
            }
        }
    }
}

impl Drop for Rank {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback socket listening on a port the system chose, as a launcher binds it for rank 0.
fn rendezvous_socket() -> (OwnedFd, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    let port = listener.local_addr().expect("local address").port();
    (OwnedFd::from(listener), port)
}

/// A TCP socket bound to a free loopback port without listening: connections are refused.
fn bound_socket_not_listening() -> (OwnedFd, u16) {
    // SAFETY: plain socket calls on a descriptor this function owns; the address structures
    // are zeroed and sized as the kernel expects.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let owned = OwnedFd::from_raw_fd(fd);
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let ok = libc::bind(fd, std::ptr::addr_of!(addr).cast(), len);
        assert_eq!(ok, 0, "bind: {}", std::io::Error::last_os_error());
        let mut bound: libc::sockaddr_in = std::mem::zeroed();
        let mut bound_len = len;
        let ok = libc::getsockname(fd, std::ptr::addr_of_mut!(bound).cast(), &mut bound_len);
        assert_eq!(ok, 0, "getsockname: {}", std::io::Error::last_os_error());
        (owned, u16::from_be(bound.sin_port))
    }
}

/// The descriptor rank 0 finds its inherited rendezvous socket at.
const LISTEN_FD_IN_CHILD: i32 = 3;

fn spawn_ranks(world: usize, scenario: &str, extra: &[(&str, String)]) -> Vec<Rank> {
    let exe = std::env::current_exe().expect("test executable");
    let (socket, port) = rendezvous_socket();
    let port = port.to_string();
    (0..world)
        .map(|rank| {
            let mut cmd = Command::new(&exe);
            if rank == 0 {
                let fd = socket.as_raw_fd();
                cmd.env(LISTEN_FD_VAR, LISTEN_FD_IN_CHILD.to_string());
                // SAFETY: dup2 and fcntl are async-signal-safe. The copy dup2 makes survives exec;
                // when the socket already is descriptor 3, dup2 does nothing and its
                // close-on-exec flag is cleared instead.
                unsafe {
                    cmd.pre_exec(move || {
                        let done = if fd == LISTEN_FD_IN_CHILD {
                            libc::fcntl(fd, libc::F_SETFD, 0)
                        } else {
                            libc::dup2(fd, LISTEN_FD_IN_CHILD)
                        };
                        if done < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
            }
            cmd.args([
                "--ignored",
                "--exact",
                "worker",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(SCENARIO, scenario)
            .env("RANK", rank.to_string())
            .env("LOCAL_RANK", rank.to_string())
            .env("WORLD_SIZE", world.to_string())
            .env("LOCAL_WORLD_SIZE", world.to_string())
            .env("MASTER_ADDR", "127.0.0.1")
            .env("MASTER_PORT", &port)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
            for (key, _) in std::env::vars() {
                if key.starts_with("SLURM_") || key == "GLOO_SOCKET_IFNAME" {
                    cmd.env_remove(key);
                }
            }
            for (key, value) in extra {
                cmd.env(key, value);
            }
            let mut child = cmd.spawn().expect("spawn a worker");
            let (send, lines) = mpsc::channel();
            let stdout = child.stdout.take().expect("stdout");
            let stderr = child.stderr.take().expect("stderr");
            for stream in [
                Box::new(stdout) as Box<dyn std::io::Read + Send>,
                Box::new(stderr),
            ] {
                let send = send.clone();
                std::thread::spawn(move || {
                    for line in BufReader::new(stream).lines().map_while(Result::ok) {
                        if send.send(line).is_err() {
                            break;
                        }
                    }
                });
            }
            Rank {
                child,
                lines,
                output: Vec::new(),
            }
        })
        .collect()
}

fn run_to_success(world: usize, scenario: &str, extra: &[(&str, String)]) {
    let deadline = Instant::now() + TEST_BOUND;
    for (rank, worker) in spawn_ranks(world, scenario, extra).into_iter().enumerate() {
        let (code, output) = worker.finish(deadline);
        assert!(
            code == Some(0) && output.contains("WORKER DONE"),
            "rank {rank} failed ({code:?}):\n{output}"
        );
    }
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("xpm-dist-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn collectives_between_three_processes() {
    run_to_success(3, "collectives", &[]);
}

fn assert_same_weights(scenario: &str, backend: &str) {
    let dir = temp_dir(scenario);
    let extra = [
        (OUT_DIR, dir.display().to_string()),
        (BACKEND, backend.to_string()),
    ];
    run_to_success(2, scenario, &extra);
    let reference = train(None, false);
    for rank in 0..2 {
        let weights = read_weights(&dir.join(format!("rank{rank}.txt")));
        assert_eq!(weights.len(), reference.len());
        let worst = weights
            .iter()
            .zip(&reference)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        assert!(
            worst <= 1e-5,
            "rank {rank} differs from one process by {worst}"
        );
    }
    // The comparison can fail: the first step alone already moves the weights.
    let untrained: Vec<f64> = {
        tch::manual_seed(7);
        let vs = nn::VarStore::new(Device::Cpu);
        let root = vs.root();
        let _ = nn::linear(&root / "l1", 8, 16, Default::default());
        let _ = nn::linear(&root / "l2", 16, 1, Default::default());
        vs.trainable_variables().iter().flat_map(values).collect()
    };
    assert!(untrained
        .iter()
        .zip(&reference)
        .any(|(a, b)| (a - b).abs() > 1e-3));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn two_ranks_of_half_batches_train_like_one_process() {
    assert_same_weights("sgd-mean", "gloo");
}

#[test]
fn uneven_shards_with_summed_gradients_train_like_one_process() {
    assert_same_weights("sgd-sum", "gloo");
}

/// The same with NCCL between two GPUs: the collectives (CPU tensors travel through each rank's
/// GPU), and two ranks of half batches training like one process.
#[test]
#[ignore = "needs two CUDA GPUs: scripts/gpu/suite.sh runs it where there are"]
fn nccl_between_two_gpus_trains_like_one_process() {
    run_to_success(2, "collectives", &[(BACKEND, "nccl".to_string())]);
    assert_same_weights("sgd-mean", "nccl");
}

/// Starts 2 ranks looping on all_reduce, kills `victim` once both run, and checks that the
/// other reports an error naming it well within 60 s.
fn survivor_names_the_killed_rank(victim: usize) {
    let mut ranks = spawn_ranks(2, "until-failure", &[]);
    let deadline = Instant::now() + TEST_BOUND;
    for (rank, worker) in ranks.iter_mut().enumerate() {
        assert!(
            worker.wait_for("READY", deadline),
            "rank {rank} never got ready:\n{}",
            worker.output.join("\n")
        );
    }
    let mut dead = ranks.remove(victim);
    let killed_at = Instant::now();
    dead.child.kill().expect("kill the victim");
    dead.child.wait().expect("reap the victim");
    let survivor = ranks.remove(0);
    let (code, output) = survivor.finish(killed_at + Duration::from_secs(60));
    let took = killed_at.elapsed();
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let expected = format!(
        "rank {} of 2: all_reduce failed: rank {victim} (pid ",
        1 - victim
    );
    assert!(
        output.contains(&expected) && output.contains("exited"),
        "{output}"
    );
    assert!(output.contains("[ERR_DISTRIBUTED]"), "{output}");
    assert!(
        output.contains("AGAIN: rank") && output.contains("broken by an earlier failure"),
        "{output}"
    );
    assert_eq!(code, Some(0), "{output}");
}

#[test]
fn killing_rank_1_ends_rank_0_with_an_error_naming_it() {
    survivor_names_the_killed_rank(1);
}

#[test]
fn killing_rank_0_the_store_host_ends_rank_1_with_an_error_naming_it() {
    survivor_names_the_killed_rank(0);
}

#[test]
fn a_hung_peer_is_reported_after_the_configured_timeout() {
    let extra = [
        (TIMEOUT_MS, "3000".to_string()),
        ("XPM_DIST_TEST_HANG_RANK", "1".to_string()),
    ];
    let mut ranks = spawn_ranks(2, "until-failure", &extra);
    let deadline = Instant::now() + TEST_BOUND;
    for worker in ranks.iter_mut() {
        assert!(
            worker.wait_for("READY", deadline),
            "{}",
            worker.output.join("\n")
        );
    }
    let started = Instant::now();
    let survivor = ranks.remove(0);
    let (code, output) = survivor.finish(started + Duration::from_secs(60));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(30),
        "took {took:?}:\n{output}"
    );
    assert!(
        output.contains("rank 0 of 2: all_reduce failed: rank 1 (pid ")
            && output.contains("did not answer within the 3 s timeout"),
        "{output}"
    );
    assert_eq!(code, Some(0), "{output}");
}

#[test]
fn a_single_process_group_needs_no_launcher() {
    let group = ProcessGroup::new(&DistEnv::single(), Backend::Gloo, DEFAULT_TIMEOUT)
        .expect("a world of one on a free port");
    assert_eq!((group.rank(), group.world_size()), (0, 1));
    let t = Tensor::from_slice(&[1.5f64, -2.0]);
    group
        .all_reduce(&[t.shallow_clone()], ReduceOp::Sum)
        .expect("all_reduce");
    assert_eq!(values(&t), vec![1.5, -2.0]);
    group.barrier().expect("barrier");
    assert!(group.any_flag(true).expect("flag"));
    assert!(!group.any_flag(false).expect("no flag"));
    // Two micro-batches and a one-rank gradient sync train like one plain batch.
    let synced = train(Some(&group), false);
    let plain = train(None, false);
    let worst = synced
        .iter()
        .zip(&plain)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    assert!(worst <= 1e-5, "differs by {worst}");
}

#[test]
fn a_rendezvous_nobody_joins_fails_within_its_timeout() {
    use xpm_torch_core::distributed::DistOptions;
    let options = DistOptions {
        rendezvous_timeout: Duration::from_secs(2),
        ..DistOptions::default()
    };
    // Rank 0 hosts the store on a socket nobody else joins; rank 1 knocks at a port bound by a
    // socket that does not listen, so that nothing answers and nobody can take the port.
    let (socket, port) = rendezvous_socket();
    let mut listener = Some(socket);
    let (_closed, closed_port) = bound_socket_not_listening();
    for rank in [0, 1] {
        let port = if rank == 0 { port } else { closed_port };
        let env = DistEnv {
            rank,
            local_rank: rank,
            world_size: 2,
            local_world_size: 2,
            master_port: port,
            master_listen_fd: (rank == 0)
                .then(|| listener.take().expect("one listener").into_raw_fd()),
            ..DistEnv::single()
        };
        let started = Instant::now();
        let err = ProcessGroup::with_options(&env, options).expect_err("nobody else joins");
        let took = started.elapsed();
        let text = err.to_string();
        assert!(
            text.starts_with(&format!("rank {rank} of 2: rendezvous at 127.0.0.1:")),
            "{text}"
        );
        assert_eq!(err.code(), "ERR_DISTRIBUTED");
        assert!(took < Duration::from_secs(30), "took {took:?}: {text}");
    }
}
