//! [`DistEnv`]: this process's place in a data-parallel run, read from the variables that
//! torchrun, our launcher or SLURM set (`RANK`/`WORLD_SIZE` first, then SLURM's).

use super::hostlist::first_host;
use super::DistributedError;
use crate::Result;

/// Who set up the process layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnvSource {
    /// No launcher: one process.
    Single,
    /// `torchrun`, our own launcher, or anything that sets `RANK`/`WORLD_SIZE`.
    Launcher,
    /// A SLURM step (`srun`): `SLURM_PROCID`, `SLURM_STEP_NUM_TASKS`/`SLURM_NTASKS`, ...
    Slurm,
}

/// The place of this process in a data-parallel run, read once from the environment that
/// `torchrun`, our launcher or SLURM sets. Reading never changes the environment.
///
/// Precedence: `RANK`/`WORLD_SIZE` (torchrun sets them even inside a SLURM job), then SLURM's
/// variables, else a single process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistEnv {
    /// Global rank, `0..world_size`.
    pub rank: usize,
    /// Rank among the processes of this machine, `0..local_world_size` (the device index).
    pub local_rank: usize,
    /// Number of processes in the run.
    pub world_size: usize,
    /// Number of processes on this machine.
    pub local_world_size: usize,
    /// Host of rank 0, where the rendezvous store listens.
    pub master_addr: String,
    /// Port of the rendezvous store (0: any free port, only for a single process).
    pub master_port: u16,
    /// Network interface Gloo binds to (`GLOO_SOCKET_IFNAME`), if set.
    pub gloo_interface: Option<String>,
    /// A socket the launcher already bound to `MASTER_PORT` and handed to rank 0 as this file
    /// descriptor (`XPM_TORCH_MASTER_LISTEN_FD`): rank 0's store listens on it, so no port is
    /// ever closed and bound again between the launcher's choice and the rendezvous.
    pub master_listen_fd: Option<i32>,
    /// Where these values came from.
    pub source: EnvSource,
}

/// The variable naming rank 0's inherited listening socket (see [`DistEnv::master_listen_fd`]).
pub const LISTEN_FD_VAR: &str = "XPM_TORCH_MASTER_LISTEN_FD";

/// SLURM jobs without `MASTER_PORT` use a port derived from the job id, so that every task of
/// a job picks the same one and two jobs sharing a node rarely collide.
const SLURM_PORT_BASE: u64 = 15000;
const SLURM_PORT_SPAN: u64 = 20000;

impl DistEnv {
    /// A lone process (rank 0 of 1) rendezvousing with itself on a free loopback port.
    pub fn single() -> Self {
        DistEnv {
            rank: 0,
            local_rank: 0,
            world_size: 1,
            local_world_size: 1,
            master_addr: "127.0.0.1".into(),
            master_port: 0,
            gloo_interface: None,
            master_listen_fd: None,
            source: EnvSource::Single,
        }
    }

