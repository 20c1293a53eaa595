// The CUDA and NCCL headers the CUDA library (crates/cuda) compiles against. The torch wheel
// ships libtorch's headers but not CUDA's; these come from the nvidia-* wheels that torch's own
// Requires-Dist pins (through its cuda-toolkit extras). Only the `nvidia/*/include/` entries are
// read, with HTTP range requests on the wheels (about 20 MB instead of about 1 GB), and kept in
// the xpm-torch cache: a build with a warm cache needs no network. Node built-ins only.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { inflateRawSync } from "node:zlib";

/** cuda-toolkit extras whose wheels hold headers the library needs (crt and cccl: see the reference on NCCL). */
export const HEADER_EXTRAS = ["cublas", "cusparse", "cusolver", "crt", "cccl"];
/** Direct torch requirements whose wheels hold headers the library needs. */
export const HEADER_PACKAGES = ["nvidia-nccl-cu13"];

/**
 * The Requires-Dist lines of a METADATA text that apply on Linux, as
 * `{ name, extras, spec, extra }` (`extra`: the extra of ours that asks for it, if any).
 */
export function requirements(metadata) {
  const out = [];
  for (const line of metadata.split("\n")) {
    const m = /^Requires-Dist:\s*([A-Za-z0-9_.-]+)(?:\[([^\]]*)\])?\s*([^;]*?)\s*(?:;\s*(.*))?$/.exec(line.trim());
    if (!m) continue;
    const [, name, extras, spec, marker = ""] = m;
    if (/platform_system\s*==\s*"(?!Linux)/.test(marker) || (/sys_platform/.test(marker) && !/linux/.test(marker))) continue;
    const extra = /extra\s*==\s*['"]([^'"]+)['"]/.exec(marker)?.[1];
    out.push({ name: name.toLowerCase(), extras: extras ? extras.split(",").map((e) => e.trim()) : [], spec: spec.trim(), extra });
  }
  return out;
}

/**
 * The pip requirement strings of the header wheels: `torchMetadata` gives the cuda-toolkit
 * version and the NCCL pin, `toolkitMetadata` (cuda-toolkit's own METADATA) the pin of each extra.
 */
export function headerWheels(torchMetadata, toolkitMetadata) {
  const torch = requirements(torchMetadata).filter((r) => r.extra === undefined);
  const wanted = [];
  for (const name of HEADER_PACKAGES) {
    const found = torch.find((r) => r.name === name);
    if (!found) throw new Error(`torch's METADATA has no Requires-Dist for ${name}`);
    wanted.push(`${name}${found.spec}`);
  }
  const toolkit = requirements(toolkitMetadata);
  for (const extra of HEADER_EXTRAS) {
    const found = toolkit.find((r) => r.extra === extra);
    if (!found) throw new Error(`cuda-toolkit's METADATA has no extra ${extra}`);
    wanted.push(`${found.name}${found.spec}`);
  }
  return wanted;
}

/** torch's `cuda-toolkit==X` pin, as a pip requirement. */
export function toolkitRequirement(torchMetadata) {
  const found = requirements(torchMetadata).find((r) => r.name === "cuda-toolkit" && r.extra === undefined);
  if (!found) throw new Error("torch's METADATA has no Requires-Dist for cuda-toolkit (a CPU-only torch?)");
  return `cuda-toolkit${found.spec}`;
}

/** The METADATA of the torch install whose `torch/` directory is `torchRoot`. */
export function torchMetadata(torchRoot) {
  const site = dirname(torchRoot);
  const result = spawnSync("ls", [site], { encoding: "utf8" });
  const info = (result.stdout || "").split("\n").find((n) => /^torch-[0-9.]+(\+\w+)?\.dist-info$/.test(n));
  if (!info) throw new Error(`no torch-*.dist-info beside ${torchRoot}: cannot read torch's CUDA pins`);
  return readFileSync(join(site, info, "METADATA"), "utf8");
}

// The wheel pip would install for `requirement`, without installing it: pip's resolver honours
// the user's index configuration, so no index is named here.
function wheelUrl(python, requirement) {
  const report = join(mkdtempSync(join(tmpdir(), "xpm-pip-")), "report.json");
  const args = ["-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed", "--only-binary=:all:",
    "--disable-pip-version-check", "--quiet", "--report", report, requirement];
  const result = spawnSync(python, args, { stdio: ["ignore", "ignore", "pipe"], encoding: "utf8" });
  if (result.error || result.status !== 0) {
    throw new Error(`cannot resolve ${requirement} with pip: ${result.error?.message ?? result.stderr.trim()}`);
  }
  const url = JSON.parse(readFileSync(report, "utf8")).install?.[0]?.download_info?.url;
  rmSync(dirname(report), { recursive: true, force: true });
  if (!url) throw new Error(`pip resolved no wheel for ${requirement}`);
  return url;
}

// A random-access reader over a remote file: range requests, or the whole body once when the
// server ignores ranges.
async function remoteFile(url) {
  let whole;
  const head = await fetch(url, { method: "HEAD" });
  if (!head.ok) throw new Error(`${url}: HTTP ${head.status}`);
  const size = Number(head.headers.get("content-length"));
  return {
    size,
    async read(offset, length) {
      if (whole) return whole.subarray(offset, offset + length);
      const response = await fetch(url, { headers: { Range: `bytes=${offset}-${offset + length - 1}` } });
      if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
      const body = Buffer.from(await response.arrayBuffer());
      if (response.status === 206) return body;
      whole = body;
      return whole.subarray(offset, offset + length);
    },
  };
}

