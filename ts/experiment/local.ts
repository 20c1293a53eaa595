// Jobs as processes of this machine: at most max_jobs at once, GPUs handed out exclusively, CPU
// threads shared out.
import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { availableParallelism, hostname } from "node:os";

import type { ConfigOf } from "../config/class.js";
import { ConfigError } from "../errors.js";
import type { LearnerConfig } from "../learn-types.js";
import { processAlive } from "../workspace/job.js";
import type { Backend, LaunchRequest, ProcessExit, ProcessRecord } from "./backend.js";
import type { LocalLauncher } from "./launchers.js";

type LocalLauncherConfig = ConfigOf<typeof LocalLauncher>;

/** How often a process this plan did not start (an earlier run's) is checked. */
const POLL_MS = 500;

/** GPUs a job takes: its devices per node when it runs on CUDA, none on the CPU. */
export function gpusWanted(config: LearnerConfig): number {
  const fabric = config.fabric_config;
  if (fabric.accelerator === "cpu") return 0;
  const devices = fabric.devices.trim();
  if (devices === "auto" || devices === "-1") return fabric.accelerator === "auto" ? 0 : 1;
  if (/^\d+$/.test(devices)) return Number(devices);
  return devices.replace(/^\[|\]$/g, "").split(",").filter((d) => d.trim() !== "").length;
}

export class LocalBackend implements Backend {
  readonly queuesDependencies = false;
  readonly lostGraceMs = 0;
  private readonly running = new Set<number>();
  private readonly freeDevices: number[];
  private readonly threads: number;
  private readonly children = new Map<number, { exit: Promise<ProcessExit>; unref(): void }>();
  private readonly detachers = new Map<number, (exit: ProcessExit) => void>();

  constructor(private readonly launcher: LocalLauncherConfig) {
    this.freeDevices = [...(launcher.devices ?? [])];
    this.threads = launcher.threads_per_job ?? Math.max(1, Math.floor(availableParallelism() / launcher.max_jobs));
  }

  /** Whether GPUs are handed out at all (a `devices` list was given). */
  private get managesGpus(): boolean {
    return this.launcher.devices !== undefined;
  }

  check(config: LearnerConfig, where: string): readonly string[] {
    const wanted = gpusWanted(config);
    if (this.managesGpus && wanted > this.launcher.devices!.length) {
      throw new ConfigError(where, `needs ${wanted} GPUs, and the LocalLauncher has ${this.launcher.devices!.length} (devices: [${this.launcher.devices!.join(", ")}])`);
    }
    // The job's own thread count wins over the launcher's share.
    const own = config.fabric_config.num_threads;
    const cpus = availableParallelism();
    if (own !== undefined && own * this.launcher.max_jobs > cpus) {
      return [`${where}: fabric_config.num_threads ${own} × max_jobs ${this.launcher.max_jobs} is more threads than the ${cpus} CPUs: concurrent jobs will slow each other down (leave num_threads unset to get a share of ${this.threads})`];
    }
    return [];
  }

  canStart(config: LearnerConfig): boolean {
    if (this.running.size >= this.launcher.max_jobs) return false;
    return !this.managesGpus || gpusWanted(config) <= this.freeDevices.length;
  }

  async start({ job, config, command }: LaunchRequest): Promise<ProcessRecord> {
    const devices = this.managesGpus ? this.freeDevices.splice(0, gpusWanted(config)) : undefined;
    const env: NodeJS.ProcessEnv = { ...process.env, OMP_NUM_THREADS: String(this.threads) };
    if (devices) env.CUDA_VISIBLE_DEVICES = devices.join(",");
    const out = openSync(job.stdoutFile, "a");
    const err = openSync(job.stderrFile, "a");
    // Its own process group: the plan's Ctrl-C reaches it only as the plan forwards it, and the
    // job outlives a plan that is killed. The plan waits for it, so it stays referenced.
    const child = spawn(command[0]!, command.slice(1), { detached: true, stdio: ["ignore", out, err], env });
    closeSync(out);
    closeSync(err);
    const pid = child.pid;
    if (pid === undefined) {
      devices?.forEach((d) => this.freeDevices.push(d));
      throw new Error(`could not start ${command[0]}: ${await new Promise<string>((r) => child.once("error", (e) => r(e.message)))}`);
    }
    this.running.add(pid);
    this.children.set(pid, {
      exit: new Promise<ProcessExit>((resolve) => {
        child.once("error", () => resolve({ code: null, how: "spawn error" }));
        child.once("exit", (code, signal) => resolve({ code, ...(signal ? { how: signal } : {}) }));
      }),
      unref: () => child.unref(),
    });
    return { type: "local", pid, host: hostname(), ...(devices ? { devices } : {}) };
  }

  async isLive(record: ProcessRecord): Promise<boolean> {
    return record.type === "local" && record.host === hostname() && processAlive(record.pid);
  }

  async follow(record: ProcessRecord, _job: unknown, events: { onRunning(): void }): Promise<ProcessExit> {
    if (record.type !== "local") throw new TypeError("a LocalLauncher follows local processes");
    // Its slot and GPUs are taken before any await: a job this plan starts next must see them gone.
    this.running.add(record.pid);
    const taken = record.devices?.filter((d) => this.freeDevices.includes(d)) ?? [];
    taken.forEach((d) => this.freeDevices.splice(this.freeDevices.indexOf(d), 1));
    events.onRunning();
    const detached = new Promise<ProcessExit>((resolve) => this.detachers.set(record.pid, resolve));
    try {
      const child = this.children.get(record.pid);
      if (child) return await Promise.race([child.exit, detached]);
      return await Promise.race([this.whileAlive(record.pid, detached), detached]);
    } finally {
      this.running.delete(record.pid);
      this.children.delete(record.pid);
      this.detachers.delete(record.pid);
      // Its GPUs, whether this plan handed them out at start() or took them here.
      const mine = record.devices?.filter((d) => this.launcher.devices?.includes(d) && !this.freeDevices.includes(d)) ?? [];
      mine.forEach((d) => this.freeDevices.push(d));
    }
  }

  /** A process this plan did not start: polled until it is gone. */
  private async whileAlive(pid: number, detached: Promise<ProcessExit>): Promise<ProcessExit> {
    let stop = false;
    void detached.then(() => (stop = true));
    while (!stop && processAlive(pid)) await new Promise((wake) => setTimeout(wake, POLL_MS));
    return { code: null, how: "ended while the plan was away" };
  }

  detach(record: ProcessRecord): void {
    if (record.type !== "local") return;
    this.children.get(record.pid)?.unref();
    this.detachers.get(record.pid)?.({ code: null, lost: "detached" });
  }

  async stop(record: ProcessRecord, how: "interrupt" | "kill"): Promise<void> {
    if (record.type !== "local" || record.host !== hostname()) return;
    try {
      process.kill(record.pid, how === "interrupt" ? "SIGINT" : "SIGKILL");
    } catch {
      // already gone
    }
  }
}
