// Which workspace a command, learn() or experiment() uses when none is named: the nearest
// `xpm-workspace` folder from the current folder upward (as git finds `.git`); and what
// `xpm-torch jobs` shows of it.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { afterEach, describe, expect, it } from "vitest";

import { jobsTable } from "../ts/cli/jobs.js";
import { runCli } from "../ts/cli/main.js";
import { runExperiment } from "../ts/experiment/experiment.js";
import type { JobInfo } from "../ts/report/job.js";
import { defaultWorkspace, jobOf, prepareJobDirectory } from "../ts/workspace/job.js";
import { listExperiments } from "../ts/workspace/xpm-records.js";
import { learnerModule } from "./helpers/cli.js";
import { smallLearner } from "./helpers/experiments.js";
import { FakeLocal } from "./helpers/fake-local.js";
import { repoRoot, userEnv } from "./helpers/node.js";
import { waitFor } from "./helpers/wait.js";

/** A project folder holding an `xpm-workspace`, and a folder two levels below it. */
function project(): { root: string; workspace: string; sub: string } {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "xpm-project-")));
  const workspace = join(root, "xpm-workspace");
  const sub = join(root, "scripts", "sweeps");
  mkdirSync(workspace);
  mkdirSync(sub, { recursive: true });
  return { root, workspace, sub };
}

describe("the default workspace", () => {
  it("is XPM_TORCH_WORKSPACE, else the nearest xpm-workspace folder upward, else ./xpm-workspace", () => {
    const { root, workspace, sub } = project();
    expect(defaultWorkspace({}, sub)).toBe(workspace);
    expect(defaultWorkspace({}, root)).toBe(workspace);
    expect(defaultWorkspace({ XPM_TORCH_WORKSPACE: "elsewhere" }, sub)).toBe(join(sub, "elsewhere"));
    // The nearest wins; a file of that name is no workspace.
    mkdirSync(join(root, "scripts", "xpm-workspace"));
    expect(defaultWorkspace({}, sub)).toBe(join(root, "scripts", "xpm-workspace"));
    writeFileSync(join(sub, "xpm-workspace"), "");
    expect(defaultWorkspace({}, sub)).toBe(join(root, "scripts", "xpm-workspace"));
    // None above: the current folder's, created when first used.
    const lone = realpathSync(mkdtempSync(join(tmpdir(), "xpm-lone-")));
    expect(defaultWorkspace({}, lone)).toBe(join(lone, "xpm-workspace"));
  });
});

describe("from a subfolder of a project", () => {
  const cwd = process.cwd();
  const env = process.env.XPM_TORCH_WORKSPACE;
  afterEach(() => {
    process.chdir(cwd);
    if (env === undefined) delete process.env.XPM_TORCH_WORKSPACE;
    else process.env.XPM_TORCH_WORKSPACE = env;
  });

  it("xpm-torch jobs lists the workspace above and says which one it uses", async () => {
    const { workspace, sub } = project();
    const learner = smallLearner(1e-2);
    prepareJobDirectory(learner, jobOf(learner, workspace));
    delete process.env.XPM_TORCH_WORKSPACE;
    process.chdir(sub);
    const out: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => out.push(l) };
    expect(await runCli(["jobs"], io)).toBe(0);
    expect(out[0]).toBe(`workspace: ${workspace}`);
    expect(out.join("\n")).toContain(jobOf(learner, workspace).identifier.slice(0, 12));
  });

  it("experiment() writes its jobs and run into the workspace above", async () => {
    const { workspace, sub } = project();
    delete process.env.XPM_TORCH_WORKSPACE;
    process.chdir(sub);
    const local = new FakeLocal(1);
    let jobDir = "";
    const plan = runExperiment("sub", (xp) => void (jobDir = xp.submit(smallLearner(2e-2)).jobDir), { log: null, handleSignals: false }, () => local);
    await waitFor(() => jobDir !== "" && local.pidOf(jobDir) !== undefined, "the job to start");
    local.complete(jobDir);
    await plan;
    expect(jobDir.startsWith(`${workspace}/jobs/`)).toBe(true);
    expect(listExperiments(workspace).map((r) => r.name)).toEqual(["sub"]);
    expect(readdirSync(sub)).toEqual([]);
  });

  it("xpm-torch learn trains into the workspace above", () => {
    const { workspace, sub } = project();
    writeFileSync(join(sub, "package.json"), '{ "type": "module" }\n');
    writeFileSync(join(sub, "config.ts"), learnerModule("max_epochs: 1,").replace("max_epochs: 3,", ""));
    const childEnv = userEnv();
    delete childEnv.XPM_TORCH_WORKSPACE;
    // tsx by its file: the project folder has no node_modules.
    const tsx = pathToFileURL(join(repoRoot, "node_modules", "tsx", "dist", "loader.mjs")).href;
    const r = spawnSync(process.execPath, ["--import", tsx, join(repoRoot, "ts", "cli.ts"), "learn", "config.ts", "--quiet"], {
      cwd: sub,
      env: childEnv,
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain(`job directory   ${workspace}/jobs/xpm_torch.learner.learner/`);
    expect(readdirSync(sub).sort()).toEqual(["config.ts", "package.json"]);
  });
});

describe("xpm-torch jobs' table", () => {
  const job = (over: Partial<JobInfo>): JobInfo => ({
    dir: "/ws/jobs/xpm_torch.learner.learner/0123456789abcdef",
    typeId: "xpm_torch.learner.learner",
    identifier: "0123456789abcdef",
    state: "done",
    epochs: 2,
    best: [],
    otherOutputs: {},
    stopped: null,
    learnedModel: null,
    modified: new Date("2025-01-02T03:04:05Z"),
    experiments: ["sweep"],
    tags: { lr: 0.01 },
    process: null,
    ...over,
  });

  it("keeps best values to their column, and shows a failure's message whole in its own", () => {
    const message =
      "training was interrupted at step 120; its state is saved in /a/long/workspace/path/jobs/xpm_torch.learner.learner/0123456789abcdef/checkpoints/step-120: run the same job again to resume";
    const rows = jobsTable([
      job({ best: [{ listener: "val", metric: "ndcg@10", value: 0.71234, epoch: 2 }] }),
      job({ identifier: "fedcba9876543210", state: "error", failureReason: "cancelled", error: `${message}\n(second line)` }),
    ]);
    const header = rows[0]!;
    const column = (name: string) => header.indexOf(name);
    expect(header).toMatch(/best values +message$/);
    expect(rows[1]!.slice(column("best values"), column("message")).trim()).toBe("val/ndcg@10=0.7123@2");
    expect(rows[2]!.slice(column("best values"), column("message")).trim()).toBe("-");
    expect(rows[2]).toContain("error (cancelled)");
    expect(rows[2]!.slice(column("message"))).toBe(`${message} (second line)`);
  });

  it("has no message column when no job has one", () => {
    expect(jobsTable([job({})])[0]).toMatch(/best values$/);
  });
});
