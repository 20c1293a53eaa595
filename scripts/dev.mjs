#!/usr/bin/env node
// The developer entry point behind `npm run setup|build|demo|test|lint`. From a fresh clone it
// installs the npm packages, compiles the TypeScript, provisions libtorch 2.11 into the cache,
// builds the Rust addon, then does what was asked. Every step is skipped or incremental when
// already done. Only Node built-ins here: this runs before node_modules exists.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

import { provisionCudaHeaders } from "./cuda-headers.mjs";
import { provisionMinilm } from "./minilm.mjs";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const bin = (name) => join(root, "node_modules", ".bin", name);
const cache = process.env.XPM_TORCH_CACHE || join(process.env.XDG_CACHE_HOME || join(homedir(), ".cache"), "xpm-torch");

function step(title) {
  console.log(`\n== ${title}`);
}

function run(command, args, env = process.env) {
  console.log(`$ ${[command, ...args].join(" ")}`);
  const result = spawnSync(command, args, { cwd: root, stdio: "inherit", env });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  if (result.status !== 0) process.exit(result.status ?? 1);
}

// Runs a test command, echoing its output, and returns [passed, failed] as counted by `parse`.
function runCounted(command, args, env, parse) {
  console.log(`$ ${[command, ...args].join(" ")}`);
  const result = spawnSync(command, args, { cwd: root, env, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 28 });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  process.stdout.write(result.stdout);
  if (result.status !== 0) process.exit(result.status ?? 1);
  return parse(result.stdout);
}

function cargoCounts(output) {
  let passed = 0;
  let failed = 0;
  for (const m of output.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    passed += Number(m[1]);
    failed += Number(m[2]);
  }
  return [passed, failed];
}

