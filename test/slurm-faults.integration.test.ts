// What a cluster does to a plan, on a real one-node SLURM (started here, stopped by its pids):
// the plan stopped while it waits on SLURM jobs, a dependency cancelled by hand while its
// dependent is queued with afterok, slurmctld stopped and started again during a plan, and a
// controller restarted without its state. The same faults, played in memory, are in
// scheduler-slurm-faults.test.ts.
import { execFileSync, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { ExperimentError } from "../ts/experiment/errors.js";
import { type Experiment, type JobHandle, experiment } from "../ts/experiment/experiment.js";
import { SlurmLauncher } from "../ts/experiment/launchers.js";
import { plannedLoaders } from "../ts/experiment/outputs.js";
import { jobOf, readLockHolder } from "../ts/workspace/job.js";
import { packageIndexUrl } from "./helpers/cli.js";
import { finetuneFrom, launchesOf, smallLearner, trainingStarted } from "./helpers/experiments.js";
import { repoRoot, userEnv } from "./helpers/node.js";
import { type SlurmCluster, slurmAvailable, startSlurmCluster } from "./helpers/slurm-cluster.js";
import { waitFor } from "./helpers/wait.js";

const unavailable = slurmAvailable();
if (unavailable) console.warn(`slurm-faults.integration.test.ts skipped: ${unavailable}`);

const TIMINGS = { XPM_TORCH_SLURM_POLL_MS: "250", XPM_TORCH_SLURM_LOST_GRACE_S: "3" };

/** The SLURM ids of the jobs squeue lists, with their state and reason. */
function squeue(cluster: SlurmCluster): Map<string, string> {
  const out = execFileSync("squeue", ["-h", "-o", "%i|%T|%r"], { env: cluster.env, encoding: "utf8" });
  return new Map(
    out
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => {
        const [id, state, reason] = l.trim().split("|");
        return [id!, `${state} ${reason}`];
      }),
  );
}

const slurmIdsOf = (jobDir: string): string[] => launchesOf(jobDir).map((p) => p.id!);