    /// Reads the process environment.
    ///
    /// # Errors
    /// [`DistributedError::Env`] naming the variable that is missing, malformed or
    /// inconsistent with the others.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the layout through `get` (the environment, or a map in tests).
    ///
    /// # Errors
    /// As [`DistEnv::from_env`].
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |name: &str| get(name).filter(|v| !v.trim().is_empty());
        let mut env = if get("WORLD_SIZE").is_some() || get("RANK").is_some() {
            launcher(&get)?
        } else if get("SLURM_PROCID").is_some() {
            slurm(&get)?
        } else {
            DistEnv::single()
        };
        env.gloo_interface = get("GLOO_SOCKET_IFNAME");
        if env.rank == 0 {
            env.master_listen_fd = get(LISTEN_FD_VAR)
                .map(|v| {
                    v.trim()
                        .parse::<i32>()
                        .ok()
                        .filter(|fd| *fd >= 0)
                        .ok_or_else(|| {
                            env_error(LISTEN_FD_VAR, format!("{v:?} is not a file descriptor"))
                        })
                })
                .transpose()?;
        }
        env.check()?;
        Ok(env)
    }

    /// Whether more than one process takes part.
    pub fn is_distributed(&self) -> bool {
        self.world_size > 1
    }

    /// `MASTER_ADDR:MASTER_PORT`, for messages.
    pub fn master(&self) -> String {
        format!("{}:{}", self.master_addr, self.master_port)
    }

    fn check(&self) -> Result<()> {
        let (rank_var, world_var, local_var, local_world_var) = match self.source {
            EnvSource::Slurm => (
                "SLURM_PROCID",
                "SLURM_STEP_NUM_TASKS",
                "SLURM_LOCALID",
                "SLURM_NTASKS_PER_NODE",
            ),
            _ => ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"),
        };
        if self.world_size == 0 {
            return Err(env_error(world_var, "must be at least 1"));
        }
        if self.rank >= self.world_size {
            return Err(env_error(
                rank_var,
                format!(
                    "{} is not below the world size {}",
                    self.rank, self.world_size
                ),
            ));
        }
        if self.local_world_size == 0 || self.local_world_size > self.world_size {
            return Err(env_error(
                local_world_var,
                format!(
                    "{} processes on this machine, but the world has {}",
                    self.local_world_size, self.world_size
                ),
            ));
        }
        if self.local_rank >= self.local_world_size {
            return Err(env_error(
                local_var,
                format!(
                    "{} is not below the {} processes of this machine",
                    self.local_rank, self.local_world_size
                ),
            ));
        }
        if self.world_size > 1 && self.master_port == 0 {
            return Err(env_error(
                "MASTER_PORT",
                "must name a port (1-65535) when several processes take part",
            ));
        }
        Ok(())
    }
}

fn env_error(variable: &str, message: impl Into<String>) -> crate::Error {
    DistributedError::Env {
        variable: variable.into(),
        message: message.into(),
    }
    .into()
}

fn parse_count(name: &str, value: &str) -> Result<usize> {
    value
        .trim()
        .parse::<usize>()
        .map_err(|_| env_error(name, format!("{value:?} is not a non-negative integer")))
}

fn required(get: &impl Fn(&str) -> Option<String>, name: &str, why: &str) -> Result<String> {
    get(name).ok_or_else(|| env_error(name, format!("is not set; {why}")))
}

fn port(name: &str, value: &str) -> Result<u16> {
    value
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|p| *p != 0)
        .ok_or_else(|| env_error(name, format!("{value:?} is not a port number (1-65535)")))
}

/// torchrun's (and our launcher's) variables.
fn launcher(get: &impl Fn(&str) -> Option<String>) -> Result<DistEnv> {
    let pair = "RANK and WORLD_SIZE go together";
    let world_size = parse_count("WORLD_SIZE", &required(get, "WORLD_SIZE", pair)?)?;
    let rank = parse_count("RANK", &required(get, "RANK", pair)?)?;
    if world_size <= 1 {
        let local_rank = match get("LOCAL_RANK") {
            Some(v) => parse_count("LOCAL_RANK", &v)?,
            None => 0,
        };
        return Ok(DistEnv {
            rank,
            local_rank,
            world_size,
            source: EnvSource::Launcher,
            master_addr: get("MASTER_ADDR").unwrap_or_else(|| "127.0.0.1".into()),
            master_port: match get("MASTER_PORT") {
                Some(v) => port("MASTER_PORT", &v)?,
                None => 0,
            },
            ..DistEnv::single()
        });
    }
    let several = "it must be set when WORLD_SIZE is above 1";
    Ok(DistEnv {
        rank,
        local_rank: parse_count("LOCAL_RANK", &required(get, "LOCAL_RANK", several)?)?,
        world_size,
        local_world_size: parse_count(
            "LOCAL_WORLD_SIZE",
            &required(get, "LOCAL_WORLD_SIZE", several)?,
        )?,
        master_addr: required(get, "MASTER_ADDR", "set it to the host of rank 0")?,
        master_port: port(
            "MASTER_PORT",
            &required(
                get,
                "MASTER_PORT",
                "set it to a free port on the host of rank 0",
            )?,
        )?,
        gloo_interface: None,
        master_listen_fd: None,
        source: EnvSource::Launcher,
    })
}

