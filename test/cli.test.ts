// The xpm-torch command, run as a process from the TypeScript sources.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { beforeAll, describe, expect, it } from "vitest";

import { cpuBf16Finding, nvidiaGpuPresent } from "../ts/cli/doctor.js";
import { COMMANDS, runCli } from "../ts/cli/main.js";
import { readCurves } from "../ts/report/curves.js";
import { learnerModule, packageIndexUrl, xpmTorch } from "./helpers/cli.js";
import { repoRoot } from "./helpers/node.js";

/** A temporary directory whose modules are ES modules, as in a `"type": "module"` project. */
function esmDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
  return dir;
}

function captured() {
  const out: string[] = [];
  const err: string[] = [];
  return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
}

describe("help", () => {
  it.each(COMMANDS.map((c) => c.name))("%s --help prints its usage and exits 0", async (name) => {
    const { io, out } = captured();
    expect(await runCli([name, "--help"], io)).toBe(0);
    expect(out.join("\n")).toMatch(new RegExp(`^usage: xpm-torch ${name}\\b`));
  });

  it("lists every command without arguments, and refuses an unknown one", async () => {
    const none = captured();
    expect(await runCli([], none.io)).toBe(2);
    for (const c of COMMANDS) expect(none.err.join("\n")).toContain(`  ${c.name} `);
    const unknown = captured();
    expect(await runCli(["fly"], unknown.io)).toBe(2);
    expect(unknown.err.join("\n")).toContain('unknown command "fly"');
  });

  it("refuses unknown options and missing arguments with the command's usage", async () => {
    const bad = captured();
    expect(await runCli(["jobs", "--colour"], bad.io)).toBe(2);
    expect(bad.err.join("\n")).toMatch(/--colour[\s\S]*usage: xpm-torch jobs/);
    const missing = captured();
    expect(await runCli(["learn"], missing.io)).toBe(2);
    expect(missing.err.join("\n")).toContain("missing argument");
  });
});

describe("doctor", () => {
  it("with a missing libtorch, says what to run and exits 1", () => {
    const empty = mkdtempSync(join(tmpdir(), "xpm-no-torch-"));
    const r = xpmTorch(["doctor"], { XPM_TORCH_LIBTORCH: empty });
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/\[FAIL\] libtorch/);
    expect(r.stdout).toContain(`XPM_TORCH_LIBTORCH is set, but ${empty}: no lib/libtorch_cpu.so`);
    expect(r.stdout).toContain("fix: run `npx xpm-torch setup`");
  });

  it("with libtorch, reports its version, the addon, CUDA and threads", () => {
    const r = xpmTorch(["doctor"]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/\[ok {2}\] libtorch +2\.11\.0/);
    expect(r.stdout).toMatch(/\[ok {2}\] addon +local build: .*xpm-torch\.linux-x64-gnu\.node/);
    // Every GPU with its details, plainly none, or (a GPU CUDA cannot use) a warning and why.
    expect(r.stdout).toMatch(
      /\[ -- \] GPU +none: no NVIDIA GPU on this machine|\] GPU( 0)? +.+compute capability|\[warn\] GPU +an NVIDIA GPU is present but unusable/,
    );
    expect(r.stdout).toMatch(/\] threads +\d+ intra-op, \d+ inter-op/);
    // Whether this CPU has native bfloat16, as its flags say.
    const flags = (readFileSync("/proc/cpuinfo", "utf8").match(/^(flags|Features)\s*:(.*)$/m)?.[2] ?? "").split(/\s+/);
    const native = ["avx512_bf16", "amx_bf16", "bf16"].filter((f) => flags.includes(f));
    expect(r.stdout).toContain(
      native.length > 0 ? `[ok  ] CPU bf16      native (${native.join(", ")})` : "[ -- ] CPU bf16      no native bfloat16 instructions",
    );
  });

  it("says what bf16-mixed gives on a CPU with and without native bfloat16", () => {
    expect(cpuBf16Finding(["avx512_bf16", "amx_bf16"])).toMatchObject({ status: "ok", detail: expect.stringMatching(/^native \(avx512_bf16, amx_bf16\): bf16-mixed speeds up/) });
    expect(cpuBf16Finding([])).toMatchObject({ status: "absent", detail: expect.stringContaining("bf16-mixed runs slower than 32-true") });
  });

  it.skipIf(nvidiaGpuPresent())("without a GPU, says there is none, not ok and without the loader's error; --verbose gives why", () => {
    const r = xpmTorch(["doctor"]);
    expect(r.status).toBe(0);
    const gpu = r.stdout.split("\n").filter((l) => / GPU /.test(l));
    expect(gpu).toEqual(["[ -- ] GPU           none: no NVIDIA GPU on this machine (no /dev/nvidia<N>); training runs on the CPU"]);
    expect(r.stdout).not.toMatch(/cannot open shared object|libcusparse/);
    const verbose = xpmTorch(["doctor", "--verbose"]);
    expect(verbose.status).toBe(0);
    expect(verbose.stdout).toMatch(/\[ -- \] GPU +none: .*\n +why: .+/);
  });
});

