// The product as a new user gets it: the two packed tarballs installed into an empty project
// (no Rust, no compiler), a TypeScript script importing `learn`, and `npx xpm-torch demo`.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { beforeAll, describe, expect, it } from "vitest";

import { repoRoot, userEnv } from "./helpers/node.js";

const project = mkdtempSync(join(tmpdir(), "xpm-e2e-project-"));
const workspace = join(project, "ws");

function run(command: string, args: readonly string[], cwd: string, timeout = 300_000) {
  // The install must not need a compiler or cargo: hide them.
  const env = userEnv({ XPM_TORCH_WORKSPACE: workspace, CARGO: "/nonexistent/cargo", CC: "/nonexistent/cc", CXX: "/nonexistent/c++" });
  const r = spawnSync(command, [...args], { cwd, env, encoding: "utf8", timeout });
  return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error };
}

const TRAIN_SCRIPT = `import { existsSync } from "node:fs";
import { Adam, HingeLoss, Learner, LossTrainer, MlpScorer, PairwiseSampler, ParameterOptimizer, Random,
  RankingValidationListener, SyntheticLtrDataset, learn, type LearnResult } from "xpm-torch";

const data = (seed: number, num_queries: number) =>
  SyntheticLtrDataset.C({ signal_seed: 9, seed, num_queries, docs_per_query: 10, num_features: 8 });

const config = Learner.C({
  random: Random.C({ seed: 2 }),
  model: MlpScorer.C({ input_dim: 8, hidden_dims: [16] }),
  trainer: LossTrainer.C({ sampler: PairwiseSampler.C({ dataset: data(1, 60) }), batch_size: 32, hooks: [HingeLoss.C({ margin: 1 })] }),
  max_epochs: 2,
  steps_per_epoch: 30,
  optimizers: [ParameterOptimizer.C({ optimizer: Adam.C({ lr: 1e-2 }) })],
  listeners: [RankingValidationListener.C({ id: "val", dataset: data(2, 20), metrics: { "ndcg@10": true } })],
});

const result: LearnResult = await learn(config, { quiet: true });
console.log(JSON.stringify({ jobDir: result.jobDir, epochs: result.epochs.length, model: result.learned_model, exists: existsSync(result.learned_model ?? "") }));
`;

// What a user writes against the declarations: a validation listener's best, without casts.
const TYPES_SCRIPT = `import { type LearnResult, type BestCheckpoint, type HubModel } from "xpm-torch";

export function bestNdcg(result: LearnResult): number {
  const best: BestCheckpoint = result.listeners.val["ndcg@10"];
  return best.value;
}
export const commitOf = (model: HubModel): string => model.commit;
`;

