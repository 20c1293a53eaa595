// Data-parallel training through learn(): the launcher, Gloo on the CPU, rank-0 files.
import { spawn, spawnSync } from "node:child_process";
import { closeSync, mkdtempSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { DistributedError, fromNative } from "../ts/errors.js";
import { loadNative } from "../ts/native.js";
import { repoRoot, userEnv } from "./helpers/node.js";
import { readSafetensors } from "./helpers/safetensors.js";
import { simulatedMemory } from "./helpers/simulated-memory.js";

const CHILD = join(repoRoot, "test", "helpers", "ddp-child.mjs");
const workspace = () => mkdtempSync(join(tmpdir(), "xpm-ddp-"));

interface ChildResult {
  learned_model: string;
  jobDir: string;
  epochs: { loss: number; train: Record<string, number> }[];
}

function train(ws: string, ranks: number, batch: number, epochs: number, steps: number, extra: { batcher?: string; env?: NodeJS.ProcessEnv } = {}): ChildResult & { stderr: string } {
  const args = [CHILD, ws, String(ranks), String(batch), String(epochs), String(steps), ...(extra.batcher ? [extra.batcher] : [])];
  const out = spawnSync(process.execPath, args, {
    cwd: repoRoot,
    env: { ...userEnv(), ...extra.env },
    encoding: "utf8",
    timeout: 120_000,
  });
  expect(out.stderr).not.toMatch(/ERR_/);
  expect(out.status).toBe(0);
  return { ...(JSON.parse(out.stdout) as ChildResult), stderr: out.stderr };
}

/** The largest difference between two weight files' values. */
function largestDifference(left: string, right: string): number {
  const a = weights(left);
  const b = weights(right);
  expect([...b.keys()]).toEqual([...a.keys()]);
  let largest = 0;
  for (const [name, values] of a) {
    const other = b.get(name)!;
    for (let i = 0; i < values.length; i++) largest = Math.max(largest, Math.abs(values[i]! - other[i]!));
  }
  return largest;
}

function weights(file: string): Map<string, Float32Array> {
  const tensors = new Map<string, Float32Array>();
  for (const [name, t] of readSafetensors(file)) {
    expect(t.dtype).toBe("F32");
    tensors.set(name, new Float32Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength)));
  }
  return tensors;
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(dir.length + 1));
}

/** Starts one rank the way torchrun does: the rank environment set, not launched by learn(). */
function torchrunRank(ws: string, rank: number, socket: { fd: number; port: number }): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    const env = userEnv({ RANK: String(rank), LOCAL_RANK: String(rank), WORLD_SIZE: "2", LOCAL_WORLD_SIZE: "2", MASTER_ADDR: "127.0.0.1", MASTER_PORT: String(socket.port) });
    // Rank 0 hosts the store on the socket bound here (as a launcher holding the port does).
    if (rank === 0) env.XPM_TORCH_MASTER_LISTEN_FD = "3";
    const stdio = rank === 0 ? (["ignore", "pipe", "pipe", socket.fd] as const) : (["ignore", "pipe", "pipe"] as const);
    const child = spawn(process.execPath, [CHILD, ws, "2", "32", "1", "5"], { cwd: repoRoot, env, stdio: [...stdio] });
    let stdout = "";
    let stderr = "";
    child.stdout?.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    const bound = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("exit", (code) => {
      clearTimeout(bound);
      done({ code, stdout, stderr });
    });
  });
}

describe("ddp errors", () => {
  it("a distributed failure of the core is a DistributedError", () => {
    const error = fromNative({ code: "ERR_DISTRIBUTED", message: "rank 0 of 2: all_reduce failed: rank 1 exited" });
    expect(error).toBeInstanceOf(DistributedError);
    expect(error.code).toBe("ERR_DISTRIBUTED");
  });
});

