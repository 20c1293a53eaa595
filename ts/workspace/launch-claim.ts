// Which plan launches a job: two plans started at once, sharing jobs, must not both start one.
// The first to create the claim file launches the job and writes the process it started there;
// the other follows that process. A claim of a dead plan of this host is taken over.
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { hostname } from "node:os";
import { dirname } from "node:path";

import type { JobFiles } from "./job.js";
import { processAlive } from "./job.js";
import { writeJsonAtomic } from "./xpm-files.js";

export interface LaunchClaim {
  readonly host: string;
  readonly pid: number;
  /** The plan's scheduler (several may run in one process). */
  readonly plan: string;
  readonly time: string;
  /** The process the plan started, once it did. */
  readonly process?: Readonly<Record<string, unknown>>;
}

/** How long a claim of another host without a process is believed (a plan killed while it launched). */
const FOREIGN_CLAIM_MS = 15 * 60_000;

/** How long an unreadable claim may be in the middle of its write. */
const TORN_MS = 10_000;

function tornFor(file: string, ms: number): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs > ms;
  } catch {
    return true;
  }
}

export function readLaunchClaim(job: JobFiles): LaunchClaim | undefined {
  try {
    const claim = JSON.parse(readFileSync(job.claimFile, "utf8")) as Partial<LaunchClaim>;
    if (typeof claim.host !== "string" || typeof claim.pid !== "number" || typeof claim.plan !== "string") return undefined;
    return claim as LaunchClaim;
  } catch {
    return undefined;
  }
}

/** Whether a claim still stands: its plan lives (or, on another host, launched not long ago). */
export function claimStands(claim: LaunchClaim, now = Date.now()): boolean {
  if (claim.host === hostname()) return processAlive(claim.pid);
  return claim.process !== undefined || now - Date.parse(claim.time) < FOREIGN_CLAIM_MS;
}

/** Claims the launch of the job for `plan`; false when another plan's claim stands. */
export function takeLaunchClaim(job: JobFiles, plan: string): boolean {
  mkdirSync(dirname(job.claimFile), { recursive: true });
  const mine: LaunchClaim = { host: hostname(), pid: process.pid, plan, time: new Date().toISOString() };
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(job.claimFile, "wx");
      writeSync(fd, JSON.stringify(mine));
      closeSync(fd);
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
    const held = readLaunchClaim(job);
    if (held?.plan === plan) return true;
    // Unreadable: being written right now, or torn by a crash once it is older than that.
    if (held === undefined ? !tornFor(job.claimFile, TORN_MS) : claimStands(held)) return false;
    rmSync(job.claimFile, { force: true });
  }
  return false;
}

/** Writes the process `plan` started into its claim, for the plans that follow it. */
export function noteClaimProcess(job: JobFiles, plan: string, record: Readonly<Record<string, unknown>>): void {
  const held = readLaunchClaim(job);
  if (held?.plan === plan) writeJsonAtomic(job.claimFile, { ...held, process: record }, false);
}

/** Gives the claim up (the job ended, or will be launched again). */
export function releaseLaunchClaim(job: JobFiles, plan: string): void {
  if (readLaunchClaim(job)?.plan === plan) rmSync(job.claimFile, { force: true });
}
