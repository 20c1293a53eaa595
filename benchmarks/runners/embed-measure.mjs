// What the embedding runners measure, the same way for each: the peak resident memory (VmHWM)
// and the resident memory (VmRSS) of the process, in MiB, and the texts they embed.
import { readFileSync, writeFileSync } from "node:fs";

function status(key) {
  const line = readFileSync("/proc/self/status", "utf8").split("\n").find((l) => l.startsWith(`${key}:`));
  return Number(line?.split(/\s+/)[1] ?? Number.NaN) / 1024;
}

export const peakMiB = () => status("VmHWM");
export const residentMiB = () => status("VmRSS");

/** `count` texts: the collection's, cycled, each repeat made distinct by its index. */
export function texts(collection, count) {
  const base = readFileSync(collection, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => l.slice(l.indexOf("\t") + 1));
  return Array.from({ length: count }, (_, i) => (i < base.length ? base[i] : `${base[i % base.length]} ${i}`));
}

/**
 * The options both runners take: --model DIR --texts FILE [--count 2000] [--batch 32]
 * [--threads 2] [--call N]: texts per embed call (default one batch, as a user's loop; the whole
 * count in one call lets the library order them by length); [--vectors FILE]: also write the
 * vectors there, in the texts' order, as float32 little-endian rows (after the measures);
 * [--precision 32-true]: the precision of xpm-torch's forwards (32-true or bf16-mixed).
 */
export function options(argv) {
  const get = (name, fallback) => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : fallback;
  };
  const model = get("model");
  const collection = get("texts");
  if (!model || !collection) throw new Error("usage: --model DIR --texts FILE [--count N] [--batch N] [--threads N] [--call N] [--vectors FILE]");
  return {
    model,
    collection,
    count: Number(get("count", 2000)),
    batch: Number(get("batch", 32)),
    threads: Number(get("threads", 2)),
    call: Number(get("call", get("batch", 32))),
    vectors: get("vectors"),
    precision: get("precision", "32-true"),
  };
}

/** Opens with `open`, embeds every text with `embed`, prints one JSON line of measures. */
export async function measure(runner, argv, open, embed) {
  const job = options(argv);
  const all = texts(job.collection, job.count);
  const nodeMiB = peakMiB();
  const model = await open(job);
  const openPeakMiB = peakMiB();
  const openMiB = residentMiB();
  const started = performance.now();
  let vectors = 0;
  // Kept only with --vectors: a float32 copy of each (about 3 MB for 2,000 of MiniLM's 384).
  const kept = [];
  for (let i = 0; i < all.length; i += job.call) {
    const batch = await embed(model, all.slice(i, i + job.call), job);
    vectors += batch.length;
    if (job.vectors) for (const v of batch) kept.push(Float32Array.from(v));
  }
  const seconds = (performance.now() - started) / 1000;
  console.log(
    JSON.stringify({ runner: job.precision === "32-true" ? runner : `${runner} ${job.precision}`, call: job.call, vectors, seconds, nodeMiB, openPeakMiB, openMiB, peakMiB: peakMiB(), afterMiB: residentMiB() }),
  );
  if (job.vectors) writeFileSync(job.vectors, Buffer.concat(kept.map((v) => Buffer.from(v.buffer, v.byteOffset, v.byteLength))));
}