describe("learn", () => {
  const dir = esmDir("xpm-cli-learn-");

  it("on a malformed config prints the error with the file and parameter path, and exits 1", () => {
    const file = join(dir, "bad.ts");
    const text = learnerModule("checkpoint_interval: -2,");
    writeFileSync(file, text);
    const r = xpmTorch(["learn", file, "--workspace", join(dir, "ws")]);
    expect(r.status).toBe(1);
    // The line and column of the offending key, in the user's file.
    const line = text.split("\n").findIndex((l) => l.includes("checkpoint_interval:")) + 1;
    expect(r.stderr).toMatch(new RegExp(`^xpm-torch learn: invalid configuration: .*bad\\.ts:${line}:3: learner\\.checkpoint_interval: `, "m"));
    expect(existsSync(join(dir, "ws"))).toBe(false);
  });

  // Where tsc would say "Did you mean 'max_epochs'?": the key's line, the path from the
  // outermost configuration the source builds around it, and the nearest name.
  it.each([
    ["max_epoch: 4,", "", "", "max_epoch:", "learner.max_epoch: unknown parameter; did you mean max_epochs?"],
    ["", "margin: 1", "margn: 1", "margn:", "learner.trainer.hooks[0].margn: unknown parameter; did you mean margin?"],
    // Built in a function: the source cannot tell where its result goes.
    ["", "num_features: 8", "num_feature: 8", "num_feature:", "syntheticLtrDataset.num_feature: unknown parameter; did you mean num_features?"],
  ])("on a misspelt parameter (%s%s) points at the key, with its path and the nearest name", (extra, from, to, key, expected) => {
    const file = join(dir, `typo-${key.slice(0, -1)}.ts`);
    const text = learnerModule(extra).replace(from, to);
    writeFileSync(file, text);
    const r = xpmTorch(["learn", file, "--workspace", join(dir, "ws")]);
    expect(r.status).toBe(1);
    const lines = text.split("\n");
    const line = lines.findIndex((l) => l.includes(key));
    const column = lines[line]!.indexOf(key) + 1;
    expect(r.stderr).toContain(`xpm-torch learn: invalid configuration: ${file}:${line + 1}:${column}: ${expected}\n`);
  });

  it("on a module without a Learner names what it found", () => {
    const file = join(dir, "none.mjs");
    writeFileSync(file, "export const model = 3;\n");
    const r = xpmTorch(["learn", file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("none.mjs: exports no Learner: export it as default or as `learner` (found: model)");
  });

  it("on an incomplete params.json names the file and the parameter", () => {
    const file = join(dir, "params.json");
    const objects = [{ id: 0, typename: "xpm_torch.learner.Learner", fields: { max_epochs: "many" } }];
    writeFileSync(file, JSON.stringify({ version: 3, objects }));
    const r = xpmTorch(["learn", file]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/invalid configuration: .*params\.json: learner\.random: expected a Random configuration/);
  });
});

// A script that runs its Learner itself, as README's first example does: the command runs it as
// it is and reports its jobs, never "exports no Learner"; other commands refuse it before it trains.
describe("learn on a script that calls learn() itself", () => {
  const dir = esmDir("xpm-cli-script-");
  const script = (call: string) =>
    `import { learn } from ${JSON.stringify(packageIndexUrl)};\n${learnerModule("", "const config =")}\n${call}\n`;

  it("runs it, reports its job and exits 0; run again, prints the stored result", () => {
    const file = join(dir, "experiment.ts");
    writeFileSync(file, script("const result = await learn(config);\nconsole.log(`script: ${result.epochs.length} epochs`);"));
    const ws = join(dir, "ws");
    const first = xpmTorch(["learn", file, "--workspace", ws, "--quiet"]);
    expect(first.stderr).not.toContain("exports no Learner");
    expect(first.status, first.stderr).toBe(0);
    expect(first.stdout).toContain("script: 3 epochs");
    expect(first.stdout).toContain("trained 3 epochs, 75 steps");
    // --workspace is the default of the script's own learn() call.
    const jobs = readdirSync(join(ws, "jobs", "xpm_torch.learner.learner"));
    expect(jobs).toHaveLength(1);
    expect(first.stdout).toContain(`job directory   ${join(ws, "jobs", "xpm_torch.learner.learner", jobs[0]!)}`);
    const again = xpmTorch(["learn", file, "--workspace", ws, "--quiet"]);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).toBe("");
    expect(again.stdout).toContain("this job had already run; its stored result:");
  });

  it("waits for a call the script did not await, and fails with the error of one that failed", () => {
    const file = join(dir, "unawaited.ts");
    writeFileSync(file, script("void learn(config);"));
    const r = xpmTorch(["learn", file, "--quiet", "--workspace", join(dir, "ws-unawaited")]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("trained 3 epochs, 75 steps");
    const failing = join(dir, "failing.ts");
    writeFileSync(failing, script("void learn(config, { onEpoch: () => { throw new Error('stopped by the script'); } });"));
    const f = xpmTorch(["learn", failing, "--quiet", "--workspace", join(dir, "ws-failing")]);
    expect(f.status).toBe(1);
    expect(f.stderr).toContain("stopped by the script");
    expect(f.stdout).not.toContain("trained");
  });

  // experiment() starts its plan through watchedPlan: a plan script is a script that ran too.
  it("counts a plan started through watchedPlan as what the script ran, and waits for it", () => {
    const learnModule = JSON.stringify(pathToFileURL(join(repoRoot, "ts", "learn.ts")).href);
    const plan = (body: string) => `import { watchedPlan } from ${learnModule};\n${body}\n`;
    const file = join(dir, "plan.ts");
    writeFileSync(file, plan("void watchedPlan(async () => { await new Promise((r) => setTimeout(r, 200)); console.log('the plan ran'); });"));
    const r = xpmTorch(["learn", file, "--quiet"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("the plan ran");
    const failing = join(dir, "failing-plan.ts");
    writeFileSync(failing, plan("void watchedPlan(async () => { await new Promise((r) => setTimeout(r, 200)); throw new Error('the plan failed'); });"));
    const f = xpmTorch(["learn", failing, "--quiet"]);
    expect(f.status).toBe(1);
    expect(f.stderr).toContain("the plan failed");
  });

  it("counts a module that runs experiment() itself as a script that ran", () => {
    const index = JSON.stringify(pathToFileURL(join(repoRoot, "ts", "index.ts")).href);
    const file = join(dir, "experiment-plan.ts");
    const workspace = JSON.stringify(join(dir, "ws-plan"));
    writeFileSync(file, `import { experiment } from ${index};\nawait experiment("cli-plan", () => { console.log("the plan ran"); }, { workspace: ${workspace}, log: null });\n`);
    const r = xpmTorch(["learn", file, "--quiet"]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("the plan ran");
    expect(r.stderr).not.toContain("exports no Learner");
  });

  it("wire refuses it before it trains, at the line of its learn() call", () => {
    const file = join(dir, "wired.ts");
    const text = script("await learn(config);");
    writeFileSync(file, text);
    const ws = join(dir, "ws-wire");
    const r = xpmTorch(["wire", file], { XPM_TORCH_WORKSPACE: ws });
    expect(r.status).toBe(1);
    const line = text.split("\n").findIndex((l) => l.includes("await learn(")) + 1;
    expect(r.stderr).toContain(`wired.ts:${line}: learn(): the module runs its Learner itself: export the configuration instead`);
    expect(existsSync(ws)).toBe(false);
  });
});

describe("a trained job", () => {
  const dir = esmDir("xpm-cli-job-");
  const workspace = join(dir, "ws");
  let run: ReturnType<typeof xpmTorch>;
  let jobDir: string;

  beforeAll(() => {
    const file = join(dir, "config.ts");
    writeFileSync(file, learnerModule("", "export const learner ="));
    run = xpmTorch(["learn", file, "--workspace", workspace]);
    const typeDir = join(workspace, "jobs", "xpm_torch.learner.learner");
    jobDir = join(typeDir, readdirSync(typeDir)[0]!);
  });

  it("learn trains a .ts module's `learner` export and prints where everything is", () => {
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain("trained 3 epochs, 75 steps");
    expect(run.stdout).toContain(`job directory   ${jobDir}`);
    expect(run.stdout).toMatch(/val\/ndcg@10 +\d\.\d{4} at epoch \d/);
    // By default the last epoch's checkpoint (exact resume) and the best epoch's, with their size.
    const kept = readdirSync(join(jobDir, "checkpoints")).filter((d) => d.startsWith("epoch-")).map((d) => Number(d.slice(6)));
    expect(kept).toContain(3);
    expect(kept.length).toBeLessThanOrEqual(2);
    expect(run.stdout).toMatch(new RegExp(`checkpoints .*\\(epochs? ${[...kept].sort((a, b) => a - b).join(", ")}: \\d+ [kMG]B; checkpoint_keep sets how many\\)`));
    expect(existsSync(join(jobDir, "learner.done"))).toBe(true);
  });

  it("learn prints plain progress lines when stderr is not a terminal", () => {
    const lines = run.stderr.split("\n").filter((l) => l.startsWith("xpm-torch: epoch"));
    expect(lines.length).toBeGreaterThanOrEqual(2);
    expect(lines[lines.length - 1]).toMatch(/^xpm-torch: epoch 3\/3 step 25\/25 \(75\/75, 100%\) [\d.]+ steps\/s ETA 0:00 loss \d\.\d+, \d+:\d\d elapsed$/);
    expect(run.stderr).not.toContain("\r");
  });

  it("jobs lists the finished job with its best value", () => {
    const r = xpmTorch(["jobs", workspace]);
    expect(r.status).toBe(0);
    const result = JSON.parse(readFileSync(join(jobDir, ".experimaestro", "result.json"), "utf8")) as {
      listeners: { val: { "ndcg@10": { value: number; epoch: number } } };
    };
    const best = result.listeners.val["ndcg@10"];
    const row = r.stdout.split("\n").find((l) => l.includes(jobDir.slice(-64, -52)));
    expect(row).toBeDefined();
    expect(row).toMatch(/ done +3 +/);
    expect(row).toContain(`val/ndcg@10=${Number(best.value.toPrecision(4))}@${best.epoch}`);
    const json = JSON.parse(xpmTorch(["jobs", workspace, "--json"]).stdout) as { dir: string; state: string }[];
    expect(json).toEqual([expect.objectContaining({ dir: jobDir, state: "done" })]);
  });

  it("report draws one curve per logged tag and a page with the results table", () => {
    const out = join(dir, "report");
    mkdirSync(out);
    const r = xpmTorch(["report", jobDir, "--out", out]);
    expect(r.status, r.stderr).toBe(0);
    const svg = readFileSync(join(out, "curves.svg"), "utf8");
    const tags = readCurves(join(jobDir, "runs")).map((c) => c.tag);
    expect(tags).toEqual(expect.arrayContaining(["train/pair-hinge", "val/ndcg@10"]));
    const drawn = [...svg.matchAll(/<path class="curve" data-tag="([^"]+)" d="([^"]+)"/g)];
    expect(drawn.map((m) => m[1])).toEqual(tags);
    // Each training-loss path has one point per epoch.
    const loss = drawn.find((m) => m[1] === "train/pair-hinge")![2]!;
    expect(loss.match(/[ML]/g)).toHaveLength(3);
    const html = readFileSync(join(out, "report.html"), "utf8");
    expect(html).toContain("<table class=\"results\">");
    expect(html).toMatch(/<td>val<\/td><td>ndcg@10<\/td><td class="num">0\.\d+/);
    expect(html).toContain(svg.trim().split("\n")[0]);
  });

  it("learn on the job's params.json with a wrong value names the file and the parameter", () => {
    const text = readFileSync(join(jobDir, "params.json"), "utf8");
    expect(text).toContain('"max_epochs":3');
    const file = join(dir, "broken-params.json");
    writeFileSync(file, text.replace('"max_epochs":3', '"max_epochs":"three"'));
    const r = xpmTorch(["learn", file, "--workspace", join(dir, "ws2")]);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/invalid configuration: .*broken-params\.json: learner\.max_epochs: /);
  });

  it("report on a directory that is no job says so", () => {
    const r = xpmTorch(["report", dir]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("is not a job directory");
  });
});
