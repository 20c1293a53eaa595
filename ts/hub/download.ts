// One blob of the cache, downloaded whole or not at all: the body grows in a partial file,
// resumed with a Range request after a broken connection, checked (size; sha256 of LFS files),
// and only then renamed to `blobs/<etag>`.
import { createHash, type Hash } from "node:crypto";
import { createReadStream, existsSync, mkdirSync, renameSync, rmSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import { dirname } from "node:path";

import type { RepoCache } from "./cache.js";
import { type FileMetadata, HttpStatusError, type HubServer, NetworkError, networkError, openBody } from "./http.js";
import { acquireLock } from "./lock.js";
import type { DownloadDisplay } from "./progress.js";

/** A download's tries: a broken connection is resumed where it stopped, this many times in all. */
const ATTEMPTS = 3;
const SHA256 = /^[0-9a-f]{64}$/;

/** The downloaded body is not what the server announced (size, or sha256 of an LFS file); nothing was kept. */
export class CorruptBlobError extends Error {}

export interface BlobDownload {
  readonly cache: RepoCache;
  /** The file of the repository, for the display. */
  readonly file: string;
  readonly metadata: FileMetadata;
  readonly server: HubServer;
  /** How long the server may stay silent during a body. */
  readonly silenceMs: number;
  readonly display: DownloadDisplay;
}

// Not Python's `<etag>.incomplete`: Python and xpm-torch do not share a lock (lock.ts), so they
// must not append to one partial file either.
export function partialPath(cache: RepoCache, etag: string): string {
  return `${cache.blob(etag)}.xpm-torch.incomplete`;
}

export function lockPath(cache: RepoCache, etag: string): string {
  return `${cache.lockDir()}/${etag}.xpm-torch.lock`;
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** An abort signal that fires after `ms` without a `kick()`. */
function silenceWatch(ms: number) {
  const controller = new AbortController();
  let timer = setTimeout(() => controller.abort(), ms);
  return {
    signal: controller.signal,
    kick() {
      clearTimeout(timer);
      timer = setTimeout(() => controller.abort(), ms);
    },
    stop: () => clearTimeout(timer),
  };
}

/** The response to the GET from byte `start`, starting over without a Range when the server refuses it (416). */
async function openFrom(job: BlobDownload, partial: string, start: number, signal: AbortSignal): Promise<Response> {
  try {
    return await openBody(job.metadata.location, job.server, start, signal);
  } catch (error) {
    if (!(error instanceof HttpStatusError && error.status === 416 && start > 0)) throw error;
    rmSync(partial, { force: true });
    return openBody(job.metadata.location, job.server, 0, signal);
  }
}

/** The sha256 of `path`'s bytes so far, for an LFS file (whose etag is its sha256), else undefined. */
async function hashSoFar(job: BlobDownload, path: string, bytes: number): Promise<Hash | undefined> {
  if (!SHA256.test(job.metadata.etag)) return undefined;
  const hash = createHash("sha256");
  if (bytes > 0) for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash;
}

/** Appends the body to `partial` from byte `start` (or writes it anew on a 200); the hash of the whole file, for an LFS file. */
async function receive(job: BlobDownload, partial: string, start: number): Promise<Hash | undefined> {
  // Hashed before the request, so that a long read of a big partial file is no silence of the server.
  const resumedHash = await hashSoFar(job, partial, start);
  const watch = silenceWatch(job.silenceMs);
  try {
    const response = await openFrom(job, partial, start, watch.signal);
    const resumed = response.status === 206 && start > 0;
    if (resumed && !response.headers.get("content-range")?.startsWith(`bytes ${start}-`)) {
      await response.body?.cancel();
      rmSync(partial, { force: true });
      throw new NetworkError(`the server resumed ${job.file} at another byte than ${start}`);
    }
    const hash = resumed ? resumedHash : await hashSoFar(job, partial, 0);
    const output = await open(partial, resumed ? "a" : "w");
    let bytes = resumed ? start : 0;
    const progress = job.display.file(job.file, job.metadata.size, bytes);
    try {
      for await (const chunk of response.body ?? []) {
        watch.kick();
        await output.write(chunk);
        hash?.update(chunk);
        progress.update((bytes += chunk.length));
      }
    } finally {
      await output.close();
      progress.done();
    }
    return hash;
  } catch (error) {
    // The file system's errors (a full disk) are no network failure to retry.
    const fileSystem = typeof (error as NodeJS.ErrnoException).syscall === "string";
    throw fileSystem || error instanceof HttpStatusError || error instanceof NetworkError ? error : networkError(error);
  } finally {
    watch.stop();
  }
}

/** Throws CorruptBlobError (and removes `partial`) unless it has the announced size and, for an LFS file, sha256. */
function verify(job: BlobDownload, partial: string, hash: Hash | undefined): void {
  const { etag, size } = job.metadata;
  const actual = sizeOf(partial);
  let problem: string | undefined;
  if (size !== undefined && actual !== size) problem = `${actual} bytes where the server announced ${size}`;
  else if (hash) {
    const digest = hash.digest("hex");
    if (digest !== etag) problem = `sha256 ${digest} where the server announced ${etag}`;
  }
  if (problem === undefined) return;
  rmSync(partial, { force: true });
  throw new CorruptBlobError(problem);
}

/** Downloads into the partial file (resuming it), checks it and renames it to the blob. */
async function download(job: BlobDownload): Promise<void> {
  const { etag, size } = job.metadata;
  const partial = partialPath(job.cache, etag);
  mkdirSync(dirname(partial), { recursive: true });
  for (let attempt = 1; ; attempt++) {
    if (size !== undefined && sizeOf(partial) > size) rmSync(partial, { force: true });
    const start = sizeOf(partial);
    let hash: Hash | undefined;
    try {
      // A partial file already whole (the process stopped before renaming it) needs no request.
      hash = size !== undefined && start === size ? await hashSoFar(job, partial, start) : await receive(job, partial, start);
    } catch (error) {
      if (error instanceof NetworkError && attempt < ATTEMPTS) continue;
      throw error;
    }
    verify(job, partial, hash);
    renameSync(partial, job.cache.blob(etag));
    return;
  }
}

/**
 * Makes `blobs/<etag>` hold the file `job.metadata` describes, downloading it unless it is there.
 * One process at a time downloads a blob; the others wait and find it.
 * @throws NetworkError, HttpStatusError, CorruptBlobError
 */
export async function ensureBlob(job: BlobDownload): Promise<void> {
  const { cache, metadata } = job;
  if (existsSync(cache.blob(metadata.etag))) return;
  const lock = await acquireLock(lockPath(cache, metadata.etag), {
    activity: partialPath(cache, metadata.etag),
    onWait: () => job.display.waiting(job.file),
  });
  try {
    if (!existsSync(cache.blob(metadata.etag))) await download(job);
  } finally {
    lock.release();
  }
}
