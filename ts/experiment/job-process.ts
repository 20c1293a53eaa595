// How a job process is started, and what it left behind when it ended.
import { appendFileSync, existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import type { Job } from "../workspace/job.js";
import type { ProcessRecord } from "./backend.js";

/**
 * The command that runs a job: `xpm-torch learn <job dir>/params.json`, by this same copy of
 * xpm-torch and this Node. From the TypeScript sources (tests, a development checkout), through
 * tsx. `imports` are modules that define the plan's own classes (listeners, hooks written in
 * TypeScript), loaded before params.json is read.
 */
export function jobCommand(job: Job, imports: readonly string[] = []): string[] {
  const here = fileURLToPath(import.meta.url);
  const fromSources = here.endsWith(".ts");
  const cli = fileURLToPath(new URL(fromSources ? "../cli.ts" : "../cli.js", import.meta.url));
  const loader = fromSources ? ["--import", pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href] : [];
  const importArgs = imports.flatMap((file) => ["--import", file]);
  return [process.execPath, ...loader, cli, "learn", job.paramsFile, "--workspace", job.workspace, ...importArgs];
}

/** The last `lines` lines of a file (empty when there is none). */
export function tailOf(file: string, lines = 20): string {
  if (!existsSync(file)) return "";
  const text = readFileSync(file, "utf8").trimEnd();
  return text.split("\n").slice(-lines).join("\n");
}

/** What the job's own process recorded when it failed (`learner.failed`): its message and error code. */
export function recordedFailure(job: Job): { readonly message: string; readonly code: unknown } | undefined {
  if (!existsSync(job.failedFile)) return undefined;
  try {
    const info = JSON.parse(readFileSync(job.failedFile, "utf8")) as { message?: unknown; code?: unknown };
    return typeof info.message === "string" ? { message: info.message, code: info.code } : undefined;
  } catch {
    return undefined;
  }
}

/** Forgets an earlier attempt's failure before a new one starts. */
export function clearFailure(job: Job): void {
  rmSync(job.failedFile, { force: true });
}

/** Appends a started process to the job's launch log (`.experimaestro/launches.jsonl`). */
export function recordLaunch(job: Job, record: ProcessRecord): void {
  mkdirSync(dirname(job.launchesFile), { recursive: true });
  appendFileSync(job.launchesFile, `${JSON.stringify({ time: new Date().toISOString(), process: record })}\n`);
}

/** The last process the launch log names (a torn last line is skipped). */
export function lastLaunch(job: Job): ProcessRecord | undefined {
  if (!existsSync(job.launchesFile)) return undefined;
  const lines = readFileSync(job.launchesFile, "utf8").split("\n").filter((l) => l.trim() !== "");
  for (const line of lines.reverse()) {
    try {
      const process = (JSON.parse(line) as { process?: ProcessRecord }).process;
      if (process && (process.type === "local" || process.type === "slurm")) return process;
    } catch {
      // a line cut by a crash
    }
  }
  return undefined;
}
