// A done job keeps its models and drops the training state of its epoch checkpoints, which only
// resuming needs (issue #41, item 7): two steps of MiniLM left 363 MB, 182 MB of them optimizer
// moments kept after the job was done.
import { existsSync, mkdtempSync, readdirSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";

import { describe, expect, it } from "vitest";

import { Learner, demoLearner, identifierOf, learn, type LearnResult } from "../ts/index.js";
import { jobSummary } from "../ts/job-summary.js";
import { readJob } from "../ts/report/job.js";

const workspace = () => mkdtempSync(join(tmpdir(), "xpm-done-disk-"));

/** The files under `dir`, relative to it, sorted. */
function filesUnder(dir: string): string[] {
  const walk = (d: string): string[] =>
    readdirSync(d).flatMap((name) => (statSync(join(d, name)).isDirectory() ? walk(join(d, name)) : [join(d, name)]));
  return walk(dir).map((f) => relative(dir, f)).sort();
}

/** The epoch checkpoint directories of a job. */
function epochDirs(result: LearnResult): string[] {
  const root = join(result.jobDir, "checkpoints");
  return readdirSync(root).filter((d) => /^epoch-\d{8}$/.test(d)).map((d) => join(root, d));
}

/** Every model file the result names: the learned model, the checkpoints', the listeners' bests and the loaders'. */
function namedModels(result: LearnResult): string[] {
  const bests = Object.values(result.listeners).flatMap((metrics) => Object.values(metrics).flatMap((b) => (b.model ? [b.model] : [])));
  const loaders = [result.loaders.learned_model, ...Object.values(result.loaders.checkpoints), ...Object.values(result.loaders.listeners).flatMap((l) => Object.values(l))];
  return [result.learned_model!, ...Object.values(result.checkpoints), ...bests, ...loaders.map((l) => l!.path)];
}

const SLIM = ["MANIFEST.json", "final-state.json", "info.json", join("model", "model.safetensors")];
const FULL = ["MANIFEST.json", "generators.safetensors", "info.json", join("model", "model.safetensors"), "optimizer.safetensors", "state.json"];

describe("a done job's checkpoints", () => {
  it("keep every model the result names, drop the training state and say so in the summary", async () => {
    const config = demoLearner({ max_epochs: 3, steps_per_epoch: 20 });
    const ws = workspace();
    const result = await learn(config, { workspace: ws, quiet: true });
    expect(Object.keys(result.checkpoints).length).toBeGreaterThan(0);
    for (const dir of epochDirs(result)) expect(filesUnder(dir), dir).toEqual(SLIM);
    for (const model of namedModels(result)) expect(existsSync(model), model).toBe(true);
    expect(filesUnder(join(result.jobDir, "checkpoints", "last"))).toEqual(["MANIFEST.json", "info.json", join("model", "model.safetensors")]);
    const epochs = Object.keys(result.checkpoints).join(", ");
    const dropped = jobSummary(result).filter((l) => l.includes("dropped"));
    expect(dropped).toHaveLength(1);
    expect(dropped[0]).toMatch(
      new RegExp(`^  dropped +the training state of epochs? ${epochs} \\(optimizer moments, sampler positions, random generators: \\d+ kB\\), which only resuming needs; keep_training_state: true keeps it$`),
    );
    // Running it again returns the stored result, whose files are all there; the job reads as done.
    const again = await learn(config, { workspace: ws, quiet: true });
    expect(again.cached).toBe(true);
    for (const model of namedModels(again)) expect(existsSync(model), model).toBe(true);
    expect(jobSummary(again).filter((l) => l.includes("dropped"))).toEqual(dropped);
    expect(readJob(result.jobDir).state).toBe("done");
  });

  it("keep their training state with keep_training_state: true, under the same identifier", async () => {
    const plain = demoLearner({ max_epochs: 2, steps_per_epoch: 20 });
    const config = Learner.C({ ...plain, keep_training_state: true });
    expect(identifierOf(config)).toBe(identifierOf(plain));
    const result = await learn(config, { workspace: workspace(), quiet: true });
    for (const dir of epochDirs(result)) expect(filesUnder(dir), dir).toEqual(FULL);
    expect(jobSummary(result).filter((l) => l.includes("dropped"))).toEqual([]);
  });

  it("keep their training state while the job is unfinished, and drop it once the resumed run is done", async () => {
    // Long enough epochs for the abort to land inside the second.
    const config = demoLearner({ max_epochs: 3, steps_per_epoch: 1000, seed: 3 });
    const ws = workspace();
    const abort = new AbortController();
    const first = learn(config, { workspace: ws, quiet: true, handleSignals: false, signal: abort.signal, onEpoch: (e) => e.epoch === 1 && abort.abort() });
    await expect(first).rejects.toThrow(/interrupted/);
    const checkpoints = readdirSync(ws, { recursive: true, encoding: "utf8" }).filter((p) => /checkpoints[/\\](epoch-\d{8}|interrupted)$/.test(p));
    expect(checkpoints.length).toBeGreaterThan(0);
    for (const dir of checkpoints) expect(filesUnder(join(ws, dir)), dir).toEqual(FULL);
    const resumed = await learn(config, { workspace: ws, quiet: true });
    expect(resumed.resumed_from).toMatch(/checkpoints[/\\]interrupted$/);
    for (const dir of epochDirs(resumed)) expect(filesUnder(dir), dir).toEqual(SLIM);
    for (const model of namedModels(resumed)) expect(existsSync(model), model).toBe(true);
  });
});