/// The variables `srun` sets for each task of a step.
fn slurm(get: &impl Fn(&str) -> Option<String>) -> Result<DistEnv> {
    let rank = parse_count("SLURM_PROCID", &required(get, "SLURM_PROCID", "")?)?;
    // The step's task count: a batch script's own allocation (SLURM_NTASKS) may be larger
    // than the step actually started.
    let (world_var, world_text) = match get("SLURM_STEP_NUM_TASKS") {
        Some(v) => ("SLURM_STEP_NUM_TASKS", v),
        None => (
            "SLURM_NTASKS",
            required(
                get,
                "SLURM_NTASKS",
                "SLURM_PROCID is set, so the task count is needed",
            )?,
        ),
    };
    let world_size = parse_count(world_var, &world_text)?;
    let local_rank = match get("SLURM_LOCALID") {
        Some(v) => parse_count("SLURM_LOCALID", &v)?,
        None if world_size == 1 => 0,
        None => {
            return Err(env_error(
                "SLURM_LOCALID",
                "is not set; start the tasks with srun",
            ))
        }
    };
    let local_world_size = slurm_local_world_size(get, world_size)?;
    let master_addr = match get("MASTER_ADDR") {
        Some(addr) => addr,
        None => {
            let (var, list) = [
                "SLURM_STEP_NODELIST",
                "SLURM_JOB_NODELIST",
                "SLURM_NODELIST",
            ]
            .iter()
            .find_map(|v| get(v).map(|l| (*v, l)))
            .ok_or_else(|| {
                env_error(
                    "MASTER_ADDR",
                    "is not set and SLURM gives no node list (SLURM_JOB_NODELIST)",
                )
            })?;
            first_host(&list)
                .ok_or_else(|| env_error(var, format!("cannot read a host from {list:?}")))?
        }
    };
    let master_port = match get("MASTER_PORT") {
        Some(v) => port("MASTER_PORT", &v)?,
        None if world_size == 1 => 0,
        None => {
            let job = required(
                get,
                "SLURM_JOB_ID",
                "it gives the rendezvous port when MASTER_PORT is not set",
            )?;
            let id = job
                .trim()
                .parse::<u64>()
                .map_err(|_| env_error("SLURM_JOB_ID", format!("{job:?} is not a job number")))?;
            u16::try_from(SLURM_PORT_BASE + id % SLURM_PORT_SPAN)
                .map_err(|_| env_error("SLURM_JOB_ID", "derived port out of range"))?
        }
    };
    Ok(DistEnv {
        rank,
        local_rank,
        world_size,
        local_world_size,
        master_addr,
        master_port,
        gloo_interface: None,
        master_listen_fd: None,
        source: EnvSource::Slurm,
    })
}

