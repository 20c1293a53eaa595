// A Hugging Face Hub model in Python's cache: found there without a request, or downloaded into
// it as huggingface_hub does, one commit for all of its files.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { RepoCache, isCommitHash, isHubId, isSafeRevision } from "./cache.js";
import { ensureBlob } from "./download.js";
import { hubCacheDir, hubEndpoint, hubTimeouts, hubToken, isOffline } from "./env.js";
import { type FailureContext, badIndex, badName, binOnly, offlineMissing, toHubError } from "./failure.js";
import { OPTIONAL_FILES, PICKLED_WEIGHTS, REQUIRED_FILES, WEIGHTS, WEIGHTS_INDEX, hasCachedWeights, shardsOf } from "./files.js";
import { HttpStatusError, type HubServer, fileMetadata, resolveUrl } from "./http.js";
import { type DownloadDisplay, downloadDisplay } from "./progress.js";

export { hubCacheDir } from "./env.js";
export { isHubId } from "./cache.js";

export interface HubModel {
  /** "ORG/NAME" as written. */
  readonly id: string;
  /** As asked ("main" by default). */
  readonly revision: string;
  /** The 40-hex commit used. */
  readonly commit: string;
  /** The absolute `snapshots/<commit>` folder, holding the model's files (symlinks into `blobs/`). */
  readonly directory: string;
}

export interface HubOptions {
  /** Default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Where downloads show: a bar when it is a terminal, a line per file otherwise; default `process.stderr`. */
  readonly progress?: NodeJS.WritableStream | false;
}

/** One model being fetched: where from, where to, and the commit once the server named it. */
interface Fetch {
  readonly id: string;
  readonly revision: string;
  readonly cache: RepoCache;
  readonly server: HubServer;
  readonly silenceMs: number;
  readonly display: DownloadDisplay;
  readonly env: NodeJS.ProcessEnv;
  commit: string | undefined;
  /** The file being fetched, for errors. */
  file: string | undefined;
}

function modelAt(cache: RepoCache, revision: string, commit: string): HubModel {
  return { id: cache.id, revision, commit, directory: cache.snapshot(commit) };
}

/**
 * The model as the cache holds it, without any request: `refs/<revision>` (or `revision` itself
 * when it is a 40-hex commit) → `snapshots/<commit>` holding every required file; undefined when
 * not complete there.
 */
export function cachedHubModel(id: string, revision = "main", env: NodeJS.ProcessEnv = process.env): HubModel | undefined {
  if (!isHubId(id) || !isSafeRevision(revision)) return undefined;
  const cache = new RepoCache(hubCacheDir(env), id);
  const commit = cache.commitOf(revision);
  if (commit === undefined) return undefined;
  const complete = REQUIRED_FILES.every((file) => cache.hasFile(commit, file)) && hasCachedWeights(cache, commit);
  return complete ? modelAt(cache, revision, commit) : undefined;
}

function failureContext(id: string, revision: string, env: NodeJS.ProcessEnv, fetch?: Fetch): FailureContext {
  return {
    id,
    revision,
    cache: hubCacheDir(env),
    endpoint: hubEndpoint(env),
    ...(fetch?.file ? { file: fetch.file } : {}),
    tokenSent: fetch?.server.token !== undefined,
    cached: () => cachedHubModel(id, revision, env) !== undefined,
  };
}

function startFetch(id: string, revision: string, options: HubOptions): Fetch {
  const env = options.env ?? process.env;
  const timeouts = hubTimeouts(env);
  return {
    id,
    revision,
    cache: new RepoCache(hubCacheDir(env), id),
    server: { endpoint: hubEndpoint(env), token: hubToken(env), metadataTimeoutMs: timeouts.metadataMs },
    silenceMs: timeouts.downloadMs,
    display: downloadDisplay(id, options.progress ?? process.stderr),
    env,
    commit: isCommitHash(revision) ? revision : undefined,
    file: undefined,
  };
}

/**
 * Puts `file` into the snapshot: "present" when it is (already, or now), "absent" when the
 * repository lacks it and it is `optional` (recorded in `.no_exist/`, as Python does).
 * Requests after the first are made at the commit the first named.
 */