describe("ddp through learn()", () => {
  it("2 processes × batch B reach the weights of 1 process × batch 2B, with one set of files", () => {
    const single = train(workspace(), 1, 64, 2, 10);
    const ddp = train(workspace(), 2, 32, 2, 10);
    const a = weights(single.learned_model);
    const b = weights(ddp.learned_model);
    expect([...b.keys()]).toEqual([...a.keys()]);
    let largest = 0;
    for (const [name, values] of a) {
      const other = b.get(name)!;
      for (let i = 0; i < values.length; i++) largest = Math.max(largest, Math.abs(values[i]! - other[i]!));
    }
    expect(largest).toBeLessThan(1e-5);
    // The weights moved: the comparison is not between two untrained models.
    const untrained = train(workspace(), 1, 64, 1, 1);
    const first = [...weights(untrained.learned_model).values()][0]!;
    expect(Math.abs(first[0]! - [...a.values()][0]![0]!)).toBeGreaterThan(1e-4);
    // The epoch losses are averaged over the ranks: the whole batch's.
    for (const [i, epoch] of single.epochs.entries()) expect(ddp.epochs[i]!.loss).toBeCloseTo(epoch.loss, 5);

    // Rank 0 alone wrote logs and checkpoints: one event file, as in a single-process run.
    const events = (dir: string) => filesUnder(dir).filter((f) => f.includes("tfevents"));
    expect(events(ddp.jobDir)).toHaveLength(1);
    expect(filesUnder(ddp.jobDir).filter((f) => f.startsWith("checkpoints")).sort()).toEqual(
      filesUnder(single.jobDir).filter((f) => f.startsWith("checkpoints")).sort(),
    );
    expect(readdirSync(ddp.jobDir).filter((f) => f.endsWith(".done"))).toHaveLength(1);
  }, 240_000);

  it("an out-of-memory on rank 1 only makes both ranks shrink and replay together", () => {
    const plain = train(workspace(), 2, 32, 2, 5, { batcher: "power" });
    // Rank 1 gets a simulated device holding 12 records: 32 and 16 do not fit there, 10 does.
    const simulated = simulatedMemory({ capacity: 12_000, formula: "a*bs", coefficients: { a: 1000 }, ranks: [1] });
    const shrunk = train(workspace(), 2, 32, 2, 5, { batcher: "power", env: { XPM_TORCH_SIMULATED_MEMORY: simulated } });
    // The workers' warnings reach the launcher's stderr prefixed by their rank: rank 0 shrank
    // because of rank 1, rank 1 because of its own device.
    const replays = (rank: number) => shrunk.stderr.split("\n").filter((l) => l.startsWith(`[rank ${rank}] warning: out of memory`));
    expect(replays(0)).toEqual([
      "[rank 0] warning: out of memory with micro-batches of 32 record(s) on another rank: replaying the batch with micro-batches of 16",
      "[rank 0] warning: out of memory with micro-batches of 16 record(s) on another rank: replaying the batch with micro-batches of 10",
    ]);
    expect(replays(1).map((l) => l.match(/of (\d+)$/)?.[1])).toEqual(["16", "10"]);
    expect(replays(1)[0]).toMatch(/record\(s\) on simulated: replaying/);
    expect(shrunk.epochs[0]!.train["batcher/micro_batches"]).toBe(4);
    expect(largestDifference(plain.learned_model, shrunk.learned_model)).toBeLessThan(1e-5);
  }, 240_000);

  it("a worker killed with SIGKILL ends the run with an error naming its rank", async () => {
    const ws = workspace();
    const launcher = spawn(process.execPath, [CHILD, ws, "2", "32", "1000", "1000"], { cwd: repoRoot, env: userEnv() });
    let stderr = "";
    let killed = false;
    const killRank1 = (): void => {
      const children = spawnSync("pgrep", ["-P", String(launcher.pid)], { encoding: "utf8" }).stdout.trim().split("\n");
      for (const pid of children.filter((p) => p !== "")) {
        const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
        if (environ.includes("RANK=1")) {
          process.kill(Number(pid), "SIGKILL");
          killed = true;
        }
      }
    };
    const exit = new Promise<number | null>((done) => launcher.on("exit", (code) => done(code)));
    launcher.stderr.on("data", (d: Buffer) => {
      stderr += d.toString();
      if (!killed && (stderr.match(/training started/g) ?? []).length >= 2) killRank1();
    });
    const bound = setTimeout(() => launcher.kill("SIGKILL"), 150_000);
    const code = await exit;
    clearTimeout(bound);
    expect(killed, stderr).toBe(true);
    expect(code).toBe(3);
    expect(stderr).toMatch(/ERR_DISTRIBUTED: distributed run failed: (rank 1 was killed by SIGKILL|rank 0 .*rank 1)/s);
    // The job is marked failed, not done.
    expect(filesUnder(ws).filter((f) => f.endsWith("learner.failed"))).toHaveLength(1);
    expect(filesUnder(ws).filter((f) => f.endsWith("learner.done"))).toHaveLength(0);
  }, 180_000);

  it("under torchrun, rank 0 owns the job and the other rank joins it", async () => {
    const ws = workspace();
    // A port the system chose, held open by this socket until rank 0 inherits it.
    const socket = loadNative().binding.bindRendezvousSocket("127.0.0.1");
    // Rank 1 first: it waits for rank 0's params.json before joining.
    const running = [torchrunRank(ws, 1, socket), torchrunRank(ws, 0, socket)] as const;
    closeSync(socket.fd);
    const [one, zero] = await Promise.all(running);
    expect(zero.stderr).not.toMatch(/ERR_/);
    expect([zero.code, one.code]).toEqual([0, 0]);
    const result = JSON.parse(zero.stdout) as ChildResult;
    expect(filesUnder(result.jobDir).filter((f) => f.endsWith("learner.done"))).toHaveLength(1);
    expect(filesUnder(result.jobDir).filter((f) => f.endsWith(".lock"))).toHaveLength(0);
    // Rank 1's result names no model: it wrote none.
    expect((JSON.parse(one.stdout) as ChildResult).learned_model).toBeNull();
  }, 120_000);
});