function capture(command, args) {
  const result = spawnSync(command, args, { cwd: root, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (result.status !== 0) process.exit(result.status ?? 1);
  return result.stdout.trim();
}

const mtime = (path) => statSync(path, { throwIfNoEntry: false })?.mtimeMs ?? 0;

function npmPackages() {
  const stamp = join(root, "node_modules", ".package-lock.json");
  if (existsSync(stamp) && mtime(stamp) >= mtime(join(root, "package-lock.json"))) return;
  step("npm packages");
  // `npm install`, not `npm ci`: ci refuses a lock without the optional platform package
  // (xpm-torch-linux-x64-gnu, published with releases, built locally in a clone), while install
  // skips it. The lock lists every other package, so install leaves it unchanged.
  run("npm", ["install", "--no-audit", "--no-fund"]);
}

function typescript() {
  step("TypeScript");
  // tsc leaves the output of a source that was moved or deleted: dist/ would ship it (and
  // source maps naming sources that are gone). It holds tsc's output alone.
  rmSync(join(root, "dist"), { recursive: true, force: true });
  run(bin("tsc"), ["-p", "tsconfig.json"]);
}

/** Where the core reads the value rules of the classes from (crates/core/src/config/rules.rs). */
const CORE_SCHEMA = join(root, "crates", "core", "src", "config", "schema.json");

/** The demo Learner (ts/demo-config.ts) as the core reads it, the one copy that the Rust tests,
 * benches, examples and the runner's test read; test/demo-fixture.test.ts checks it is current. */
const DEMO_FIXTURE = join(root, "crates", "core", "tests", "fixtures", "demo.json");

// Rewritten only when it changes, so that an unchanged file does not rebuild the core.
function writeIfChanged(path, text) {
  const name = relative(root, path);
  if (existsSync(path) && readFileSync(path, "utf8") === text) {
    console.log(`${name} is up to date`);
    return;
  }
  writeFileSync(path, text);
  console.log(`wrote ${name}`);
}

function coreSchema() {
  step("Configuration schema for the core");
  writeIfChanged(CORE_SCHEMA, `${capture(process.execPath, ["dist/cli.js", "schema"])}\n`);
}

function demoFixture() {
  step("Demo configuration for the Rust tests");
  const script = [
    'import { demoLearner } from "./dist/demo-config.js";',
    'import { coreConfigJson } from "./dist/run/train.js";',
    "console.log(JSON.stringify(JSON.parse(coreConfigJson(demoLearner())), null, 2));",
  ].join("\n");
  writeIfChanged(DEMO_FIXTURE, `${capture(process.execPath, ["--input-type=module", "--eval", script])}\n`);
}

function libtorch() {
  step("libtorch");
  run(process.execPath, ["dist/cli.js", "setup"]);
  return capture(process.execPath, ["dist/cli.js", "libtorch-path"]);
}

// Builds live in the cache, outside the clone, so a new clone (CI) reuses the compiled libtorch
// glue; LIBTORCH keeps one absolute path so torch-sys is not rebuilt.
function cargoEnv(torchRoot) {
  return {
    ...process.env,
    LIBTORCH: torchRoot,
    CARGO_TARGET_DIR: process.env.CARGO_TARGET_DIR || join(cache, "cargo-target"),
  };
}

// napi builds for an explicit target triple (target/<triple>/release); cargo test and clippy
// must use the same one or they compile libtorch's glue a second time.
function hostTriple() {
  const host = /^host: (\S+)$/m.exec(capture("rustc", ["-vV"]));
  if (!host) throw new Error("cannot read the host triple from `rustc -vV`");
  return host[1];
}

function addon(env) {
  step("Rust addon");
  run(
    bin("napi"),
    ["build", "--platform", "--release", "--manifest-path", "crates/node-binding/Cargo.toml",
      "--output-dir", ".", "--js", "binding.cjs", "--dts", "binding.d.cts"],
    env,
  );
}

/** The CUDA library beside the addon (crates/cuda); the core opens it when CUDA is asked for. */
export const CUDA_LIBRARY = "libxpm_torch_cuda.so";

// Its own `g++ -shared`: cargo's cc only makes archives, and this library must stay out of the
// addon's dependencies so that the addon loads where the CUDA libraries are missing.
async function cudaLibrary(torchRoot) {
  step("CUDA library");
  const source = join(root, "crates", "cuda", "xpm_torch_cuda.cpp");
  const output = join(root, CUDA_LIBRARY);
  let headers;
  try {
    headers = await provisionCudaHeaders(torchRoot, cache);
  } catch (error) {
    console.log(`skipped: ${error.message}`);
    return;
  }
  const inputs = [source, join(root, "crates", "core", "cpp", "ffi.h"), join(torchRoot, "version.py"), join(headers, "complete.json"), fileURLToPath(import.meta.url)];
  if (Math.max(...inputs.map(mtime)) < mtime(output)) {
    console.log(`${CUDA_LIBRARY} is up to date`);
    return;
  }
  const site = dirname(torchRoot);
  const object = join(mkdtempSync(join(tmpdir(), "xpm-cuda-")), "xpm_torch_cuda.o");
  run("g++", ["-std=c++17", "-O2", "-fPIC", "-D_GLIBCXX_USE_CXX11_ABI=1", "-DUSE_C10D_NCCL",
    "-Wno-interference-size", `-I${join(torchRoot, "include")}`,
    `-I${join(torchRoot, "include", "torch", "csrc", "api", "include")}`,
    `-I${join(site, "nvidia", "cu13", "include")}`, `-I${join(headers, "nvidia", "cu13", "include")}`,
    `-I${join(headers, "nvidia", "nccl", "include")}`, "-c", source, "-o", object]);
  // -z defs: every symbol resolves now, against these libraries; no rpath (the core preloads
  // libtorch_cuda from the libtorch it runs on, and the loader matches by SONAME).
  run("g++", ["-shared", "-Wl,-z,defs", `-Wl,-soname,${CUDA_LIBRARY}`, object,
    `-L${join(torchRoot, "lib")}`, `-L${join(site, "nvidia", "cu13", "lib")}`,
    "-Wl,--no-as-needed", "-ltorch_cuda", "-lc10_cuda", "-ltorch_cpu", "-lc10", "-l:libcudart.so.13",
    "-Wl,--as-needed", "-o", output]);
}

async function build() {
  npmPackages();
  typescript();
  coreSchema();
  demoFixture();
  const torchRoot = libtorch();
  const env = cargoEnv(torchRoot);
  addon(env);
  await cudaLibrary(torchRoot);
  return env;
}

const commands = {
  setup() {
    npmPackages();
    typescript();
    libtorch();
  },
  build,
  async demo() {
    await build();
    step("demo");
    run(process.execPath, ["dist/cli.js", "demo"]);
  },
  async test() {
    const env = await build();
    step("all-MiniLM-L6-v2");
    // The pretrained-model integration tests read it from the cache, as the addon reads libtorch.
    env.XPM_TORCH_MINILM = provisionMinilm(env);
    process.env.XPM_TORCH_MINILM = env.XPM_TORCH_MINILM;
    step("Rust tests");
    // Some tests make a rendezvous fail on purpose: c10d's retry and timeout lines would read as
    // failures. Real failures still fail the tests, with their errors.
    const rust = runCounted("cargo", ["test", "--release", "--workspace", "--target", hostTriple()], { ...env, TORCH_CPP_LOG_LEVEL: "FATAL" }, cargoCounts);
    step("TypeScript tests");
    const report = join(mkdtempSync(join(tmpdir(), "xpm-vitest-")), "report.json");
    run(bin("vitest"), ["run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`]);
    const vitest = JSON.parse(readFileSync(report, "utf8"));
    const passed = rust[0] + vitest.numPassedTests;
    const failed = rust[1] + vitest.numFailedTests;
    console.log(`\nRust ${rust[0]} passed, TypeScript ${vitest.numPassedTests} passed`);
    console.log(`tests: ${passed} passed, ${failed} failed`);
  },
  // The GPU suite (scripts/gpu/suite.sh): builds its binaries, then runs them when this machine
  // has a CUDA GPU; exits 3 without one (never a pass).
  async "test:gpu"() {
    const env = await build();
    step("GPU suite");
    const python = process.env.PYTHON || process.env.XPM_TORCH_PYTHON;
    run("bash", ["scripts/gpu/suite.sh", "all"], python ? { ...env, PYTHON: python } : env);
  },
  async lint() {
    // Only Node: an upward import between the core's layers or those of ts/, an import cycle in
    // ts/, or a function grown too long, fails before the slow cargo steps.
    step("layers and function lengths");
    run(process.execPath, ["scripts/check-layers.mjs"]);
    run(process.execPath, ["scripts/check-ts-layers.mjs"]);
    run(process.execPath, ["scripts/check-function-length.mjs"]);
    const env = await build();
    step("lint");
    run("cargo", ["fmt", "--all", "--check"], env);
    const target = ["--release", "--target", hostTriple()];
    run("cargo", ["clippy", ...target, "-p", "xpm-torch-core", "-p", "xpm-torch-runner", "--all-targets", "--", "-D", "warnings"], env);
    // The addon's exports exist only as N-API registrations, which a test build leaves unused.
    run("cargo", ["clippy", ...target, "-p", "xpm-torch-node", "--lib", "--", "-D", "warnings"], env);
    run(bin("tsc"), ["-p", "tsconfig.test.json"]);
  },
};

const name = process.argv[2];
const command = commands[name];
if (!command) {
  console.error(`usage: node scripts/dev.mjs ${Object.keys(commands).join("|")}`);
  process.exit(2);
}
await command();
