// What experimaestro's files of a workspace share: JSON written atomically, its local times, and
// event streams (appended to an archive and to the live file its monitor watches).
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";

import type { FailureReason } from "./job-state.js";

/** experimaestro's names of the failure reasons. */
export const FAILURE_NAMES: Readonly<Record<FailureReason, string>> = {
  failed: "FAILED",
  dependency: "DEPENDENCY",
  memory: "MEMORY",
  timeout: "TIMEOUT",
  cancelled: "CANCELLED",
};

export interface EventStream {
  /** Folder of the live files `<prefix><count>.jsonl`. */
  readonly live: string;
  readonly prefix: string;
  /** Folder of the archived files `event-<count>.jsonl`. */
  readonly archive: string;
}

/** Appends an event and returns the number of the file it went to (a new one once the last was archived). */
export function appendEvent(stream: EventStream, event: Record<string, unknown>): number {
  let last = -1;
  for (const name of readdirSafe(stream.archive)) {
    const match = /^event-(\d+)\.jsonl$/.exec(name);
    if (match) last = Math.max(last, Number(match[1]));
  }
  const count = last < 0 ? 0 : existsSync(join(stream.live, `${stream.prefix}${last}.jsonl`)) ? last : last + 1;
  const line = `${JSON.stringify(event)}\n`;
  mkdirSync(stream.archive, { recursive: true });
  mkdirSync(stream.live, { recursive: true });
  appendFileSync(join(stream.archive, `event-${count}.jsonl`), line);
  appendFileSync(join(stream.live, `${stream.prefix}${count}.jsonl`), line);
  return count;
}

export function liveFiles(stream: EventStream): [number, string][] {
  const files: [number, string][] = [];
  for (const name of readdirSafe(stream.live)) {
    if (!name.startsWith(stream.prefix)) continue;
    const match = /^(\d+)\.jsonl$/.exec(name.slice(stream.prefix.length));
    if (match) files.push([Number(match[1]), join(stream.live, name)]);
  }
  return files;
}

/** Local time without a zone, microseconds (Python's `datetime.now().isoformat()`). */
export function localIso(date: Date): string {
  const day = `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${String(date.getMilliseconds()).padStart(3, "0")}000`;
  return `${day}T${time}`;
}

export function timeOf(value: unknown): number | null {
  if (typeof value === "number") return value * 1000;
  if (typeof value !== "string") return null;
  const local = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(value);
  if (local) {
    const [y, mo, d, h, mi, s] = local.slice(1, 7).map(Number) as [number, number, number, number, number, number];
    const micro = Number((local[7] ?? "").padEnd(6, "0"));
    return new Date(y, mo - 1, d, h, mi, s, Math.floor(micro / 1000)).getTime();
  }
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? null : parsed;
}

export function pad(n: number): string {
  return String(n).padStart(2, "0");
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

export function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

export function readText(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

export function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch {
    return undefined;
  }
}

/** Writes through a temporary file of the same folder and a rename: readers never see half a file. */
export function writeJsonAtomic(file: string, value: unknown, pretty = true): void {
  mkdirSync(dirname(file), { recursive: true });
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}-${randomBytes(4).toString("hex")}.tmp`);
  try {
    writeFileSync(tmp, pretty ? `${JSON.stringify(value, null, 2)}\n` : JSON.stringify(value));
    renameSync(tmp, file);
  } catch (error) {
    rmSync(tmp, { force: true });
    throw error;
  }
}
