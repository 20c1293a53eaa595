// An experiment on a real SLURM cluster of one node (started here, stopped by its pids): a plan of
// five jobs with a dependency and a 2-rank data-parallel job; one job is cancelled mid-run with
// `xpm-torch jobs kill`, and running the plan again resumes it while no finished job runs twice.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runCli } from "../ts/cli/main.js";
import { FabricConfiguration } from "../ts/config/classes/configuration.js";
import { Learner } from "../ts/config/classes/learner.js";
import { ExperimentError } from "../ts/experiment/errors.js";
import { type Experiment, type JobHandle, experiment } from "../ts/experiment/experiment.js";
import { SlurmLauncher } from "../ts/experiment/launchers.js";
import { SlurmError, cancelJob } from "../ts/experiment/slurm.js";
import { finetuneFrom, launchesOf, smallLearner, trainingStarted } from "./helpers/experiments.js";
import { type SlurmCluster, slurmAvailable, startSlurmCluster } from "./helpers/slurm-cluster.js";
import { waitFor } from "./helpers/wait.js";

const unavailable = slurmAvailable();
if (unavailable) console.warn(`slurm-experiment.integration.test.ts skipped: ${unavailable}`);

const ddp = () => Learner.C({ ...smallLearner(7e-3, 0, 2, 20), fabric_config: FabricConfiguration.C({ strategy: "ddp", devices: "2", accelerator: "cpu" }) });

describe.skipIf(unavailable !== undefined)("experiments on a real SLURM cluster", () => {
  let cluster: SlurmCluster;
  const saved = { ...process.env };
  beforeAll(async () => {
    cluster = await startSlurmCluster({ killWait: 20 });
    // The launcher runs sbatch, squeue and scancel with this process's environment.
    Object.assign(process.env, { SLURM_CONF: cluster.env.SLURM_CONF, XPM_TORCH_SLURM_POLL_MS: "250" });
  });
  afterAll(async () => {
    process.env = saved;
    await cluster?.stop();
  });

  it("runs a plan with a dependency and a 2-rank job; a job cancelled mid-run resumes when the plan runs again", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-slurm-xp-"));
    const launcher = SlurmLauncher.C({ time: "10", cpus_per_task: 1 });
    const handles: JobHandle[] = [];
    const plan = (xp: Experiment) => {
      const sweep = [1e-2, 2e-2].map((lr) => xp.submit(smallLearner(lr, 0, 2, 20), { tags: { lr: String(lr) } }));
      const stage2 = xp.submit(finetuneFrom(sweep[0]!.loaders.best("val", "ndcg@10")), { tags: { stage: "2" } });
      const ranks = xp.submit(ddp(), { tags: { ranks: "2" } });
      const long = xp.submit(smallLearner(3e-3, 0, 2, 6000), { tags: { long: "yes" } });
      handles.splice(0, handles.length, ...sweep, stage2, ranks, long);
    };
    const options = { workspace, launcher, log: null, handleSignals: false };

    const first = experiment("on-slurm", plan, options);
    const long = () => handles[4]!;
    await waitFor(() => long()?.state === "running", "the long job running", 120_000, 100);
    // Once it trains, cancelled as a user would.
    await trainingStarted(long().jobDir);
    const out: string[] = [];
    expect(await runCli(["jobs", "kill", long().identifier.slice(0, 12), "--workspace", workspace], { out: (l) => out.push(l), err: (l) => out.push(l) })).toBe(0);
    expect(out.join("\n")).toMatch(/cancelled SLURM job \d+/);
    const error = await first.catch((e: unknown) => e);
    expect(error, cluster.logs()).toBeInstanceOf(ExperimentError);
    expect((error as ExperimentError).failures.map((f) => f.jobDir), (error as Error).message + (error as ExperimentError).failures.map((f) => f.message).join("\n")).toEqual([long().jobDir]);
    expect(handles.slice(0, 4).map((h) => h.state)).toEqual(["done", "done", "done", "done"]);
    // The stage 2 job was queued with afterok on its dependency.
    expect(readFileSync(join(handles[2]!.jobDir, "learner.slurm.sh"), "utf8")).toMatch(/#SBATCH --dependency=afterok:\d+/);
    expect(readFileSync(join(handles[3]!.jobDir, "learner.slurm.sh"), "utf8")).toMatch(/srun .*--ntasks-per-node=2/);

    const again = await experiment("on-slurm", plan, options);
    expect(again.jobs.map((j) => j.state)).toEqual(["done", "done", "done", "done", "done"]);
    for (const handle of handles.slice(0, 4)) expect(launchesOf(handle.jobDir), handle.jobDir).toHaveLength(1);
    expect(launchesOf(long().jobDir)).toHaveLength(2);
    const result = await long().result();
    expect(result.resumed_from).toMatch(/checkpoints/);
    expect(result.epochs).toHaveLength(2);
  });

  it("follows a job told to checkpoint before its time limit: requeued, it resumes and ends done", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-slurm-requeue-"));
    let handle!: JobHandle;
    const run = experiment("requeued", (xp) => void (handle = xp.submit(smallLearner(6e-3, 0, 2, 5000))), {
      workspace,
      launcher: SlurmLauncher.C({ time: "10" }),
      log: null,
      handleSignals: false,
    });
    await waitFor(() => handle?.state === "running", "the job running", 120_000, 100);
    await trainingStarted(handle.jobDir);
    // What SLURM sends signal_seconds before the time limit, or on preemption.
    const id = JSON.parse(readFileSync(join(handle.jobDir, ".experimaestro", "launches.jsonl"), "utf8").trim()).process.id as string;
    await cancelJob(id, undefined, "USR1");
    const summary = await run;
    expect(summary.jobs[0]!.state).toBe("done");
    expect(launchesOf(handle.jobDir)).toHaveLength(1);
    const result = await handle.result();
    expect(result.resumed_from).toMatch(/checkpoints/);
    expect(readFileSync(join(handle.jobDir, "learner.err"), "utf8")).toMatch(/restart 1/);
  });

  it("gives sbatch's own refusal as the job's error", async () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-slurm-refused-"));
    const error = await experiment("refused", (xp) => void xp.submit(smallLearner(4e-2)), {
      workspace,
      launcher: SlurmLauncher.C({ partition: "no-such-partition" }),
      log: null,
      handleSignals: false,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExperimentError);
    expect((error as ExperimentError).failures[0]!.message).toMatch(/sbatch refused .*invalid partition/i);
  });
});

describe("the SlurmLauncher without SLURM", () => {
  it("refuses the plan when sbatch is not on the PATH, naming what to install", async () => {
    const saved = process.env.PATH;
    process.env.PATH = mkdtempSync(join(tmpdir(), "xpm-empty-path-"));
    try {
      const run = experiment("no-sbatch", (xp) => void xp.submit(smallLearner(5e-2)), {
        workspace: mkdtempSync(join(tmpdir(), "xpm-no-sbatch-")),
        launcher: SlurmLauncher.C({}),
        log: null,
        handleSignals: false,
      });
      await expect(run).rejects.toThrow(SlurmError);
      await expect(run).rejects.toThrow(/SlurmLauncher: cannot run "sbatch": it is not on PATH\. Install SLURM's client commands/);
    } finally {
      process.env.PATH = saved;
    }
  });
});