/** The entries of a zip file's central directory: name, method, sizes and local header offset. */
export function endOfCentralDirectory(tail) {
  const eocd = tail.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error("not a zip file (no end of central directory)");
  const count = tail.readUInt16LE(eocd + 10);
  const size = tail.readUInt32LE(eocd + 12);
  const offset = tail.readUInt32LE(eocd + 16);
  if (offset === 0xffffffff || count === 0xffff) throw new Error("zip64 wheels are not supported");
  return { count, size, offset };
}

export function centralEntries(dir, count) {
  const entries = [];
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (dir.readUInt32LE(p) !== 0x02014b50) throw new Error("corrupt zip central directory");
    const nameLength = dir.readUInt16LE(p + 28);
    const extraLength = dir.readUInt16LE(p + 30);
    const commentLength = dir.readUInt16LE(p + 32);
    entries.push({
      method: dir.readUInt16LE(p + 10),
      compressed: dir.readUInt32LE(p + 20),
      size: dir.readUInt32LE(p + 24),
      header: dir.readUInt32LE(p + 42),
      name: dir.toString("utf8", p + 46, p + 46 + nameLength),
    });
    p += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

// Local headers carry their own name and extra field lengths: allow this much beyond the
// compressed data when fetching a span.
const LOCAL_SLACK = 1024;

/** Writes the entries of the zip behind `file` whose names match `wanted` under `dest`; returns their count. */
export async function extractMatching(file, wanted, dest) {
  const tailLength = Math.min(file.size, 66 * 1024);
  const tail = await file.read(file.size - tailLength, tailLength);
  const directory = endOfCentralDirectory(tail);
  const entries = centralEntries(await file.read(directory.offset, directory.size), directory.count)
    .filter((e) => wanted.test(e.name) && !e.name.endsWith("/"))
    .sort((a, b) => a.header - b.header);
  // One request per run of nearby entries (headers sit together in a wheel).
  let i = 0;
  while (i < entries.length) {
    let j = i;
    while (j + 1 < entries.length && entries[j + 1].header - (entries[j].header + entries[j].compressed + LOCAL_SLACK) < 1 << 20) j++;
    const start = entries[i].header;
    const end = Math.min(file.size, entries[j].header + entries[j].compressed + LOCAL_SLACK + 30);
    const span = await file.read(start, end - start);
    for (const e of entries.slice(i, j + 1)) {
      const at = e.header - start;
      if (span.readUInt32LE(at) !== 0x04034b50) throw new Error(`corrupt local header for ${e.name}`);
      const data = at + 30 + span.readUInt16LE(at + 26) + span.readUInt16LE(at + 28);
      const raw = span.subarray(data, data + e.compressed);
      const body = e.method === 8 ? inflateRawSync(raw) : e.method === 0 ? raw : undefined;
      if (!body || body.length !== e.size) throw new Error(`cannot unpack ${e.name} (method ${e.method})`);
      const target = join(dest, e.name);
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, body);
    }
    i = j + 1;
  }
  return entries.length;
}

/**
 * The directory holding `nvidia/<part>/include/` for every header wheel of the torch at
 * `torchRoot`: from the cache when complete, else fetched into it.
 */
export async function provisionCudaHeaders(torchRoot, cache, { python = process.env.XPM_TORCH_PYTHON || "python3", log = console.log } = {}) {
  const metadata = torchMetadata(torchRoot);
  const version = /^Version:\s*(\S+)/m.exec(metadata)?.[1] ?? "unknown";
  const dir = join(cache, `cuda-headers-${version}`);
  if (existsSync(join(dir, "complete.json"))) return dir;
  const toolkitUrl = wheelUrl(python, toolkitRequirement(metadata));
  const toolkitFile = await remoteFile(toolkitUrl);
  const scratch = mkdtempSync(join(tmpdir(), "xpm-toolkit-"));
  await extractMatching(toolkitFile, /\.dist-info\/METADATA$/, scratch);
  const toolkitInfo = spawnSync("ls", [scratch], { encoding: "utf8" }).stdout.trim().split("\n")[0];
  const wheels = headerWheels(metadata, readFileSync(join(scratch, toolkitInfo, "METADATA"), "utf8"));
  rmSync(scratch, { recursive: true, force: true });

  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    for (const requirement of wheels) {
      const count = await extractMatching(await remoteFile(wheelUrl(python, requirement)), /^nvidia\/[^/]+\/include\//, partial);
      log(`  ${requirement}: ${count} headers`);
    }
    writeFileSync(join(partial, "complete.json"), `${JSON.stringify({ torch: version, wheels }, null, 2)}\n`);
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } catch (error) {
    rmSync(partial, { recursive: true, force: true });
    throw new Error(`fetching the CUDA headers for torch ${version} failed: ${error.message}. ` +
      "Building the CUDA library needs the Python package index once; later builds use the cache.");
  }
  return dir;
}
