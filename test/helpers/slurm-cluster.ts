// A throwaway one-node SLURM cluster for a test: its own slurm.conf, state and logs in a
// temporary folder, its own ports; munged is shared (reused, or started once and left running).
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { accessSync, chmodSync, chownSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { availableParallelism, hostname, tmpdir, totalmem } from "node:os";
import { delimiter, join } from "node:path";

const DAEMON_DIRS = ["/usr/sbin", "/sbin", "/usr/local/sbin"];
const NEEDED = ["slurmctld", "slurmd", "sbatch", "srun", "squeue", "scancel", "scontrol", "sinfo", "munged", "munge"];

/** Where `name` is, on PATH or in the usual sbin folders. */
function which(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? "").split(delimiter).filter((d) => d !== ""), ...DAEMON_DIRS];
  for (const dir of dirs) {
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

function userIds(name: string): { uid: number; gid: number } | undefined {
  if (!existsSync("/etc/passwd")) return undefined;
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${name}:`));
  const [, , uid, gid] = line?.split(":") ?? [];
  return uid && gid ? { uid: Number(uid), gid: Number(gid) } : undefined;
}

/** Why a throwaway cluster cannot run here, or undefined when it can. */
export function slurmAvailable(): string | undefined {
  if (process.platform !== "linux") return `SLURM tests need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return "SLURM tests start slurmctld and slurmd, which needs root (run as root, or in CI after scripts/provision-slurm.sh)";
  const absent = NEEDED.filter((n) => which(n) === undefined);
  if (absent.length > 0) return `SLURM tests need ${absent.join(", ")} (install with scripts/provision-slurm.sh: apt-get install slurm-wlm munge)`;
  if (!userIds("munge")) return "SLURM tests need the munge user (apt-get install munge creates it)";
  return undefined;
}

export interface SlurmClusterOptions {
  /** Seconds between SIGTERM and SIGKILL (default 5; SLURM's own default is 30). */
  readonly killWait?: number;
  /** Job credential lifetime, at least 5; a requeued job waits this + 1 s before it may start again (default 5; SLURM's: 120). */
  readonly credExpire?: number;
  /** How long an ended job stays known to squeue/scontrol (default 300). */
  readonly minJobAge?: number;
  /** More slurm.conf lines, after the node and partition lines; `{node}` stands for the node's name. */
  readonly extraConf?: readonly string[];
}

export interface SlurmCluster {
  /** The environment for every SLURM command: SLURM_CONF set, no SLURM_* / SBATCH_* of the caller. */
  readonly env: NodeJS.ProcessEnv;
  readonly dir: string;
  readonly conf: string;
  readonly node: string;
  readonly partition: string;
  readonly cpus: number;
  /** Seconds from the start of {@link startSlurmCluster} until the node was idle. */
  readonly startSeconds: number;
  /** The last lines of the daemons' logs (for failure messages). */
  logs(): string;
  /** Cancels the cluster's jobs, stops its daemons (by their pid files) and removes its folder. */
  stop(): Promise<void>;
  /** Stops slurmctld alone: SLURM's commands fail until {@link startController}. */
  stopController(): Promise<void>;
  /** Starts slurmctld again; `clearState`: without the jobs it knew (`slurmctld -c`). */
  startController(options?: { clearState?: boolean }): Promise<void>;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Two ports nobody listens on, picked by the system. */
async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
          const server = createServer();
          server.once("error", reject);
          server.listen(0, () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => {
    const address = s.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    return address.port;
  });
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/** Whether a process runs (a zombie does not). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

function readPid(file: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, "utf8").trim());
    return Number.isInteger(pid) && pid > 1 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function mungeWorks(): boolean {
  return spawnSync(which("munge")!, ["-n"], { stdio: "ignore", timeout: 5_000 }).status === 0;
}

/** Reuses a running munged, or starts one as the munge user (creating its key if missing). */
async function ensureMunge(): Promise<void> {
  if (mungeWorks()) return;
  const ids = userIds("munge")!;
  for (const dir of ["/etc/munge", "/run/munge", "/var/log/munge", "/var/lib/munge"]) {
    mkdirSync(dir, { recursive: true });
    chownSync(dir, ids.uid, ids.gid);
  }
  chmodSync("/etc/munge", 0o700);
  const key = "/etc/munge/munge.key";
  if (!existsSync(key)) {
    writeFileSync(key, randomBytes(1024), { mode: 0o400 });
    chownSync(key, ids.uid, ids.gid);
  }
  const started = spawnSync("su", ["-s", "/bin/sh", "munge", "-c", which("munged")!], { encoding: "utf8", timeout: 10_000 });
  if (started.status !== 0) throw new Error(`munged did not start: ${started.stderr || started.stdout}`);
  for (let i = 0; i < 50 && !mungeWorks(); i++) await sleep(100);
  if (!mungeWorks()) throw new Error("munged started but `munge -n` still fails");
}

/** The caller's environment without SLURM's variables (a test may itself run inside a SLURM job). */
function cleanEnv(conf: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(SLURM|SBATCH|SALLOC|SRUN|SQUEUE|SCANCEL|SINFO|SCONTROL)_/.test(k)) env[k] = v;
  }
  const path = (env.PATH ?? "").split(delimiter);
  env.PATH = [...path, ...DAEMON_DIRS.filter((d) => !path.includes(d))].filter((d) => d !== "").join(delimiter);
  env.SLURM_CONF = conf;
  return env;
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/** Starts munged (if needed), slurmctld and slurmd on fresh ports; resolves once the node is idle. */
export async function startSlurmCluster(options: SlurmClusterOptions = {}): Promise<SlurmCluster> {
  const reason = slurmAvailable();
  if (reason) throw new Error(reason);
  const t0 = Date.now();
  await ensureMunge();
  const dir = mkdtempSync(join(tmpdir(), "xpm-slurm-"));
  chmodSync(dir, 0o755);
  for (const sub of ["state", "spool", "log"]) mkdirSync(join(dir, sub));
  const node = hostname().split(".")[0]!;
  const cpus = availableParallelism();
  const memory = Math.floor(totalmem() / 2 ** 20);
  const realMemory = Math.max(256, memory - Math.max(512, Math.floor(memory * 0.05)));
  const [ctldPort, slurmdPort] = await freePorts(2);
  const partition = "debug";
  const conf = join(dir, "slurm.conf");
  const pidCtld = join(dir, "slurmctld.pid");
  const pidSlurmd = join(dir, "slurmd.pid");
  const logCtld = join(dir, "log", "slurmctld.log");
  const logSlurmd = join(dir, "log", "slurmd.log");
  writeFileSync(
    conf,
    [
      `ClusterName=xpm${randomBytes(3).toString("hex")}`,
      `SlurmctldHost=${node}(127.0.0.1)`,
      `SlurmctldPort=${ctldPort}`,
      `SlurmdPort=${slurmdPort}`,
      "SlurmUser=root",
      "SlurmdUser=root",
      "AuthType=auth/munge",
      `AuthInfo=cred_expire=${options.credExpire ?? 5}`,
      `StateSaveLocation=${join(dir, "state")}`,
      `SlurmdSpoolDir=${join(dir, "spool")}`,
      `SlurmctldPidFile=${pidCtld}`,
      `SlurmdPidFile=${pidSlurmd}`,
      `SlurmctldLogFile=${logCtld}`,
      `SlurmdLogFile=${logSlurmd}`,
      "ProctrackType=proctrack/linuxproc",
      "TaskPlugin=task/none",
      "MpiDefault=none",
      "SelectType=select/cons_tres",
      "SelectTypeParameters=CR_Core",
      "SchedulerParameters=sched_interval=2,bf_interval=2",
      "ReturnToService=2",
      `KillWait=${options.killWait ?? 5}`,
      `MinJobAge=${options.minJobAge ?? 300}`,
      `NodeName=${node} NodeAddr=127.0.0.1 CPUs=${cpus} RealMemory=${realMemory} State=UNKNOWN`,
      `PartitionName=${partition} Nodes=${node} Default=YES MaxTime=INFINITE State=UP`,
      ...(options.extraConf ?? []).map((line) => line.replaceAll("{node}", node)),
      "",
    ].join("\n"),
  );
  const env = cleanEnv(conf);
  const logs = (): string => `--- slurmctld.log\n${tail(logCtld)}\n--- slurmd.log\n${tail(logSlurmd)}`;
  const stopDaemons = async (which: readonly string[] = [pidSlurmd, pidCtld]): Promise<void> => {
    const pids = which.map(readPid).filter((p): p is number => p !== undefined);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // gone
      }
    }
    for (let i = 0; i < 100 && pids.some(alive); i++) await sleep(100);
    for (const pid of pids.filter(alive)) process.kill(pid, "SIGKILL");
  };

  const start = (daemon: string, args: readonly string[] = []): void => {
    const ran = spawnSync(which(daemon)!, args, { env, encoding: "utf8", timeout: 30_000 });
    if (ran.status !== 0) throw new Error(`${daemon} did not start (${ran.status}): ${ran.stderr}\n${logs()}`);
  };
  try {
    start("slurmctld");
    start("slurmd");
    let state = "";
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      const ran = spawnSync(which("sinfo")!, ["-h", "-o", "%T", "-n", node], { env, encoding: "utf8", timeout: 10_000 });
      state = ran.stdout.trim();
      if (state === "idle") break;
      await sleep(200);
    }
    if (state !== "idle") throw new Error(`the SLURM node is "${state}", not idle, after 30 s\n${logs()}`);
  } catch (error) {
    await stopDaemons();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const startSeconds = (Date.now() - t0) / 1000;

  const stop = async (): Promise<void> => {
    const ids = spawnSync(which("squeue")!, ["-h", "-o", "%i"], { env, encoding: "utf8", timeout: 10_000 })
      .stdout.split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "");
    if (ids.length > 0) {
      spawnSync(which("scancel")!, ["--signal=KILL", "--full", ...ids], { env, stdio: "ignore", timeout: 10_000 });
      spawnSync(which("scancel")!, ids, { env, stdio: "ignore", timeout: 10_000 });
      for (let i = 0; i < 50; i++) {
        const left = spawnSync(which("squeue")!, ["-h", "-o", "%i"], { env, encoding: "utf8", timeout: 10_000 }).stdout.trim();
        if (left === "") break;
        await sleep(200);
      }
    }
    await stopDaemons();
    rmSync(dir, { recursive: true, force: true });
  };
  const stopController = () => stopDaemons([pidCtld]);
  const startController = async (options: { clearState?: boolean } = {}): Promise<void> => {
    start("slurmctld", options.clearState ? ["-c"] : []);
    const deadline = Date.now() + 30_000;
    while (spawnSync(which("scontrol")!, ["ping"], { env, encoding: "utf8", timeout: 10_000 }).stdout.includes("DOWN")) {
      if (Date.now() > deadline) throw new Error(`slurmctld did not answer scontrol ping within 30 s\n${logs()}`);
      await sleep(200);
    }
  };
  return { env, dir, conf, node, partition, cpus, startSeconds, logs, stop, stopController, startController };
}

/** `scontrol show config` value of `key` (e.g. KillWait), for reports. */
export function slurmConfig(cluster: SlurmCluster, key: string): string | undefined {
  const out = execFileSync(which("scontrol")!, ["show", "config"], { env: cluster.env, encoding: "utf8" });
  const line = out.split("\n").find((l) => l.startsWith(`${key} `));
  return line?.split("=").slice(1).join("=").trim();
}