/// Tasks on this node: `SLURM_NTASKS_PER_NODE` when given, else this node's entry of
/// `SLURM_STEP_TASKS_PER_NODE`/`SLURM_TASKS_PER_NODE` (`2(x3),1` = 2,2,2,1) at `SLURM_NODEID`.
fn slurm_local_world_size(get: &impl Fn(&str) -> Option<String>, world: usize) -> Result<usize> {
    if let Some(v) = get("SLURM_NTASKS_PER_NODE") {
        return parse_count("SLURM_NTASKS_PER_NODE", &v);
    }
    let Some((var, spec)) = ["SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"]
        .iter()
        .find_map(|v| get(v).map(|s| (*v, s)))
    else {
        return if world == 1 {
            Ok(1)
        } else {
            Err(env_error(
                "SLURM_TASKS_PER_NODE",
                "is not set; start the tasks with srun",
            ))
        };
    };
    let node = match get("SLURM_NODEID") {
        Some(v) => parse_count("SLURM_NODEID", &v)?,
        None => 0,
    };
    let bad = || {
        env_error(
            var,
            format!("cannot read {spec:?} (expected e.g. \"2(x3),1\")"),
        )
    };
    let mut index = 0usize;
    for entry in spec.split(',') {
        let (count, repeat) = match entry.split_once("(x") {
            Some((c, r)) => (c, r.strip_suffix(')').ok_or_else(bad)?),
            None => (entry, "1"),
        };
        let count = count.trim().parse::<usize>().map_err(|_| bad())?;
        let repeat = repeat.trim().parse::<usize>().map_err(|_| bad())?;
        if node < index + repeat {
            return Ok(count);
        }
        index += repeat;
    }
    Err(env_error(
        "SLURM_NODEID",
        format!("{node} is past the {index} nodes of {var}={spec:?}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<DistEnv> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        DistEnv::from_lookup(|name| map.get(name).cloned())
    }

    fn message(vars: &[(&str, &str)]) -> String {
        match read(vars) {
            Ok(env) => panic!("expected an error, got {env:?}"),
            Err(e) => e.to_string(),
        }
    }

    const TORCHRUN: [(&str, &str); 6] = [
        ("RANK", "3"),
        ("LOCAL_RANK", "1"),
        ("WORLD_SIZE", "4"),
        ("LOCAL_WORLD_SIZE", "2"),
        ("MASTER_ADDR", "node0"),
        ("MASTER_PORT", "29500"),
    ];

    #[test]
    fn nothing_set_is_a_single_process() {
        let env = read(&[]).unwrap();
        assert_eq!(env, DistEnv::single());
        assert!(!env.is_distributed());
    }

    #[test]
    fn torchrun_variables_are_read() {
        let mut vars = TORCHRUN.to_vec();
        vars.push(("GLOO_SOCKET_IFNAME", "eth1"));
        // torchrun inside a SLURM allocation: its own variables win.
        vars.push(("SLURM_PROCID", "0"));
        vars.push(("SLURM_NTASKS", "1"));
        let env = read(&vars).unwrap();
        assert_eq!(
            (
                env.rank,
                env.local_rank,
                env.world_size,
                env.local_world_size
            ),
            (3, 1, 4, 2)
        );
        assert_eq!(env.master(), "node0:29500");
        assert_eq!(env.gloo_interface.as_deref(), Some("eth1"));
        assert_eq!(env.source, EnvSource::Launcher);
        assert!(env.is_distributed());
    }

    #[test]
    fn launcher_errors_name_the_variable() {
        let without = |name: &str| -> Vec<(&str, &str)> {
            TORCHRUN
                .iter()
                .copied()
                .filter(|(k, _)| *k != name)
                .collect()
        };
        for name in [
            "RANK",
            "WORLD_SIZE",
            "LOCAL_RANK",
            "LOCAL_WORLD_SIZE",
            "MASTER_ADDR",
            "MASTER_PORT",
        ] {
            let text = message(&without(name));
            assert!(
                text.contains(&format!("{name}: is not set")),
                "{name}: {text}"
            );
        }
        let with = |name: &str, value: &'static str| -> Vec<(&str, &str)> {
            TORCHRUN
                .iter()
                .map(|(k, v)| if *k == name { (*k, value) } else { (*k, *v) })
                .collect()
        };
        assert!(message(&with("RANK", "4")).contains("RANK: 4 is not below the world size 4"));
        assert!(message(&with("RANK", "-1")).contains("RANK: \"-1\" is not a non-negative"));
        assert!(message(&with("LOCAL_RANK", "2")).contains("LOCAL_RANK: 2 is not below the 2"));
        assert!(message(&with("LOCAL_WORLD_SIZE", "5")).contains("LOCAL_WORLD_SIZE: 5 processes"));
        assert!(message(&with("WORLD_SIZE", "0")).contains("WORLD_SIZE: must be at least 1"));
        assert!(
            message(&with("MASTER_PORT", "70000")).contains("MASTER_PORT: \"70000\" is not a port")
        );
        assert!(message(&with("MASTER_PORT", "0")).contains("MASTER_PORT"));
    }

    #[test]
    fn rank_0_takes_the_listening_socket_its_launcher_handed_down() {
        let rank = |r: &'static str, fd: &'static str| -> Vec<(&'static str, &'static str)> {
            TORCHRUN
                .iter()
                .map(|(k, v)| if *k == "RANK" { (*k, r) } else { (*k, *v) })
                .chain([(LISTEN_FD_VAR, fd)])
                .collect()
        };
        assert_eq!(read(&rank("0", "3")).unwrap().master_listen_fd, Some(3));
        // Only rank 0 hosts the store: the others connect to MASTER_PORT.
        assert_eq!(read(&rank("1", "3")).unwrap().master_listen_fd, None);
        let bad = message(&rank("0", "three"));
        assert!(
            bad.contains("XPM_TORCH_MASTER_LISTEN_FD: \"three\" is not a file descriptor"),
            "{bad}"
        );
        assert_eq!(read(&TORCHRUN).unwrap().master_listen_fd, None);
    }

    #[test]
    fn a_launcher_world_of_one_needs_no_master() {
        let env = read(&[("RANK", "0"), ("WORLD_SIZE", "1")]).unwrap();
        assert_eq!((env.rank, env.world_size, env.master_port), (0, 1, 0));
        assert!(message(&[("RANK", "0")]).contains("WORLD_SIZE: is not set"));
    }

    #[test]
    fn slurm_variables_are_read() {
        let env = read(&[
            ("SLURM_PROCID", "5"),
            ("SLURM_LOCALID", "1"),
            ("SLURM_NTASKS", "8"),
            ("SLURM_STEP_NUM_TASKS", "6"),
            ("SLURM_NODEID", "2"),
            ("SLURM_STEP_TASKS_PER_NODE", "2(x3)"),
            ("SLURM_JOB_NODELIST", "gpu[07-09],cpu1"),
            ("SLURM_JOB_ID", "123456"),
        ])
        .unwrap();
        assert_eq!(
            (
                env.rank,
                env.local_rank,
                env.world_size,
                env.local_world_size
            ),
            (5, 1, 6, 2)
        );
        assert_eq!(env.master_addr, "gpu07");
        assert_eq!(env.master_port, 15000 + 3456);
        assert_eq!(env.source, EnvSource::Slurm);
    }

    #[test]
    fn slurm_uneven_nodes_and_overrides() {
        let base = [
            ("SLURM_PROCID", "4"),
            ("SLURM_LOCALID", "0"),
            ("SLURM_NTASKS", "5"),
            ("SLURM_NODEID", "2"),
            ("SLURM_TASKS_PER_NODE", "2(x2),1"),
            ("SLURM_NODELIST", "a1,a2,a3"),
            ("MASTER_ADDR", "head"),
            ("MASTER_PORT", "1234"),
        ];
        let env = read(&base).unwrap();
        assert_eq!(
            (env.local_world_size, env.master()),
            (1, "head:1234".to_string())
        );
        let mut past = base.to_vec();
        past[3] = ("SLURM_NODEID", "3");
        assert!(message(&past).contains("SLURM_NODEID: 3 is past the 3 nodes"));
        let mut bad = base.to_vec();
        bad[4] = ("SLURM_TASKS_PER_NODE", "2(x2");
        assert!(message(&bad).contains("SLURM_TASKS_PER_NODE: cannot read"));
        let mut no_port = base.to_vec();
        no_port.truncate(7);
        assert!(message(&no_port).contains("SLURM_JOB_ID: is not set"));
        let mut too_far = base.to_vec();
        too_far[0] = ("SLURM_PROCID", "5");
        assert!(message(&too_far).contains("SLURM_PROCID: 5 is not below the world size 5"));
    }
}
