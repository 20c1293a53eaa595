// The Hub's download protocol (huggingface_hub's `file_download.py`): a HEAD for a file's metadata,
// then a GET of its body, which LFS files serve from another host.

/** Where requests go and with what token. */
export interface HubServer {
  readonly endpoint: string;
  readonly token: string | undefined;
  readonly metadataTimeoutMs: number;
}

/** What a HEAD on `/{id}/resolve/{revision}/{file}` says of the file. */
export interface FileMetadata {
  readonly commit: string;
  /** The blob name: the git blob sha1 of a small file, the sha256 of an LFS file. */
  readonly etag: string;
  readonly size: number | undefined;
  /** Where to GET the body: the storage URL an LFS file redirects to, else the file's URL. */
  readonly location: string;
}

/** The server answered with an error status; `errorCode` is its `X-Error-Code` (`RepoNotFound`, ...). */
export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly errorCode: string | undefined,
    readonly serverMessage: string | undefined,
    /** The commit of a 404 on a file (the revision exists, the file does not). */
    readonly commit: string | undefined,
    /** The host that answered, when it is not the endpoint's (an LFS file's storage). */
    readonly storageHost?: string,
  ) {
    super(`HTTP ${status}${errorCode ? ` ${errorCode}` : ""}${serverMessage ? `: ${serverMessage}` : ""}`);
  }
}

/** No answer: the server could not be reached, the connection broke, or it fell silent. */
export class NetworkError extends Error {}

/** The server answered, but not as the Hub does (no commit or no ETag). */
export class NotAHubError extends Error {}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 10;
const COMMIT = /^[0-9a-f]{40}$/;
const ETAG = /^[\w-]+$/;

/** `{endpoint}/{id}/resolve/{revision}/{file}`, the revision encoded whole (`refs%2Fpr%2F1`), the file by segment. */
export function resolveUrl(endpoint: string, id: string, revision: string, file: string): string {
  const path = file.split("/").map(encodeURIComponent).join("/");
  return `${endpoint}/${id}/resolve/${encodeURIComponent(revision)}/${path}`;
}

/** The request's headers; the token goes to the endpoint's host only, never to a storage host. */
function headersFor(url: string, server: HubServer, extra: Record<string, string> = {}): Record<string, string> {
  const headers: Record<string, string> = { "accept-encoding": "identity", "user-agent": `xpm-torch; node/${process.versions.node}`, ...extra };
  if (server.token && new URL(url).host === new URL(server.endpoint).host) headers.authorization = `Bearer ${server.token}`;
  return headers;
}

/** Why a request got no answer, in a few words (`ECONNREFUSED`, `timed out`, ...). */
function describeFailure(error: unknown): string {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return "no answer in time";
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  // A system error's code (ECONNREFUSED, ENOTFOUND) says more than its message; undici's codes less.
  if (cause && typeof cause.code === "string" && /^E[A-Z0-9_]+$/.test(cause.code)) return cause.code;
  if (cause && typeof cause.message === "string") return cause.message;
  return error instanceof Error ? error.message : String(error);
}

export function networkError(error: unknown): NetworkError {
  return error instanceof NetworkError ? error : new NetworkError(describeFailure(error), { cause: error });
}

async function send(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, { ...init, redirect: "manual" });
  } catch (error) {
    throw networkError(error);
  }
}

async function statusError(response: Response, url: string, server: HubServer): Promise<HttpStatusError> {
  await response.body?.cancel();
  const header = (name: string) => response.headers.get(name) ?? undefined;
  const commit = header("x-repo-commit");
  const host = new URL(url).host;
  const storageHost = host === new URL(server.endpoint).host ? undefined : host;
  return new HttpStatusError(response.status, header("x-error-code"), header("x-error-message"), commit && COMMIT.test(commit) ? commit : undefined, storageHost);
}

/** An ETag without its quotes and weak prefix. */
function normalizeEtag(etag: string | null): string | undefined {
  return etag?.replace(/^W\//, "").replace(/^"(.*)"$/, "$1") || undefined;
}

function sizeOf(text: string | null): number | undefined {
  const size = text === null ? Number.NaN : Number(text);
  return Number.isSafeInteger(size) && size >= 0 ? size : undefined;
}

/**
 * The metadata of the file at `url`: a HEAD that follows only relative redirects (a renamed
 * repository); an absolute one is an LFS file's storage, whose headers are read, not followed.
 */
export async function fileMetadata(url: string, server: HubServer): Promise<FileMetadata> {
  let current = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const response = await send(current, { method: "HEAD", headers: headersFor(current, server), signal: AbortSignal.timeout(server.metadataTimeoutMs) });
    const location = response.headers.get("location");
    if (REDIRECTS.has(response.status) && location && !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(location)) {
      current = new URL(location, current).href;
      continue;
    }
    if (response.status >= 400) throw await statusError(response, current, server);
    const commit = response.headers.get("x-repo-commit") ?? undefined;
    const etag = normalizeEtag(response.headers.get("x-linked-etag") ?? response.headers.get("etag"));
    if (!commit || !etag) throw new NotAHubError(`${current} answered without ${commit ? "an ETag" : "X-Repo-Commit"}`);
    // Both name folders and files of the cache.
    if (!COMMIT.test(commit) || !ETAG.test(etag)) throw new NotAHubError(`${current} answered a commit ${commit} and ETag ${etag} that are no hashes`);
    const size = sizeOf(response.headers.get("x-linked-size") ?? response.headers.get("content-length"));
    return { commit, etag, size, location: location ? new URL(location, current).href : current };
  }
  throw new NotAHubError(`${url}: more than ${MAX_REDIRECTS} redirects`);
}

/**
 * A GET of the body at `url` from byte `start` (a `Range` request when above 0), following
 * redirects; answers 200 (whole) or 206 (from `start`). `signal` stops it.
 */
export async function openBody(url: string, server: HubServer, start: number, signal: AbortSignal): Promise<Response> {
  let current = url;
  for (let hop = 0; hop <= MAX_REDIRECTS; hop++) {
    const range: Record<string, string> = start > 0 ? { range: `bytes=${start}-` } : {};
    const response = await send(current, { method: "GET", headers: headersFor(current, server, range), signal });
    const location = response.headers.get("location");
    if (REDIRECTS.has(response.status) && location) {
      await response.body?.cancel();
      current = new URL(location, current).href;
      continue;
    }
    if (response.status !== 200 && response.status !== 206) throw await statusError(response, current, server);
    return response;
  }
  throw new NotAHubError(`${url}: more than ${MAX_REDIRECTS} redirects`);
}