describe.skipIf(unavailable !== undefined)("faults on a real SLURM cluster", () => {
  let cluster: SlurmCluster;
  const saved = { ...process.env };
  beforeAll(async () => {
    cluster = await startSlurmCluster({ killWait: 10 });
    Object.assign(process.env, { SLURM_CONF: cluster.env.SLURM_CONF, ...TIMINGS });
  });
  afterAll(async () => {
    process.env = saved;
    await cluster?.stop();
  });

  it("a plan told SIGTERM while it awaits SLURM jobs ends within seconds and leaves them queued; after the first stage is cancelled by hand, a re-run queues the second behind its new run", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-slurm-sigterm-"));
    const first = smallLearner(4e-3, 0, 2, 4000);
    // The loader the plan module's handle gives: the same second stage.
    const second = finetuneFrom(plannedLoaders(first, jobOf(first, workspace)).learned);
    const [firstDir, secondDir] = [first, second].map((l) => jobOf(l, workspace).dir) as [string, string];
    const planFile = join(workspace, "plan.mts");
    writeFileSync(
      planFile,
      `import { SlurmLauncher, experiment } from ${JSON.stringify(packageIndexUrl)};
import { finetuneFrom, smallLearner } from ${JSON.stringify(join(repoRoot, "test", "helpers", "experiments.ts"))};
await experiment("sigterm", async (xp) => {
  const first = xp.submit(smallLearner(4e-3, 0, 2, 4000));
  await xp.submit(finetuneFrom(first.loaders.learned)).result();
}, { workspace: ${JSON.stringify(workspace)}, launcher: SlurmLauncher.C({ time: "10" }) });
`,
    );
    const child = spawn(process.execPath, ["--import", "tsx", planFile], { cwd: repoRoot, env: userEnv({ SLURM_CONF: cluster.env.SLURM_CONF!, ...TIMINGS }), stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
    await waitFor(() => slurmIdsOf(secondDir).length === 1, "the second stage queued", 60_000, 100);
    await trainingStarted(firstDir);
    const signalled = Date.now();
    child.kill("SIGTERM");
    const code = await exited;
    expect(Date.now() - signalled, stderr).toBeLessThan(15_000);
    expect(code, stderr).not.toBe(0);
    expect(stderr).toMatch(/ExperimentInterruptedError|was interrupted/);
    const [firstId, secondId] = [slurmIdsOf(firstDir)[0]!, slurmIdsOf(secondDir)[0]!];
    const queued = squeue(cluster);
    expect(queued.get(firstId), cluster.logs()).toMatch(/^RUNNING/);
    expect(queued.get(secondId)).toMatch(/^PENDING/);

    // Cancelled as an administrator or a preemption would: the second stage can never start.
    execFileSync("scancel", [firstId], { env: cluster.env });
    await waitFor(() => squeue(cluster).get(secondId)?.includes("DependencyNeverSatisfied") ?? false, "SLURM to see the dependency never satisfied", 60_000, 250);

    const handles: JobHandle[] = [];
    const again = await experiment(
      "sigterm",
      (xp: Experiment) => {
        const a = xp.submit(smallLearner(4e-3, 0, 2, 4000));
        handles.push(a, xp.submit(finetuneFrom(a.loaders.learned)));
      },
      { workspace, launcher: SlurmLauncher.C({ time: "10" }), log: null, handleSignals: false },
    );
    expect(again.jobs.map((j) => j.state)).toEqual(["done", "done"]);
    expect(slurmIdsOf(firstDir)).toHaveLength(2);
    expect(slurmIdsOf(secondDir)).toHaveLength(2);
    expect((await handles[0]!.result()).resumed_from).toMatch(/checkpoints/);
  });

  it("goes on when slurmctld comes back after being stopped during the plan", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-slurm-down-"));
    let handle: JobHandle | undefined;
    const plan = experiment("down", (xp) => void (handle = xp.submit(smallLearner(5e-3, 0, 2, 1500))), {
      workspace,
      launcher: SlurmLauncher.C({ time: "10" }),
      log: null,
      handleSignals: false,
    });
    await waitFor(() => handle?.state === "running", "the job running", 60_000, 100);
    await cluster.stopController();
    await new Promise((wake) => setTimeout(wake, 3000));
    await cluster.startController();
    const summary = await plan;
    expect(summary.jobs[0]!.state, cluster.logs()).toBe("done");
    expect(launchesOf(handle!.jobDir)).toHaveLength(1);
  });

  it("ends a job the controller forgot (restarted without its state) in error after a bounded wait; a re-run resumes it", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-slurm-forgot-"));
    let handle: JobHandle | undefined;
    const learner = smallLearner(6e-3, 0, 2, 4000);
    const plan = experiment("forgot", (xp) => void (handle = xp.submit(learner)), { workspace, launcher: SlurmLauncher.C({ time: "10" }), log: null, handleSignals: false });
    await waitFor(() => handle?.state === "running", "the job running", 60_000, 100);
    await trainingStarted(handle!.jobDir);
    // Its node stops answering: the run is frozen, so that it cannot end on its own meanwhile.
    const holder = readLockHolder(jobOf(learner, workspace).lockFile)!;
    process.kill(holder.pid, "SIGSTOP");
    await cluster.stopController();
    await cluster.startController({ clearState: true });
    const error = await plan.catch((e: unknown) => e);
    process.kill(holder.pid, "SIGKILL"); // the node is lost for good
    expect(error, cluster.logs()).toBeInstanceOf(ExperimentError);
    expect((error as ExperimentError).failures[0]!.message).toMatch(/no longer known to SLURM/);
    // Its lock names a SLURM job that no longer runs: the re-run drops it and runs the job again.
    expect(holder.slurmJob).toBe(slurmIdsOf(handle!.jobDir)[0]);
    const again = await experiment("forgot", (xp) => void xp.submit(learner), { workspace, launcher: SlurmLauncher.C({ time: "10" }), log: null, handleSignals: false });
    expect(again.jobs[0]!.state, cluster.logs()).toBe("done");
    expect(launchesOf(handle!.jobDir)).toHaveLength(2);
  });
});
