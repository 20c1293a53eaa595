// Distributed data-parallel runs: one worker process per device, started the way torchrun and
// Lightning do it — the same script run again with the standard environment — or already started
// by torchrun or SLURM. The Rust core reads that environment and joins the process group.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync } from "node:fs";

import { DistributedError } from "../errors.js";
import { loadNative } from "../native.js";

export { DistributedError };

/** Marks the worker processes started by {@link launchWorkers}. */
export const LAUNCHED_ENV = "XPM_TORCH_LAUNCHED";
/** Names the descriptor of the rendezvous socket rank 0 inherits from the launcher. */
export const LISTEN_FD_ENV = "XPM_TORCH_MASTER_LISTEN_FD";

/** The devices and nodes of a run, from its fabric configuration. */
export interface FabricPlacement {
  readonly strategy: string;
  readonly devices: string;
  readonly num_nodes: number;
}

/** Where this process stands in a distributed run. */
export interface RankInfo {
  readonly rank: number;
  readonly localRank: number;
  readonly worldSize: number;
  readonly localWorldSize: number;
}

const integer = (env: NodeJS.ProcessEnv, name: string): number | undefined => {
  const text = env[name];
  if (text === undefined || text === "") return undefined;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 0) throw new DistributedError(`${name}=${JSON.stringify(text)} is not a non-negative integer`);
  return value;
};

/**
 * This process's rank, when a launcher set one: ours or torchrun's (`RANK`, `LOCAL_RANK`,
 * `WORLD_SIZE`, `LOCAL_WORLD_SIZE`), else SLURM's (`SLURM_PROCID`, `SLURM_LOCALID`, `SLURM_NTASKS`,
 * `SLURM_NTASKS_PER_NODE`). Undefined in a process nobody launched.
 */
export function rankFromEnvironment(env: NodeJS.ProcessEnv = process.env): RankInfo | undefined {
  const rank = integer(env, "RANK") ?? integer(env, "SLURM_PROCID");
  const worldSize = integer(env, "WORLD_SIZE") ?? integer(env, "SLURM_NTASKS");
  if (rank === undefined || worldSize === undefined) return undefined;
  if (rank >= worldSize) throw new DistributedError(`rank ${rank} is not below the world size ${worldSize}`);
  const localRank = integer(env, "LOCAL_RANK") ?? integer(env, "SLURM_LOCALID") ?? rank;
  const perNode = integer(env, "LOCAL_WORLD_SIZE") ?? Number.parseInt(env.SLURM_NTASKS_PER_NODE ?? "", 10);
  const localWorldSize = Number.isInteger(perNode) ? perNode : worldSize;
  return { rank, localRank, worldSize, localWorldSize };
}

/**
 * Whether the run is distributed data-parallel: strategy `ddp`, or `auto` with more than one
 * process in all (devices per node × nodes), as Lightning chooses.
 */
export function usesDdp(placement: FabricPlacement): boolean {
  if (placement.strategy === "ddp") return true;
  return placement.strategy === "auto" && devicesPerNode(placement) * placement.num_nodes > 1;
}

/** Processes per node the configuration asks for: `devices` as a count or a list; `auto` is 1. */
export function processesPerNode(placement: FabricPlacement): number {
  return usesDdp(placement) ? devicesPerNode(placement) : 1;
}

function devicesPerNode(placement: FabricPlacement): number {
  const devices = placement.devices.trim();
  if (devices === "auto" || devices === "-1") return 1;
  if (/^\d+$/.test(devices)) return Math.max(1, Number(devices));
  const list = devices.replace(/^\[|\]$/g, "").split(",").filter((d) => d.trim() !== "");
  if (list.length === 0 || list.some((d) => !/^\s*\d+\s*$/.test(d))) {
    throw new DistributedError(`learner.fabric_config.devices: ${JSON.stringify(placement.devices)} is not auto, a count or a list of device indices`);
  }
  return list.length;
}

/** The descriptor rank 0 inherits its rendezvous socket as (see `XPM_TORCH_MASTER_LISTEN_FD`). */
const LISTEN_FD_IN_CHILD = 3;

/**
 * Where the workers of this node meet: `MASTER_ADDR`/`MASTER_PORT` when given (several nodes,
 * or a port the user chose), else a socket on this machine bound to a port the system picks and
 * kept open until rank 0 inherits it, so that no other process can take the port in between.
 */