async function fetchFile(fetch: Fetch, file: string, optional: boolean): Promise<"present" | "absent"> {
  const { cache } = fetch;
  fetch.file = file;
  if (fetch.commit && cache.hasFile(fetch.commit, file)) return "present";
  if (fetch.commit && optional && cache.knownMissing(fetch.commit, file)) return "absent";
  let metadata;
  try {
    metadata = await fileMetadata(resolveUrl(fetch.server.endpoint, fetch.id, fetch.commit ?? fetch.revision, file), fetch.server);
  } catch (error) {
    if (!(optional && error instanceof HttpStatusError && error.errorCode === "EntryNotFound")) throw error;
    fetch.commit ??= error.commit;
    if (fetch.commit) cache.markMissing(fetch.commit, file);
    return "absent";
  }
  fetch.commit ??= metadata.commit;
  // A file the endpoint serves itself is fetched at the commit, in case the branch moves meanwhile.
  const onEndpoint = new URL(metadata.location).host === new URL(fetch.server.endpoint).host;
  const location = onEndpoint ? resolveUrl(fetch.server.endpoint, fetch.id, fetch.commit, file) : metadata.location;
  await ensureBlob({ cache, file, metadata: { ...metadata, location }, server: fetch.server, silenceMs: fetch.silenceMs, display: fetch.display });
  cache.link(fetch.commit, file, metadata.etag);
  return "present";
}

/** Whether the repository has `file`, by a HEAD. */
async function hasRemoteFile(fetch: Fetch, file: string): Promise<boolean> {
  try {
    await fileMetadata(resolveUrl(fetch.server.endpoint, fetch.id, fetch.commit ?? fetch.revision, file), fetch.server);
    return true;
  } catch (error) {
    if (error instanceof HttpStatusError && error.errorCode === "EntryNotFound") return false;
    throw error;
  }
}

function readShards(fetch: Fetch, commit: string): string[] {
  try {
    return shardsOf(readFileSync(join(fetch.cache.snapshot(commit), WEIGHTS_INDEX), "utf8"));
  } catch (error) {
    throw badIndex(failureContext(fetch.id, fetch.revision, fetch.env, fetch), (error as Error).message);
  }
}

/** `model.safetensors`, else the index and its shards; a repository of `.bin` weights only is refused. */
async function fetchWeights(fetch: Fetch): Promise<void> {
  if ((await fetchFile(fetch, WEIGHTS, true)) === "present") return;
  if ((await fetchFile(fetch, WEIGHTS_INDEX, true)) === "present") {
    for (const shard of readShards(fetch, fetch.commit as string)) await fetchFile(fetch, shard, false);
    return;
  }
  if (await hasRemoteFile(fetch, PICKLED_WEIGHTS)) throw binOnly(failureContext(fetch.id, fetch.revision, fetch.env));
  // Asked again as required, for the server's own "entry not found".
  await fetchFile(fetch, WEIGHTS, false);
}

async function fetchModel(fetch: Fetch): Promise<HubModel> {
  try {
    for (const file of REQUIRED_FILES) await fetchFile(fetch, file, false);
    await fetchWeights(fetch);
    for (const file of OPTIONAL_FILES) await fetchFile(fetch, file, true);
  } catch (error) {
    throw toHubError(error, failureContext(fetch.id, fetch.revision, fetch.env, fetch));
  }
  const commit = fetch.commit as string;
  // The ref moves last, so that a download cut short leaves it at the last whole snapshot.
  fetch.cache.writeRef(fetch.revision, commit);
  return modelAt(fetch.cache, fetch.revision, commit);
}

function checkName(id: string, revision: string, env: NodeJS.ProcessEnv): void {
  if (!isHubId(id) || !isSafeRevision(revision)) throw badName(failureContext(id, revision, env));
}

/**
 * The model from the cache when complete there (no request at all), else downloaded (files
 * missing only). Under HF_HUB_OFFLINE=1 (or TRANSFORMERS_OFFLINE=1): never a request.
 * @throws HubError (reason "offline-missing" when offline and not in the cache)
 */
export async function hubModel(id: string, revision = "main", options: HubOptions = {}): Promise<HubModel> {
  const env = options.env ?? process.env;
  checkName(id, revision, env);
  const cached = cachedHubModel(id, revision, env);
  if (cached) return cached;
  if (isOffline(env)) throw offlineMissing(failureContext(id, revision, env));
  return fetchModel(startFetch(id, revision, options));
}

/**
 * Always asks the server what `revision` points at now and fetches what is missing (the CLI's
 * `download`); offline, the cache's model.
 * @throws HubError
 */
export async function downloadHubModel(id: string, revision = "main", options: HubOptions = {}): Promise<HubModel> {
  const env = options.env ?? process.env;
  checkName(id, revision, env);
  if (isOffline(env)) {
    const cached = cachedHubModel(id, revision, env);
    if (cached) return cached;
    throw offlineMissing(failureContext(id, revision, env));
  }
  return fetchModel(startFetch(id, revision, options));
}