describe("installed from the packed tarballs", () => {
  let tarballs: { root: string; platform: string };

  beforeAll(() => {
    const pack = run(process.execPath, [join(repoRoot, "scripts", "pack.mjs"), join(project, "tarballs")], repoRoot);
    expect(pack.status, pack.stderr).toBe(0);
    tarballs = JSON.parse(pack.stdout.trim().split("\n").pop()!) as typeof tarballs;
    writeFileSync(join(project, "package.json"), JSON.stringify({ name: "e2e-user", private: true, type: "module" }));
    const install = run("npm", ["install", "--no-audit", "--no-fund", tarballs.root, tarballs.platform], project);
    expect(install.status, install.stderr).toBe(0);
  }, 600_000);

  it("installs the addon from the platform package, and no build output", () => {
    const manifest = JSON.parse(readFileSync(join(project, "node_modules", "xpm-torch", "package.json"), "utf8")) as {
      optionalDependencies: Record<string, string>;
    };
    expect(manifest.optionalDependencies).toEqual({ "xpm-torch-linux-x64-gnu": "0.1.0" });
    expect(existsSync(join(project, "node_modules", "xpm-torch-linux-x64-gnu", "xpm-torch.linux-x64-gnu.node"))).toBe(true);
    // The CUDA library travels beside the addon; the core opens it only when CUDA is asked for.
    expect(existsSync(join(project, "node_modules", "xpm-torch-linux-x64-gnu", "libxpm_torch_cuda.so"))).toBe(true);
    expect(readdirSync(join(project, "node_modules", "xpm-torch")).filter((f) => f.endsWith(".node"))).toEqual([]);
    const doctor = run("npx", ["xpm-torch", "doctor"], project);
    expect(doctor.stdout).toMatch(/\[ok {2}\] addon +platform package: .*node_modules\/xpm-torch-linux-x64-gnu\//);
  });

  it("runs a TypeScript script that imports learn and trains a model", () => {
    writeFileSync(join(project, "train.ts"), TRAIN_SCRIPT);
    const r = run(process.execPath, ["--import", "tsx", "train.ts"], project);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!) as { jobDir: string; epochs: number; model: string; exists: boolean };
    expect(out.jobDir.startsWith(join(workspace, "jobs", "xpm_torch.learner.learner"))).toBe(true);
    expect(out.epochs).toBe(2);
    expect(out.exists).toBe(true);
    for (const file of ["params.json", "learner.done", ".experimaestro/result.json", "checkpoints/last/model/model.safetensors"]) {
      expect(existsSync(join(out.jobDir, file)), file).toBe(true);
    }
    expect(readdirSync(join(out.jobDir, "runs")).some((f) => f.includes("tfevents"))).toBe(true);
  });

  it("type-checks a script with tsc --strict in a project that has only typescript and xpm-torch", () => {
    const install = run("npm", ["install", "--no-audit", "--no-fund", "--save-dev", "typescript@5"], project);
    expect(install.status, install.stderr).toBe(0);
    const compilerOptions = { strict: true, target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", noEmit: true };
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["train.ts", "types.ts"] }));
    writeFileSync(join(project, "train.ts"), TRAIN_SCRIPT);
    writeFileSync(join(project, "types.ts"), TYPES_SCRIPT);
    const tsc = run(process.execPath, [join(project, "node_modules", "typescript", "bin", "tsc"), "-p", "."], project);
    expect(`${tsc.stdout}${tsc.stderr}`).toBe("");
    expect(tsc.status).toBe(0);
  });

  it("ships the sources its source maps name", () => {
    const dist = join(project, "node_modules", "xpm-torch", "dist");
    const maps = readdirSync(dist, { recursive: true }).map(String).filter((f) => f.endsWith(".js.map"));
    expect(maps.length).toBeGreaterThan(50);
    const missing = maps.flatMap((map) => {
      const { sources } = JSON.parse(readFileSync(join(dist, map), "utf8")) as { sources: string[] };
      return sources.map((source) => join(dirname(join(dist, map)), source)).filter((file) => !existsSync(file));
    });
    expect(missing).toEqual([]);
  });

  it("installs without an install-script warning once esbuild's (tsx's) script is denied, as the README says", () => {
    if (run("npm", ["install-scripts", "--help"], project).status !== 0) return; // npm before allowScripts: no warning to silence
    expect(readFileSync(join(repoRoot, "README.md"), "utf8")).toContain("npm install-scripts deny esbuild");
    const deny = run("npm", ["install-scripts", "deny", "esbuild"], project);
    expect(deny.status, deny.stderr).toBe(0);
    const install = run("npm", ["install", "--no-audit", "--no-fund"], project);
    expect(install.status, install.stderr).toBe(0);
    expect(install.stderr).not.toContain("allowScripts");
    const r = run(process.execPath, ["--import", "tsx", "-e", "console.log('tsx runs')"], project);
    expect(r.stdout.trim(), r.stderr).toBe("tsx runs");
  });

  it("runs `npx xpm-torch demo`, then reports and lists its job", () => {
    const demo = run("npx", ["xpm-torch", "demo"], project);
    expect(demo.status, demo.stderr).toBe(0);
    expect(demo.stdout).toMatch(/^epoch {2}8 {2}loss /m);
    const jobDir = /job directory {3}(\S+)/.exec(demo.stdout)?.[1];
    expect(jobDir).toBeDefined();
    const report = run("npx", ["xpm-torch", "report", jobDir!], project);
    expect(report.status, report.stderr).toBe(0);
    expect(readFileSync(join(jobDir!, "report", "curves.svg"), "utf8")).toContain('data-tag="heldout/pairwise_accuracy"');
    const jobs = run("npx", ["xpm-torch", "jobs"], project);
    expect(jobs.stdout).toMatch(/done +8 +.*heldout\/pairwise_accuracy=0\.9\d*@\d/);
  });
});
