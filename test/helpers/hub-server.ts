// A Hugging Face Hub of the test's own: `/{id}/resolve/{revision}/{file}` answered as the Hub does
// (X-Repo-Commit, ETag, LFS files redirected to a second server standing in for the storage host,
// X-Error-Code on errors, Range requests), with faults on demand and a log of every request.
import { createHash } from "node:crypto";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/** One repository: its refs (branch or tag → commit) and each commit's files. */
export interface FakeRepo {
  readonly id: string;
  readonly refs: Readonly<Record<string, string>>;
  readonly commits: Readonly<Record<string, Readonly<Record<string, string | Uint8Array>>>>;
  /** Private (or gated) with this token. */
  readonly token?: string;
  /** Gated: 401 without a token, 403 with another one. */
  readonly gated?: boolean;
  /** Former ids, answered with a relative redirect to this one (a renamed repository). */
  readonly aliases?: readonly string[];
}

export interface LoggedRequest {
  readonly server: "hub" | "storage";
  readonly method: string;
  /** The path as sent, still encoded. */
  readonly url: string;
  readonly headers: IncomingMessage["headers"];
}

export interface FakeHub {
  /** The hub's URL (for HF_ENDPOINT). */
  readonly endpoint: string;
  /** The storage host's URL (LFS bodies). */
  readonly storage: string;
  readonly requests: LoggedRequest[];
  /** The files whose body was sent (once per GET that sent bytes). */
  readonly bodies: string[];
  /** Cut the connection after `afterBytes` bytes of `file`'s body, `times` times. */
  cut: { file: string; afterBytes: number; times: number } | undefined;
  /** Files whose body is sent with its bytes altered (same length). */
  corrupt: Set<string>;
  /** Each body is sent in 5 parts this far apart. */
  chunkDelayMs: number;
  close(): Promise<void>;
}

/** The git blob id of `content`: the Hub's ETag of a small file. */
export function gitBlobSha1(content: Uint8Array): string {
  return createHash("sha1").update(`blob ${content.length}\0`).update(content).digest("hex");
}

export function sha256(content: Uint8Array): string {
  return createHash("sha256").update(content).digest("hex");
}

/** A 40-hex commit named by `seed`. */
export function fakeCommit(seed: string): string {
  return createHash("sha1").update(`commit ${seed}`).digest("hex");
}

/** `size` bytes that depend on `seed`. */
export function fakeBytes(size: number, seed = 1): Buffer {
  const bytes = Buffer.alloc(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed * 17) % 251;
  return bytes;
}

/** LFS on the Hub: the weights. */
export function isLfs(file: string): boolean {
  return /\.(safetensors|bin)$/.test(file);
}

function bytesOf(content: string | Uint8Array): Buffer {
  return Buffer.from(content);
}

interface Resolved {
  readonly repo: FakeRepo;
  readonly alias?: string;
  readonly revision: string;
  readonly file: string;
}

/** `/{id}/resolve/{revision}/{file}`, the id of one or two segments. */
function parseResolve(url: string, repos: readonly FakeRepo[]): Resolved | { readonly missing: true } | undefined {
  const path = url.split("?")[0] ?? "";
  const at = path.indexOf("/resolve/");
  if (at < 0) return undefined;
  const id = path.slice(1, at);
  const [revision = "", ...file] = path.slice(at + "/resolve/".length).split("/");
  const repo = repos.find((r) => r.id === id) ?? repos.find((r) => r.aliases?.includes(id));
  if (!repo) return { missing: true };
  return { repo, ...(repo.id === id ? {} : { alias: id }), revision: decodeURIComponent(revision), file: file.map(decodeURIComponent).join("/") };
}

function fail(res: ServerResponse, status: number, code?: string, message?: string, commit?: string): void {
  res.writeHead(status, { ...(code ? { "x-error-code": code } : {}), ...(message ? { "x-error-message": message } : {}), ...(commit ? { "x-repo-commit": commit } : {}) });
  res.end();
}

/** Whether the request may read `repo`; answers the refusal when not. */
function authorized(repo: FakeRepo, req: IncomingMessage, res: ServerResponse): boolean {
  if (!repo.token) return true;
  const auth = req.headers.authorization;
  if (auth === `Bearer ${repo.token}`) return true;
  if (repo.gated) fail(res, auth ? 403 : 401, "GatedRepo", "Access to this model is restricted.");
  else if (auth) fail(res, 401, undefined, "Invalid credentials in Authorization header");
  else fail(res, 401, "RepoNotFound", "Repository not found");
  return false;
}

