// One lock per blob, so that processes started together (the jobs of a plan) download it once.
//
// Not Python's lock file (`.locks/models--ORG--NAME/<etag>.lock`): filelock opens that path with
// O_TRUNC and flock()s it, and leaves the file behind on release, so its presence does not mean
// "held"; Node cannot flock(); and deleting that path while a Python process holds its flock
// would let the next Python process lock a new file beside it, breaking Python's own exclusion.
// So ours is a sibling, `<etag>.xpm-torch.lock`, created exclusively: it exists while held, and
// holds `pid hostname nonce` so that a dead holder's lock can be taken over.
import { randomBytes } from "node:crypto";
import { linkSync, mkdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/** A lock whose holder shows no sign of life for this long is taken over. */
export const STALE_LOCK_MS = 10 * 60 * 1000;
const POLL_MS = 100;

export interface LockOptions {
  /** The file the holder writes to (its growth shows the holder is alive). */
  readonly activity: string;
  readonly staleMs?: number;
  /** Called once when another holder makes this one wait. */
  readonly onWait?: () => void;
}

export interface HeldLock {
  release(): void;
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

function mtimeMs(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errno(error) === "EPERM";
  }
}

/** Creates `path` holding `text`, atomically: it never exists empty. False when it exists. */
function createExclusively(path: string, text: string): boolean {
  const temporary = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  writeFileSync(temporary, text);
  try {
    linkSync(temporary, path);
    return true;
  } catch (error) {
    if (errno(error) === "EEXIST") return false;
    throw error;
  } finally {
    unlinkSync(temporary);
  }
}

/** Whether the lock holding `text` is abandoned: its process is dead on this host, or it has been silent too long. */
function isStale(path: string, text: string, options: LockOptions): boolean {
  const [pid, host] = text.split(" ");
  if (host === hostname() && Number(pid) > 0 && !isAlive(Number(pid))) return true;
  const lastSign = Math.max(mtimeMs(path), mtimeMs(options.activity));
  return lastSign > 0 && Date.now() - lastSign > (options.staleMs ?? STALE_LOCK_MS);
}

/**
 * Removes the abandoned lock that held `text`. It is first moved aside, so that of several
 * waiters judging it stale only one removes it; a fresh lock moved aside by mistake is put back.
 */
function takeOver(path: string, text: string): void {
  const aside = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.stale`;
  try {
    renameSync(path, aside);
  } catch (error) {
    if (errno(error) === "ENOENT") return;
    throw error;
  }
  try {
    if (readText(aside) !== text) linkSync(aside, path);
  } catch (error) {
    if (errno(error) !== "EEXIST") throw error;
  } finally {
    unlinkSync(aside);
  }
}

/** Waits until this process holds the lock at `path`, taking over an abandoned one. */
export async function acquireLock(path: string, options: LockOptions): Promise<HeldLock> {
  mkdirSync(dirname(path), { recursive: true });
  const mine = `${process.pid} ${hostname()} ${randomBytes(8).toString("hex")}`;
  let waited = false;
  while (!createExclusively(path, mine)) {
    const held = readText(path);
    if (held !== undefined && isStale(path, held, options)) {
      takeOver(path, held);
      continue;
    }
    if (!waited) options.onWait?.();
    waited = true;
    await sleep(POLL_MS);
  }
  return {
    release() {
      if (readText(path) === mine) unlinkSync(path);
    },
  };
}