function rendezvous(env: NodeJS.ProcessEnv): { addr: string; port: string; socket?: { fd: number } } {
  const addr = env.MASTER_ADDR ?? "127.0.0.1";
  if (env.MASTER_PORT) return { addr, port: env.MASTER_PORT };
  const socket = loadNative().binding.bindRendezvousSocket(addr);
  return { addr, port: String(socket.port), socket };
}

/** How long the other workers get to exit after one failed, before they are killed. */
const GRACE_MS = 10_000;

/**
 * Starts `perNode` workers of this node — this script again, with the rank environment — and
 * waits for all of them. Node `NODE_RANK` (default 0) of `num_nodes` uses `MASTER_ADDR` and
 * `MASTER_PORT` (defaults: this machine and a free port, for a single node). When one worker
 * fails, the others are stopped, and the error names the first rank that failed.
 */
export async function launchWorkers(placement: FabricPlacement, perNode: number, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const nodeRank = integer(env, "NODE_RANK") ?? integer(env, "GROUP_RANK") ?? 0;
  if (nodeRank >= placement.num_nodes) throw new DistributedError(`NODE_RANK=${nodeRank} is not below num_nodes=${placement.num_nodes}`);
  if (placement.num_nodes > 1 && !env.MASTER_ADDR) {
    throw new DistributedError("a run over several nodes needs MASTER_ADDR and MASTER_PORT (the address of node 0), and NODE_RANK on each node");
  }
  const meeting = rendezvous(env);
  const worldSize = perNode * placement.num_nodes;
  const workers: { rank: number; child: ChildProcess; tail: string[] }[] = [];
  for (let local = 0; local < perNode; local++) {
    const rank = nodeRank * perNode + local;
    const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
      env: {
        ...env,
        [LAUNCHED_ENV]: "1",
        RANK: String(rank),
        LOCAL_RANK: String(local),
        WORLD_SIZE: String(worldSize),
        LOCAL_WORLD_SIZE: String(perNode),
        NODE_RANK: String(nodeRank),
        MASTER_ADDR: meeting.addr,
        MASTER_PORT: meeting.port,
        ...(rank === 0 && meeting.socket ? { [LISTEN_FD_ENV]: String(LISTEN_FD_IN_CHILD) } : {}),
      },
      stdio: ["ignore", rank === 0 ? "inherit" : "pipe", "pipe", ...(rank === 0 && meeting.socket ? [meeting.socket.fd] : [])],
    });
    const tail: string[] = [];
    child.stderr?.on("data", (chunk: Buffer) => {
      const text = chunk.toString();
      process.stderr.write(text.replace(/^(?=.)/gm, `[rank ${rank}] `));
      tail.push(text);
      if (tail.length > 20) tail.shift();
    });
    child.stdout?.on("data", (chunk: Buffer) => process.stdout.write(chunk.toString().replace(/^(?=.)/gm, `[rank ${rank}] `)));
    workers.push({ rank, child, tail });
  }
  // Rank 0 holds its own copy of the socket now.
  if (meeting.socket) closeSync(meeting.socket.fd);
  const exits = workers.map(
    ({ rank, child, tail }) =>
      new Promise<{ rank: number; failure?: string }>((done) => {
        child.on("exit", (code, signal) => {
          if (code === 0) done({ rank });
          else done({ rank, failure: `rank ${rank} ${signal ? `was killed by ${signal}` : `exited with code ${code}`}${tail.length ? `: ${tail.join("").trim().split("\n").slice(-3).join(" | ")}` : ""}` });
        });
      }),
  );
  const failure = await new Promise<string | undefined>((settle) => {
    let remaining = exits.length;
    for (const exit of exits) {
      void exit.then((r) => {
        if (r.failure !== undefined) settle(r.failure);
        else if (--remaining === 0) settle(undefined);
      });
    }
  });
  if (failure === undefined) return;
  // One rank failed: the others would wait for it forever in their collectives.
  for (const { child } of workers) if (child.exitCode === null) child.kill("SIGTERM");
  const killer = setTimeout(() => {
    for (const { child } of workers) if (child.exitCode === null) child.kill("SIGKILL");
  }, GRACE_MS);
  await Promise.all(exits);
  clearTimeout(killer);
  throw new DistributedError(`distributed run failed: ${failure}`);
}
