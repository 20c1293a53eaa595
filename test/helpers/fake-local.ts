// Processes of a host in memory for the scheduler's tests: a launcher of `maxJobs` slots whose
// "processes" end when a test says so, writing what a job process writes.
import type { Backend, LaunchRequest, ProcessExit, ProcessRecord } from "../../ts/experiment/backend.js";
import { jobFiles, markDone, markFailed } from "../../ts/workspace/job.js";
import { writeJobStatus } from "../../ts/workspace/status.js";
import { EMPTY_RESULT } from "./fake-slurm.js";

interface FakeProcess {
  readonly pid: number;
  readonly jobDir: string;
  alive: boolean;
  end?: (exit: ProcessExit) => void;
}

type Local = ProcessRecord & { type: "local" };

export class FakeLocal implements Backend {
  readonly queuesDependencies = false;
  readonly lostGraceMs = 0;
  readonly processes = new Map<number, FakeProcess>();
  /** The processes taking a slot now, and the most that ever did at once. */
  readonly running = new Set<number>();
  mostAtOnce = 0;
  private nextPid = 50_000;

  constructor(readonly maxJobs: number) {}

  check(): readonly string[] {
    return [];
  }

  canStart(): boolean {
    return this.running.size < this.maxJobs;
  }

  async start({ job }: LaunchRequest): Promise<ProcessRecord> {
    const record = this.spawn(job.dir);
    this.take(record.pid);
    return record;
  }

  async isLive(record: ProcessRecord): Promise<boolean> {
    return record.type === "local" && (this.processes.get(record.pid)?.alive ?? false);
  }

  follow(record: ProcessRecord, _job: unknown, events: { onRunning(): void }): Promise<ProcessExit> {
    if (record.type !== "local") throw new TypeError("local records only");
    const process = this.processes.get(record.pid)!;
    this.take(record.pid);
    events.onRunning();
    return new Promise((resolve) => {
      const end = (exit: ProcessExit) => {
        this.running.delete(record.pid);
        resolve(exit);
      };
      if (!process.alive) return end({ code: 0 });
      process.end = end;
    });
  }

  detach(record: ProcessRecord): void {
    if (record.type === "local") this.processes.get(record.pid)?.end?.({ code: null, lost: "detached" });
  }

  /** An interrupt: the run writes a checkpoint and ends cancelled; a kill: SIGKILL. */
  async stop(record: ProcessRecord, how: "interrupt" | "kill"): Promise<void> {
    if (record.type !== "local") return;
    const process = this.processes.get(record.pid);
    if (!process?.alive) return;
    if (how === "kill") return this.kill(process.jobDir);
    this.fail(process.jobDir, "ERR_INTERRUPTED", "interrupted: a checkpoint was written");
  }

  // --- what happens to the processes

  /** A process started by a plan that was killed since: it runs, and no plan follows it. */
  orphan(jobDir: string): Local {
    const record = this.spawn(jobDir);
    const files = jobFiles(jobDir);
    writeJobStatus({ jobDir, identifier: files.dir.split("/").pop()!, taskId: jobDir.split("/").at(-2)! }, { state: "running", process: record });
    return record;
  }

  complete(jobDir: string): void {
    markDone(jobFiles(jobDir), EMPTY_RESULT);
    writeJobStatus(this.target(jobDir), { state: "done" });
    this.exit(jobDir, { code: 0 });
  }

  fail(jobDir: string, code: string, message: string): void {
    markFailed(jobFiles(jobDir), { code, message });
    writeJobStatus(this.target(jobDir), { state: "error", failureReason: code === "ERR_INTERRUPTED" ? "cancelled" : code === "ERR_OUT_OF_MEMORY" ? "memory" : "failed" });
    this.exit(jobDir, { code: 1 });
  }

  /** SIGKILL (the out-of-memory killer): the process says nothing. */
  kill(jobDir: string): void {
    this.exit(jobDir, { code: null, how: "SIGKILL" });
  }

  /** The live process of a job directory. */
  pidOf(jobDir: string): number | undefined {
    return [...this.processes.values()].find((p) => p.jobDir === jobDir && p.alive)?.pid;
  }

  /** How many processes were ever started for a job directory. */
  startsOf(jobDir: string): number {
    return [...this.processes.values()].filter((p) => p.jobDir === jobDir).length;
  }

  private spawn(jobDir: string): Local {
    const pid = this.nextPid++;
    this.processes.set(pid, { pid, jobDir, alive: true });
    return { type: "local", pid, host: "fake-host" };
  }

  private take(pid: number): void {
    this.running.add(pid);
    this.mostAtOnce = Math.max(this.mostAtOnce, this.running.size);
  }

  private exit(jobDir: string, exit: ProcessExit): void {
    const pid = this.pidOf(jobDir);
    if (pid === undefined) throw new Error(`fake processes: nothing runs for ${jobDir}`);
    const process = this.processes.get(pid)!;
    process.alive = false;
    if (process.end) process.end(exit);
    else this.running.delete(pid);
  }

  private target(jobDir: string): { jobDir: string; identifier: string; taskId: string } {
    return { jobDir, identifier: jobDir.split("/").pop()!, taskId: jobDir.split("/").at(-2)! };
  }
}
