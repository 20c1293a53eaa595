// experimaestro 2.7.0's own commands list what ts/workspace/xpm-records.ts writes, and a real
// experiment of ours (scripts/check-experimaestro.sh, which makes its Python environment when missing).
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { ExperimentError, HingeLoss, Learner, LetorDataset, LossTrainer, PairwiseSampler, experiment } from "../ts/index.js";
import { ExperimentRecords } from "../ts/workspace/xpm-records.js";
import { readJobStatus, writeJobStatus } from "../ts/workspace/status.js";
import { finetuneFrom, smallLearner } from "./helpers/experiments.js";
import { repoRoot } from "./helpers/node.js";

const script = join(repoRoot, "scripts", "check-experimaestro.sh");

/** Why experimaestro cannot run here (no python3 or pip, no package index), or undefined once its environment is ready. */
function unavailable(): string | undefined {
  const provision = spawnSync("bash", [script, "--provision"], { encoding: "utf8", timeout: 600_000 });
  if (provision.status === 0) return undefined;
  const why = provision.error ? String(provision.error) : provision.stderr.trim().split("\n").slice(-3).join(" / ");
  return `its Python environment could not be made: ${why || `exit ${provision.status}`}`;
}

const reason = unavailable();
if (reason) console.warn(`experimaestro-cli.test.ts skipped: ${reason}`);

const TASK = "xpm_torch.learner.learner";
const [A, B, C, D, E] = ["a", "b", "c", "d", "e"].map((c) => `${c}${"0123456789abcdef".repeat(4).slice(1)}`) as [string, string, string, string, string];

describe("experimaestro 2.7.0 reads our records", () => {
  it.skipIf(reason !== undefined)("lists our experiment's jobs with their states and tags", () => {
    const ws = mkdtempSync(join(tmpdir(), "xpm-experimaestro-"));
    const job = (identifier: string) => {
      const jobDir = join(ws, "jobs", TASK, identifier);
      mkdirSync(jobDir, { recursive: true });
      writeFileSync(join(jobDir, "params.json"), "{}");
      return { identifier, taskId: TASK, jobDir };
    };

    // An earlier run with another job: not the current one any more.
    const earlier = ExperimentRecords.open(ws, "cli-check", { now: new Date(2026, 0, 1, 10, 0, 0) });
    earlier.addJob({ ...job(E), tags: { model: "old" }, dependsOn: [] }, "done");
    earlier.finish("done");

    const xp = ExperimentRecords.open(ws, "cli-check");
    const [a, b, c, d] = [job(A), job(B), job(C), job(D)];
    xp.addJob({ ...a, tags: { model: "mlp", seed: 1 }, dependsOn: [] });
    xp.addJob({ ...b, tags: { model: "cnn" }, dependsOn: [] });
    xp.addJob({ ...c, tags: { model: "cnn-big" }, dependsOn: [B] });
    xp.addJob({ ...d, tags: { model: "rnn" }, dependsOn: [] });
    const here = { type: "local", pid: process.pid, host: hostname() };
    for (const j of [a, b, d]) {
      xp.jobState(j.identifier, "running");
      writeJobStatus(j, { state: "running", process: here });
    }
    writeFileSync(join(a.jobDir, "learner.done"), "");
    xp.jobState(A, "done");
    writeJobStatus(a, { state: "done", exitCode: 0 });
    writeFileSync(join(b.jobDir, "learner.failed"), JSON.stringify({ code: "ERR_TRAINING", message: "diverged", time: new Date().toISOString() }));
    xp.jobState(B, "error", "failed");
    writeJobStatus(b, { state: "error", failureReason: "failed", exitCode: 1 });
    xp.jobState(C, "error", "dependency");
    writeJobStatus(c, { state: "error", failureReason: "dependency" });

    const check = spawnSync(
      "bash",
      [script, ws, "cli-check", "4", `${A.slice(0, 8)}=DONE,model=mlp,seed=1`, `${B.slice(0, 8)}=FAIL:FAILED,model=cnn`, `${C.slice(0, 8)}=FAIL:DEPENDENCY,model=cnn-big`, `${D.slice(0, 8)}=RUNNING,model=rnn`],
      { encoding: "utf8", timeout: 110_000 },
    );
    expect(check.status, `${check.stdout}\n${check.stderr}`).toBe(0);
    expect(check.stdout).toContain("4 jobs listed by experimaestro as expected");

    // Its commands tidy the workspace as they start: our records still read the same.
    expect(readJobStatus(a.jobDir)).toMatchObject({ state: "done", exitCode: 0 });
    expect(readJobStatus(c.jobDir)).toMatchObject({ state: "error", failureReason: "dependency" });
    expect(readJobStatus(d.jobDir)).toMatchObject({ state: "running", process: here });
    expect(existsSync(join(d.jobDir, "learner.pid"))).toBe(true);
    xp.jobState(D, "done");
    xp.finish("done");
  });

  it.skipIf(reason !== undefined)("lists a real experiment of ours: done, error and dependency failed jobs with their tags", async () => {
    const ws = mkdtempSync(join(tmpdir(), "xpm-experimaestro-real-"));
    const broken = Learner.C({
      ...smallLearner(1e-2),
      trainer: LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: LetorDataset.C({ id: "none", path: join(ws, "none.txt") }) }), batch_size: 8, hooks: [HingeLoss.C({ margin: 1 })] }),
    });
    const ids: string[] = [];
    await experiment("real", (xp) => {
      ids.push(xp.submit(smallLearner(1e-2, 0, 1, 10), { tags: { model: "mlp" } }).identifier);
      const failing = xp.submit(broken, { tags: { model: "broken" } });
      ids.push(failing.identifier, xp.submit(finetuneFrom(failing.loaders.learned), { tags: { model: "second" } }).identifier);
    }, { workspace: ws, log: null, handleSignals: false }).catch((e: unknown) => expect(e).toBeInstanceOf(ExperimentError));
    const [done, failed, dependent] = ids.map((id) => id.slice(0, 8));
    const check = spawnSync("bash", [script, ws, "real", "3", `${done}=DONE,model=mlp`, `${failed}=FAIL:FAILED,model=broken`, `${dependent}=FAIL:DEPENDENCY,model=second`], {
      encoding: "utf8",
      timeout: 110_000,
    });
    expect(check.status, `${check.stdout}\n${check.stderr}`).toBe(0);
  });
});
