// The SLURM side of the SlurmLauncher: batch scripts, sbatch/squeue/scontrol/scancel, and (where
// root can start a throwaway cluster) the same against a real one-node SLURM.
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  cancelJob,
  parseScontrolJob,
  parseSqueue,
  queryJobs,
  SLURM_FINAL_STATES,
  SlurmError,
  type SlurmJobSpec,
  type SlurmJobStatus,
  type SlurmOptions,
  sbatchScript,
  shellQuote,
  slurmJobState,
  submitBatch,
} from "../ts/experiment/slurm.js";
import { type SlurmCluster, slurmAvailable, startSlurmCluster } from "./helpers/slurm-cluster.js";

const scratch = mkdtempSync(join(tmpdir(), "xpm-slurm-test-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

let serial = 0;
function spec(overrides: Partial<SlurmJobSpec> = {}, dir = scratch): SlurmJobSpec {
  serial += 1;
  return {
    name: `job${serial}`,
    scriptFile: join(dir, `job${serial}.sh`),
    stdout: join(dir, `job${serial}.out`),
    stderr: join(dir, `job${serial}.err`),
    workdir: dir,
    command: ["true"],
    env: {},
    tasksPerNode: 1,
    nodes: 1,
    afterOk: [],
    signalSeconds: 120,
    ...overrides,
  };
}

const directives = (script: string): string[] => script.split("\n").filter((l) => l.startsWith("#SBATCH "));

/** Folder of fake commands (sbatch, scontrol, …) written as bash scripts. */
function fakeBin(commands: Record<string, string>): string {
  const dir = mkdtempSync(join(scratch, "bin-"));
  for (const [name, body] of Object.entries(commands)) {
    writeFileSync(join(dir, name), `#!/bin/bash\n${body}\n`);
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

const withPath = (dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv => ({ ...process.env, ...extra, PATH: `${dir}${delimiter}${process.env.PATH ?? ""}` });

/** Resolves once `file` exists (or rejects after `ms`). */
async function waitForFile(file: string, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`${what}: ${file} did not appear within ${ms / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function exited(child: ChildProcess, ms: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the batch script did not exit within ${ms / 1000} s`)), ms);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/**
 * A stand-in for `xpm-torch learn`: records each SIGTERM, and exits 3 ("stopped, checkpoint
 * written") 300 ms after the first; when `done` exists it has nothing left to do and exits 0.
 */
const RUN = `
const fs = require("node:fs");
const [dir] = process.argv.slice(1);
const rank = process.env.SLURM_PROCID ?? "0";
const log = (line) => fs.appendFileSync(dir + "/log." + rank, line + "\\n");
if (fs.existsSync(dir + "/done." + rank)) { log("resumed"); process.exit(0); }
fs.writeFileSync(dir + "/pid." + rank, String(process.pid));
log("started restart=" + (process.env.SLURM_RESTART_COUNT ?? "none"));
let terms = 0;
process.on("SIGTERM", () => {
  terms += 1;
  log("TERM " + terms);
  if (terms === 1) setTimeout(() => { fs.writeFileSync(dir + "/done." + rank, ""); log("checkpoint"); process.exit(3); }, 300);
});
setInterval(() => {}, 1000);
`;

describe("sbatchScript", () => {
  const every: SlurmOptions = {
    partition: "gpu",
    account: "proj-42",
    qos: "high",
    time: "2-00:00:00",
    nodes: 2,
    gpus_per_node: 2,
    cpus_per_task: 8,
    mem: "64G",
    constraint: "a100&ib",
    sbatch_args: ["--exclusive", "--comment=an xpm-torch run", "-x node7"],
  };

  it("writes a line for every option, then the fixed ones, the dependency, and sbatch_args last", () => {
    const s = spec({ name: "ranker", stdout: "/ws/j/out.txt", stderr: "/ws/j/err.txt", workdir: "/ws/j", tasksPerNode: 2, nodes: 2, afterOk: ["1201", "1202"] });
    expect(directives(sbatchScript(every, s))).toEqual([
      "#SBATCH --job-name=ranker",
      "#SBATCH --output=/ws/j/out.txt",
      "#SBATCH --error=/ws/j/err.txt",
      "#SBATCH --chdir=/ws/j",
      "#SBATCH --time=2-00:00:00",
      "#SBATCH --partition=gpu",
      "#SBATCH --account=proj-42",
      "#SBATCH --qos=high",
      "#SBATCH --nodes=2",
      "#SBATCH --ntasks-per-node=2",
      "#SBATCH --gpus-per-node=2",
      "#SBATCH --cpus-per-task=8",
      "#SBATCH --mem=64G",
      "#SBATCH --constraint=a100&ib",
      "#SBATCH --open-mode=append",
      "#SBATCH --requeue",
      "#SBATCH --signal=B:USR1@120",
      "#SBATCH --dependency=afterok:1201:1202",
      "#SBATCH --exclusive",
      '#SBATCH --comment="an xpm-torch run"',
      "#SBATCH -x node7",
    ]);
  });

  it("writes only the fixed lines without options, and no dependency without parents", () => {
    const lines = directives(sbatchScript({}, spec({ signalSeconds: 55 })));
    expect(lines.map((l) => l.split("=")[0])).toEqual([
      "#SBATCH --job-name",
      "#SBATCH --output",
      "#SBATCH --error",
      "#SBATCH --chdir",
      "#SBATCH --nodes",
      "#SBATCH --ntasks-per-node",
      "#SBATCH --open-mode",
      "#SBATCH --requeue",
      "#SBATCH --signal",
    ]);
    expect(lines).toContain("#SBATCH --signal=B:USR1@55");
    expect(lines.join("\n")).not.toContain("dependency");
  });

  it("runs one task as a plain process, and several as srun with one task per rank", () => {
    const one = sbatchScript({ cpus_per_task: 4 }, spec({ command: ["node", "cli.js", "learn", "p.json"] }));
    expect(one).toContain("\nnode cli.js learn p.json &\n");
    expect(one).not.toContain("srun");
    expect(one).toContain('kill -TERM "$xpm_child"');
    const ddp = sbatchScript({ cpus_per_task: 4 }, spec({ command: ["node", "cli.js", "learn", "p.json"], nodes: 2, tasksPerNode: 4 }));
    expect(ddp).toContain("\nsrun --nodes=2 --ntasks-per-node=4 --cpus-per-task=4 --kill-on-bad-exit=0 node cli.js learn p.json &\n");
    expect(ddp).toContain('scancel --signal=TERM "$SLURM_JOB_ID"');
    expect(sbatchScript({}, spec({ tasksPerNode: 2 }))).toContain("\nsrun --nodes=1 --ntasks-per-node=2 --kill-on-bad-exit=0 true &\n");
  });

  it("quotes sbatch values sbatch would split or unquote, and doubles % in output names", () => {
    const lines = directives(sbatchScript({ constraint: "[a|b]" }, spec({ name: `it's "mine" #1 \\ ok`, stdout: "/ws/50% done/out", workdir: "/ws/50% done" })));
    expect(lines).toContain(`#SBATCH --job-name="it's \\"mine\\" #1 \\\\ ok"`);
    expect(lines).toContain('#SBATCH --output="/ws/50%% done/out"');
    expect(lines).toContain('#SBATCH --chdir="/ws/50% done"');
    expect(lines).toContain("#SBATCH --constraint=[a|b]");
  });

  it("refuses what no batch script can carry", () => {
    expect(() => sbatchScript({}, spec({ name: "a\nb" }))).toThrow(SlurmError);
    expect(() => sbatchScript({}, spec({ stdout: "C:\\out" }))).toThrow(/backslash/);
    expect(() => sbatchScript({}, spec({ env: { "BAD-NAME": "x" } }))).toThrow(/not an environment variable name/);
    expect(() => sbatchScript({}, spec({ afterOk: ["12; rm"] }))).toThrow(/not a SLURM job id/);
    expect(() => sbatchScript({}, spec({ command: [] }))).toThrow(/no command/);
    expect(() => sbatchScript({}, spec({ tasksPerNode: 0 }))).toThrow(/positive integer/);
    expect(() => sbatchScript({ sbatch_args: [`-J "x y"`] }, spec())).toThrow(/--option=value/);
    try {
      sbatchScript({}, spec({ command: ["a\0b"] }));
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(SlurmError);
      expect((error as SlurmError).code).toBe("ERR_SLURM");
    }
  });

  it("quotes awkward arguments and environment values for bash", () => {
    const awkward = ["", "two words", "it's", '"double"', "$HOME", "`id`", "a\\b", "line\nbreak", "*", "--flag=x y", "ünïcode", "!bang", "semi;colon", "tab\there"];
    const run = spawn("bash", ["-c", `printf '%s\\0' ${awkward.map(shellQuote).join(" ")}`]);
    let out = "";
    run.stdout.on("data", (d: Buffer) => (out += d.toString("utf8")));
    return new Promise<void>((resolve) => {
      run.on("exit", () => {
        expect(out.split("\0").slice(0, -1)).toEqual(awkward);
        resolve();
      });
    });
  });

  it("runs the command with its exported environment, and exits with its status", async () => {
    const dir = mkdtempSync(join(scratch, "run-"));
    const awkward = ["two words", "it's", "$HOME `id`", "line\nbreak", ""];
    const program = "require('node:fs').writeFileSync(process.argv[1], JSON.stringify({ argv: process.argv.slice(2), env: process.env.XPM_NOTE })); process.exit(7)";
    const s = spec({ command: [process.execPath, "-e", program, join(dir, "seen.json"), ...awkward], env: { XPM_NOTE: `it's "quoted" $HOME` } }, dir);
    writeFileSync(s.scriptFile, sbatchScript({}, s));
    const child = spawn("bash", [s.scriptFile], { cwd: dir, stdio: "ignore" });
    expect(await exited(child, 20_000)).toBe(7);
    expect(JSON.parse(readFileSync(join(dir, "seen.json"), "utf8"))).toEqual({ argv: awkward, env: `it's "quoted" $HOME` });
  });

  it("on USR1 sends SIGTERM once to the run, waits for it and requeues the job (no SLURM: fake scontrol)", async () => {
    const dir = mkdtempSync(join(scratch, "usr1-"));
    const bin = fakeBin({ scontrol: `echo "$@" >> ${shellQuote(join(dir, "scontrol.log"))}` });
    const s = spec({ command: [process.execPath, "-e", RUN, dir] }, dir);
    writeFileSync(s.scriptFile, sbatchScript({}, s));
    const child = spawn("bash", [s.scriptFile], { cwd: dir, env: withPath(bin, { SLURM_JOB_ID: "77" }), stdio: "ignore" });
    await waitForFile(join(dir, "pid.0"), 15_000, "the run");
    child.kill("SIGUSR1");
    expect(await exited(child, 15_000)).toBe(3);
    expect(readFileSync(join(dir, "log.0"), "utf8")).toBe("started restart=none\nTERM 1\ncheckpoint\n");
    expect(readFileSync(join(dir, "scontrol.log"), "utf8")).toBe("requeue 77\n");
  });

  it("on USR2 (cancelJob with TERM) sends SIGTERM once to the run and ends with it, without requeue", async () => {
    const dir = mkdtempSync(join(scratch, "usr2-"));
    const bin = fakeBin({ scontrol: `echo "$@" >> ${shellQuote(join(dir, "scontrol.log"))}` });
    const s = spec({ command: [process.execPath, "-e", RUN, dir] }, dir);
    writeFileSync(s.scriptFile, sbatchScript({}, s));
    const child = spawn("bash", [s.scriptFile], { cwd: dir, env: withPath(bin, { SLURM_JOB_ID: "76" }), stdio: "ignore" });
    await waitForFile(join(dir, "pid.0"), 15_000, "the run");
    child.kill("SIGUSR2");
    expect(await exited(child, 15_000)).toBe(3);
    expect(readFileSync(join(dir, "log.0"), "utf8")).toBe("started restart=none\nTERM 1\ncheckpoint\n");
    expect(existsSync(join(dir, "scontrol.log"))).toBe(false);
  });

  it("on SIGTERM to all its processes (scancel, time limit) waits for the run without signalling it again, and does not requeue", async () => {
    const dir = mkdtempSync(join(scratch, "term-"));
    const bin = fakeBin({ scontrol: `echo "$@" >> ${shellQuote(join(dir, "scontrol.log"))}` });
    const s = spec({ command: [process.execPath, "-e", RUN, dir] }, dir);
    writeFileSync(s.scriptFile, sbatchScript({}, s));
    const child = spawn("bash", [s.scriptFile], { cwd: dir, env: withPath(bin, { SLURM_JOB_ID: "78" }), stdio: "ignore", detached: true });
    await waitForFile(join(dir, "pid.0"), 15_000, "the run");
    process.kill(-child.pid!, "SIGTERM");
    expect(await exited(child, 15_000)).toBe(3);
    expect(readFileSync(join(dir, "log.0"), "utf8")).toBe("started restart=none\nTERM 1\ncheckpoint\n");
    expect(existsSync(join(dir, "scontrol.log"))).toBe(false);
  });

  it("with several tasks, signals the ranks through scancel --signal=TERM, not srun (fake srun and scancel)", async () => {
    const dir = mkdtempSync(join(scratch, "srun-"));
    const bin = fakeBin({
      scontrol: `echo "$@" >> ${shellQuote(join(dir, "scontrol.log"))}`,
      srun: 'while [[ "$1" == --* ]]; do shift; done\ntrap "echo srun-got-TERM >> $PWD/srun.log" TERM\n"$@" &\nwait $!; wait $!',
      scancel: `echo "$@" >> ${shellQuote(join(dir, "scancel.log"))}\nkill -TERM "$(cat ${shellQuote(join(dir, "pid.0"))})"`,
    });
    const s = spec({ command: [process.execPath, "-e", RUN, dir], tasksPerNode: 2 }, dir);
    writeFileSync(s.scriptFile, sbatchScript({}, s));
    const child = spawn("bash", [s.scriptFile], { cwd: dir, env: withPath(bin, { SLURM_JOB_ID: "79" }), stdio: "ignore" });
    await waitForFile(join(dir, "pid.0"), 15_000, "the run");
    child.kill("SIGUSR1");
    child.kill("SIGUSR1");
    expect(await exited(child, 15_000)).toBe(3);
    expect(readFileSync(join(dir, "scancel.log"), "utf8")).toBe("--signal=TERM 79\n");
    expect(readFileSync(join(dir, "log.0"), "utf8")).toBe("started restart=none\nTERM 1\ncheckpoint\n");
    expect(existsSync(join(dir, "srun.log"))).toBe(false);
    expect(readFileSync(join(dir, "scontrol.log"), "utf8")).toBe("requeue 79\n");
  });
});

// Captured from slurm-wlm 22.05.8 (squeue -h -o "%i|%T|%r" -j …; scontrol show job -o ID), shortened.
const SQUEUE = `3|PENDING|DependencyNeverSatisfied
4|PENDING|Dependency
5|PENDING|PartitionConfig
7|COMPLETING|None
2|RUNNING|None
`;
const SCONTROL_FAILED =
  "JobId=1 JobName=a name|x UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901759 Nice=0 Account=(null) QOS=(null) JobState=FAILED Reason=NonZeroExitCode Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0 RunTime=00:00:00 TimeLimit=365-00:00:00 TimeMin=N/A SubmitTime=2026-12-03T15:28:32 EligibleTime=2026-12-03T15:28:32 AccrueTime=2026-12-03T15:28:32 StartTime=2026-12-03T15:28:34 EndTime=2026-12-03T15:28:34 Deadline=N/A SuspendTime=None SecsPreSuspend=0 LastSchedEval=2026-12-03T15:28:34 Scheduler=Backfill Partition=debug AllocNode:Sid=localhost:5301 ReqNodeList=(null) ExcNodeList=(null) NodeList=vm BatchHost=vm NumNodes=1 NumCPUs=1 NumTasks=1 CPUs/Task=1 ReqB:S:C:T=0:0:*:* TRES=cpu=1,node=1,billing=1 Socks/Node=* NtasksPerN:B:S:C=0:0:*:* CoreSpec=* MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0 Features=(null) DelayBoot=00:00:00 OverSubscribe=OK Contiguous=0 Licenses=(null) Network=(null) Command=(null) WorkDir=/tmp StdErr=/tmp/o1.txt StdIn=/dev/null StdOut=/tmp/o1.txt Power= \n";
const SCONTROL_CANCELLED =
  "JobId=2 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901758 Nice=0 Account=(null) QOS=(null) JobState=CANCELLED Reason=None Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15 RunTime=00:00:02 TimeLimit=365-00:00:00 TimeMin=N/A SubmitTime=2026-12-03T15:28:32 Partition=debug StdOut=/tmp/o2.txt Power= \n";
const SCONTROL_NEVER =
  "JobId=3 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901757 Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=DependencyNeverSatisfied Dependency=afterok:1(failed) Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-03T15:28:32 EligibleTime=Unknown Partition=debug Power= \n";
const SCONTROL_REQUEUED =
  "JobId=7 JobName=wrap UserId=root(0) GroupId=root(0) MCS_label=N/A Priority=4294901753 Nice=0 Account=(null) QOS=(null) JobState=PENDING Reason=BeginTime Dependency=(null) Requeue=1 Restarts=1 BatchFlag=1 Reboot=0 ExitCode=0:0 RunTime=00:00:00 TimeLimit=UNLIMITED TimeMin=N/A SubmitTime=2026-12-03T15:28:39 EligibleTime=2026-12-03T15:30:40 Partition=debug Power= \n";

describe("parsing squeue and scontrol", () => {
  it("reads squeue's lines", () => {
    const jobs = parseSqueue(SQUEUE);
    expect([...jobs.keys()]).toEqual(["3", "4", "5", "7", "2"]);
    expect(jobs.get("3")).toEqual({ id: "3", state: "pending", slurmState: "PENDING", reason: "DependencyNeverSatisfied" });
    expect(jobs.get("7")).toEqual({ id: "7", state: "completing", slurmState: "COMPLETING" });
    expect(jobs.get("2")).toEqual({ id: "2", state: "running", slurmState: "RUNNING" });
    expect(parseSqueue("")).toEqual(new Map());
  });

  it("reads scontrol show job: state, reason, exit status, signal, restarts", () => {
    expect(parseScontrolJob(SCONTROL_FAILED)).toEqual({ id: "1", state: "failed", slurmState: "FAILED", reason: "NonZeroExitCode", exitCode: 3, restarts: 0 });
    expect(parseScontrolJob(SCONTROL_CANCELLED)).toEqual({ id: "2", state: "cancelled", slurmState: "CANCELLED", exitCode: 0, signal: 15, restarts: 0 });
    expect(parseScontrolJob(SCONTROL_NEVER)).toEqual({ id: "3", state: "pending", slurmState: "PENDING", reason: "DependencyNeverSatisfied", restarts: 0 });
    expect(parseScontrolJob(SCONTROL_REQUEUED)).toEqual({ id: "7", state: "pending", slurmState: "PENDING", reason: "BeginTime", restarts: 1 });
    expect(parseScontrolJob("slurm_load_jobs error: Invalid job id specified\n")).toBeUndefined();
  });

  it("maps every SLURM state", () => {
    expect(slurmJobState("CANCELLED by 0")).toBe("cancelled");
    expect(slurmJobState("OUT_OF_MEMORY")).toBe("failed");
    expect(slurmJobState("NODE_FAIL")).toBe("failed");
    expect(slurmJobState("TIMEOUT")).toBe("timeout");
    expect(slurmJobState("PREEMPTED")).toBe("preempted");
    expect(slurmJobState("REQUEUED")).toBe("requeued");
    expect(slurmJobState("SUSPENDED")).toBe("suspended");
    expect(slurmJobState("CONFIGURING")).toBe("pending");
    expect(slurmJobState("SOMETHING_NEW")).toBe("unknown");
    expect([...SLURM_FINAL_STATES].sort()).toEqual(["cancelled", "completed", "failed", "preempted", "timeout"]);
  });

  it("queryJobs asks squeue, then scontrol for the jobs squeue no longer shows; unknown ids are absent (fakes)", async () => {
    const dir = mkdtempSync(join(scratch, "query-"));
    const bin = fakeBin({
      squeue: `echo "$@" >> ${shellQuote(join(dir, "calls"))}\nprintf '%s' ${shellQuote(SQUEUE)}`,
      scontrol: [
        `echo "$@" >> ${shellQuote(join(dir, "calls"))}`,
        `case "$4" in 1) printf '%s' ${shellQuote(SCONTROL_FAILED)};; *) echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1;; esac`,
      ].join("\n"),
    });
    const jobs = await queryJobs(["2", "1", "99", "2"], withPath(bin));
    expect([...jobs.keys()].sort()).toEqual(["1", "2"]);
    expect(jobs.get("1")?.exitCode).toBe(3);
    expect(jobs.get("2")?.state).toBe("running");
    expect(readFileSync(join(dir, "calls"), "utf8").split("\n").filter((l) => l !== "").sort()).toEqual([
      "-h -o %i|%T|%r -j 2,1,99",
      "show job -o 1",
      "show job -o 99",
    ]);
    expect(await queryJobs([], withPath(bin))).toEqual(new Map());
    await expect(queryJobs(["1,2"], withPath(bin))).rejects.toThrow(/not a SLURM job id/);
  });
});

describe("running the SLURM commands", () => {
  it("without sbatch on PATH, names the SlurmLauncher and what to install", async () => {
    const empty = mkdtempSync(join(scratch, "empty-"));
    const error = await submitBatch(join(scratch, "x.sh"), { ...process.env, PATH: empty }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SlurmError);
    expect((error as SlurmError).code).toBe("ERR_SLURM");
    expect((error as SlurmError).message).toMatch(/SlurmLauncher: cannot run "sbatch": it is not on PATH.*slurm-wlm.*PATH/);
    await expect(queryJobs(["1"], { ...process.env, PATH: empty })).rejects.toThrow(/"squeue"/);
    await expect(cancelJob("1", { ...process.env, PATH: empty })).rejects.toThrow(/"scancel"/);
  });

  it("returns sbatch's id without the cluster name, and carries sbatch's own message when it refuses (fakes)", async () => {
    const ok = fakeBin({ sbatch: 'echo "4242;cluster1"' });
    expect(await submitBatch("job.sh", withPath(ok))).toBe("4242");
    const refuses = fakeBin({ sbatch: 'echo "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified" >&2; exit 1' });
    const error = (await submitBatch("job.sh", withPath(refuses)).catch((e: unknown) => e)) as SlurmError;
    expect(error).toBeInstanceOf(SlurmError);
    expect(error.message).toContain("sbatch refused job.sh: sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified");
    expect(error.stderr).toContain("Invalid account");
    expect(error.command).toBe("sbatch");
  });

  it("cancelJob runs scancel, with --batch --signal for a signal (fakes)", async () => {
    const dir = mkdtempSync(join(scratch, "cancel-"));
    const bin = fakeBin({ scancel: `echo "$@" >> ${shellQuote(join(dir, "calls"))}` });
    await cancelJob("12", withPath(bin));
    await cancelJob("12", withPath(bin), "SIGUSR1");
    await cancelJob("12", withPath(bin), "TERM");
    expect(readFileSync(join(dir, "calls"), "utf8")).toBe("12\n--batch --signal=USR1 12\n--batch --signal=USR2 12\n");
    await expect(cancelJob("12", withPath(bin), "TERM; rm")).rejects.toThrow(/not a signal name/);
    await expect(cancelJob("-u", withPath(bin))).rejects.toThrow(SlurmError);
  });
});

const unavailable = slurmAvailable();
if (unavailable) console.log(`skipping the real SLURM cluster tests: ${unavailable}`);

describe.skipIf(unavailable !== undefined)("on a real one-node SLURM cluster", () => {
  let cluster: SlurmCluster;
  let dir: string;

  beforeAll(async () => {
    cluster = await startSlurmCluster();
    dir = mkdtempSync(join(scratch, "cluster-"));
    chmodSync(dir, 0o755);
    console.log(`SLURM cluster up in ${cluster.startSeconds.toFixed(2)} s (${cluster.cpus} CPUs)`);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  async function submit(options: SlurmOptions, overrides: Partial<SlurmJobSpec>): Promise<{ id: string; spec: SlurmJobSpec }> {
    const s = spec(overrides, dir);
    writeFileSync(s.scriptFile, sbatchScript(options, s));
    return { id: await submitBatch(s.scriptFile, cluster.env), spec: s };
  }

  /** Polls the job every 200 ms until `done` holds; gives up after `ms` with what was seen. */
  async function follow(id: string, done: (s: SlurmJobStatus) => boolean, ms: number, seen: SlurmJobStatus[] = []): Promise<SlurmJobStatus> {
    const deadline = Date.now() + ms;
    for (;;) {
      const status = (await queryJobs([id], cluster.env)).get(id);
      if (status && JSON.stringify(status) !== JSON.stringify(seen[seen.length - 1])) seen.push(status);
      if (status && done(status)) return status;
      if (Date.now() > deadline) {
        throw new Error(`SLURM job ${id} did not get there within ${ms / 1000} s; seen: ${seen.map((s) => `${s.slurmState}/${s.reason ?? ""}`).join(" → ")}\n${cluster.logs()}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  const final = (s: SlurmJobStatus) => SLURM_FINAL_STATES.has(s.state);

  it("runs a job that writes a file, followed to its end", async () => {
    const t0 = Date.now();
    const { id, spec: s } = await submit({ time: "5" }, { command: ["bash", "-c", 'echo "ran $SLURM_JOB_ID $XPM_NOTE" > ran.txt'], env: { XPM_NOTE: "it's here" } });
    await follow(id, (st) => st.state !== "pending", 20_000);
    const started = (Date.now() - t0) / 1000;
    const end = await follow(id, final, 20_000);
    console.log(`submit to start: ${started.toFixed(2)} s; submit to end: ${((Date.now() - t0) / 1000).toFixed(2)} s`);
    expect(end).toMatchObject({ id, state: "completed", exitCode: 0 });
    expect(readFileSync(join(dir, "ran.txt"), "utf8")).toBe(`ran ${id} it's here\n`);
    expect(readFileSync(s.stderr, "utf8")).toMatch(new RegExp(`^xpm-torch: SLURM job ${id} \\(restart 0\\) starts on `));
  });

  it("a failing job ends failed with its exit status", async () => {
    const { id } = await submit({}, { command: ["bash", "-c", "exit 4"] });
    expect(await follow(id, final, 20_000)).toMatchObject({ state: "failed", exitCode: 4 });
  });

  it("a job with afterOk waits for its parent, then runs; after a failed parent it never runs", async () => {
    const parent = await submit({}, { command: ["bash", "-c", "sleep 2; echo parent > parent.txt"] });
    const child = await submit({}, { command: ["bash", "-c", "cat parent.txt > child.txt"], afterOk: [parent.id] });
    const waiting = await follow(child.id, (s) => s.reason === "Dependency", 10_000);
    expect(waiting.state).toBe("pending");
    expect(await follow(child.id, final, 30_000)).toMatchObject({ state: "completed", exitCode: 0 });
    expect(readFileSync(join(dir, "child.txt"), "utf8")).toBe("parent\n");

    const failing = await submit({}, { command: ["bash", "-c", "exit 1"] });
    const orphan = await submit({}, { command: ["touch", "orphan.txt"], afterOk: [failing.id] });
    await follow(failing.id, final, 20_000);
    expect(await follow(orphan.id, (s) => s.reason === "DependencyNeverSatisfied", 20_000)).toMatchObject({ state: "pending" });
    await cancelJob(orphan.id, cluster.env);
    expect(await follow(orphan.id, final, 20_000)).toMatchObject({ state: "cancelled" });
    expect(existsSync(join(dir, "orphan.txt"))).toBe(false);
  });

  it("cancelJob ends a running job; its command gets SIGTERM first", async () => {
    const { id } = await submit({}, { command: ["bash", "-c", "trap 'echo term > cancelled.txt; exit 0' TERM; echo up > up.txt; while :; do sleep 0.1; done"] });
    await waitForFile(join(dir, "up.txt"), 20_000, `SLURM job ${id}`);
    await cancelJob(id, cluster.env);
    expect(await follow(id, final, 20_000)).toMatchObject({ state: "cancelled" });
    expect(readFileSync(join(dir, "cancelled.txt"), "utf8")).toBe("term\n");
    await cancelJob(id, cluster.env); // ended already: no error
  });

  it("cancelJob with TERM: the run gets SIGTERM once, checkpoints and the job ends with its status, not requeued", async () => {
    const work = mkdtempSync(join(dir, "interrupt-"));
    const { id } = await submit({}, { command: [process.execPath, "-e", RUN, work] });
    await waitForFile(join(work, "pid.0"), 20_000, `SLURM job ${id}`);
    await cancelJob(id, cluster.env, "TERM");
    expect(await follow(id, final, 20_000)).toMatchObject({ state: "failed", exitCode: 3, restarts: 0 });
    expect(readFileSync(join(work, "log.0"), "utf8")).toBe("started restart=none\nTERM 1\ncheckpoint\n");
  });

  it("an sbatch refusal gives a SlurmError with SLURM's message", async () => {
    const error = (await submit({ partition: "no-such-partition" }, {}).catch((e: unknown) => e)) as SlurmError;
    expect(error).toBeInstanceOf(SlurmError);
    expect(error.message).toMatch(/sbatch refused .*invalid partition specified: no-such-partition.*Invalid partition name specified/s);
  });

  it("USR1 → SIGTERM → requeue: the run writes its checkpoint, the job runs again and appends to its output", async () => {
    const work = mkdtempSync(join(dir, "requeue-"));
    const { id, spec: s } = await submit({}, { command: [process.execPath, "-e", RUN, work] });
    await waitForFile(join(work, "pid.0"), 20_000, `SLURM job ${id}`);
    await cancelJob(id, cluster.env, "USR1");
    const seen: SlurmJobStatus[] = [];
    const end = await follow(id, final, 45_000, seen);
    expect(end).toMatchObject({ state: "completed", exitCode: 0, restarts: 1 });
    expect(seen.map((x) => x.reason)).toContain("BeginTime");
    expect(readFileSync(join(work, "log.0"), "utf8")).toBe("started restart=none\nTERM 1\ncheckpoint\nresumed\n");
    const stderr = readFileSync(s.stderr, "utf8");
    expect(stderr).toMatch(/\(restart 0\) starts[\s\S]*SIGUSR1[\s\S]*exit status 3\); requeueing[\s\S]*\(restart 1\) starts/);
  });

  it("the time limit's --signal (1 minute, signalSeconds 55) leads to the same checkpoint and requeue", async () => {
    const work = mkdtempSync(join(dir, "timelimit-"));
    const { id } = await submit({ time: "1" }, { command: [process.execPath, "-e", RUN, work], signalSeconds: 55 });
    await waitForFile(join(work, "pid.0"), 20_000, `SLURM job ${id}`);
    const t0 = Date.now();
    // slurmctld checks time limits every 30 s or so: USR1 comes 5 to about 35 s after the start.
    await waitForFile(join(work, "done.0"), 50_000, `the checkpoint of SLURM job ${id} (USR1 from --signal)`);
    console.log(`--signal=B:USR1@55 of a 1-minute job came ${((Date.now() - t0) / 1000).toFixed(1)} s after its start`);
    expect(await follow(id, final, 30_000)).toMatchObject({ state: "completed", exitCode: 0, restarts: 1 });
    expect(readFileSync(join(work, "log.0"), "utf8")).toBe("started restart=none\nTERM 1\ncheckpoint\nresumed\n");
  });

  it("USR1 with two tasks (srun): every rank gets SIGTERM once, then the job is requeued", async () => {
    const work = mkdtempSync(join(dir, "ranks-"));
    const { id } = await submit({}, { command: [process.execPath, "-e", RUN, work], tasksPerNode: 2 });
    await waitForFile(join(work, "pid.0"), 20_000, `SLURM job ${id}`);
    await waitForFile(join(work, "pid.1"), 20_000, `SLURM job ${id}`);
    await cancelJob(id, cluster.env, "USR1");
    expect(await follow(id, final, 45_000)).toMatchObject({ state: "completed", exitCode: 0, restarts: 1 });
    for (const rank of ["0", "1"]) expect(readFileSync(join(work, `log.${rank}`), "utf8")).toBe("started restart=none\nTERM 1\ncheckpoint\nresumed\n");
  });
});
