#!/usr/bin/env node
// `npm run pack [-- DIR]`: packs the package as npm publishes it, napi-rs style — the root
// package `xpm-torch` (JavaScript, types, the command) and the platform package
// `xpm-torch-linux-x64-gnu` holding the prebuilt addon and its CUDA library — into DIR
// (default ./packages).
// Run `npm run build` first. Prints the two tarballs' paths as JSON on the last line.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const platformDir = join(root, "npm", "linux-x64-gnu");
const addon = "xpm-torch.linux-x64-gnu.node";
// Opened by the core beside the addon when a run asks for CUDA (crates/cuda).
const cudaLibrary = "libxpm_torch_cuda.so";
const out = resolve(process.argv[2] ?? join(root, "packages"));

const readJson = (file) => JSON.parse(readFileSync(file, "utf8"));
const rootManifest = readJson(join(root, "package.json"));
const platformManifest = readJson(join(platformDir, "package.json"));

function fail(message) {
  console.error(`pack: ${message}`);
  process.exit(1);
}

if (platformManifest.version !== rootManifest.version) {
  fail(`npm/linux-x64-gnu is version ${platformManifest.version} but xpm-torch is ${rootManifest.version}: make them equal`);
}
if (rootManifest.optionalDependencies?.[platformManifest.name] !== rootManifest.version) {
  fail(`package.json must list ${platformManifest.name}@${rootManifest.version} in optionalDependencies`);
}
for (const needed of [join(root, addon), join(root, cudaLibrary), join(root, "dist", "index.js"), join(root, "dist", "cli.js")]) {
  if (!existsSync(needed)) fail(`${needed} is missing: run \`npm run build\` first`);
}
copyFileSync(join(root, addon), join(platformDir, addon));
copyFileSync(join(root, cudaLibrary), join(platformDir, cudaLibrary));
mkdirSync(out, { recursive: true });

function pack(dir) {
  const result = spawnSync("npm", ["pack", "--json", "--pack-destination", out], { cwd: dir, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (result.status !== 0) fail(`npm pack failed in ${dir}`);
  const [info] = JSON.parse(result.stdout);
  console.log(`${info.filename}: ${info.entryCount} files, ${(info.size / 1e6).toFixed(1)} MB packed`);
  return join(out, info.filename);
}

const tarballs = { root: pack(root), platform: pack(platformDir) };
console.log(JSON.stringify(tarballs));