export async function startFakeHub(repos: readonly FakeRepo[]): Promise<FakeHub> {
  const hub: FakeHub = {
    endpoint: "",
    storage: "",
    requests: [],
    bodies: [],
    cut: undefined,
    corrupt: new Set(),
    chunkDelayMs: 0,
    close: async () => {},
  };
  const lfs = new Map<string, { file: string; content: Buffer }>();
  for (const repo of repos) {
    for (const files of Object.values(repo.commits)) {
      for (const [file, content] of Object.entries(files)) if (isLfs(file)) lfs.set(sha256(bytesOf(content)), { file, content: bytesOf(content) });
    }
  }

  /** Sends `content` (or the range asked), with the faults set for `file`. */
  async function sendBody(req: IncomingMessage, res: ServerResponse, file: string, content: Buffer, headers: Record<string, string>): Promise<void> {
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? "");
    const start = range ? Number(range[1]) : 0;
    if (start > content.length || (range && start === content.length)) return fail(res, 416);
    let body = content.subarray(start);
    if (hub.corrupt.has(file)) body = Buffer.from(body.map((b) => b ^ 0xff));
    res.writeHead(range ? 206 : 200, {
      ...headers,
      "accept-ranges": "bytes",
      "content-length": String(body.length),
      ...(range ? { "content-range": `bytes ${start}-${content.length - 1}/${content.length}` } : {}),
    });
    if (req.method === "HEAD") return void res.end();
    hub.bodies.push(file);
    const cut = hub.cut?.file === file && hub.cut.times > 0 ? hub.cut : undefined;
    if (cut) {
      cut.times--;
      // Broken a while after the bytes sent, so that the client has read them (a stream's error
      // drops the chunks not yet read).
      res.write(body.subarray(0, cut.afterBytes));
      await sleep(100);
      res.socket?.destroy();
      return;
    }
    const part = Math.ceil(body.length / 5);
    for (let i = 0; i < body.length; i += part) {
      if (hub.chunkDelayMs > 0) await sleep(hub.chunkDelayMs);
      res.write(body.subarray(i, i + part));
    }
    res.end();
  }

  async function answerHub(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? "/";
    const asked = parseResolve(url, repos);
    if (!asked) return fail(res, 404);
    if ("missing" in asked) return fail(res, 404, "RepoNotFound", "Repository not found");
    const { repo, alias, revision, file } = asked;
    if (alias) {
      res.writeHead(307, { location: url.replace(`/${alias}/resolve/`, `/${repo.id}/resolve/`) });
      return void res.end();
    }
    if (!authorized(repo, req, res)) return;
    const commit = repo.refs[revision] ?? (repo.commits[revision] ? revision : undefined);
    if (!commit) return fail(res, 404, "RevisionNotFound", "Invalid rev id");
    const content = repo.commits[commit]?.[file];
    if (content === undefined) return fail(res, 404, "EntryNotFound", "Entry not found", commit);
    const bytes = bytesOf(content);
    if (isLfs(file)) {
      const sha = sha256(bytes);
      res.writeHead(302, {
        location: `${hub.storage}/lfs/${sha}?signed=1`,
        "x-repo-commit": commit,
        "x-linked-etag": `"${sha}"`,
        "x-linked-size": String(bytes.length),
        etag: `"${gitBlobSha1(Buffer.from(`version https://git-lfs.github.com/spec/v1\noid sha256:${sha}\n`))}"`,
      });
      return void res.end();
    }
    await sendBody(req, res, file, bytes, { "x-repo-commit": commit, etag: `"${gitBlobSha1(bytes)}"` });
  }

  async function answerStorage(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const blob = lfs.get(/^\/lfs\/([0-9a-f]{64})/.exec(req.url ?? "")?.[1] ?? "");
    if (!blob) return fail(res, 404);
    await sendBody(req, res, blob.file, blob.content, { etag: `"${sha256(blob.content)}"` });
  }

  const serve = (name: "hub" | "storage", answer: (req: IncomingMessage, res: ServerResponse) => Promise<void>): Server =>
    createServer((req, res) => {
      hub.requests.push({ server: name, method: req.method ?? "", url: req.url ?? "", headers: req.headers });
      answer(req, res).catch(() => res.socket?.destroy());
    });
  const servers = [serve("hub", answerHub), serve("storage", answerStorage)];
  const urls = await Promise.all(
    servers.map(
      (server) =>
        new Promise<string>((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`))),
    ),
  );
  Object.assign(hub, {
    endpoint: urls[0],
    storage: urls[1],
    close: async () => {
      for (const server of servers) server.closeAllConnections();
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    },
  });
  return hub;
}
