// The Hub download layer (ts/hub/) against a Hub of the test's own: Python's cache layout, no
// request for a cached model, one commit per model, LFS storage without the token, resumed and
// checked downloads, one download of a blob among concurrent processes, offline mode, the errors,
// and the `download` command.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { runCli } from "../ts/cli/main.js";
import { HubError } from "../ts/errors.js";
import { cachedHubModel, downloadHubModel, hubCacheDir, hubModel, isHubId } from "../ts/hub/model.js";
import { type FakeHub, type FakeRepo, fakeBytes, fakeCommit, gitBlobSha1, sha256, startFakeHub } from "./helpers/hub-server.js";
import { repoRoot } from "./helpers/node.js";

const MAIN = fakeCommit("main");
const V1 = fakeCommit("v1");
const PR = fakeCommit("pr");

const FILES = {
  "config.json": '{"model_type":"bert"}',
  "tokenizer.json": '{"model":{"type":"WordPiece"}}',
  "model.safetensors": fakeBytes(6000),
  "tokenizer_config.json": "{}",
  "modules.json": "[]",
  "1_Pooling/config.json": '{"pooling_mode_cls_token":true}',
};
const ABSENT_OPTIONAL = ["special_tokens_map.json", "vocab.txt", "sentence_bert_config.json", "config_sentence_transformers.json"];

const SHARD_1 = "model-00001-of-00002.safetensors";
const SHARD_2 = "model-00002-of-00002.safetensors";
const INDEX = JSON.stringify({ metadata: { total_size: 5000 }, weight_map: { "a.weight": SHARD_1, "b.weight": SHARD_2, "c.weight": SHARD_1 } });

const REPOS: FakeRepo[] = [
  {
    id: "org/tiny",
    refs: { main: MAIN, v1: V1, "refs/pr/1": PR },
    commits: {
      [MAIN]: FILES,
      [V1]: { ...FILES, "config.json": '{"model_type":"bert","v":1}' },
      [PR]: { ...FILES, "config.json": '{"model_type":"bert","pr":1}' },
    },
    aliases: ["tiny-old-name"],
  },
  {
    id: "org/sharded",
    refs: { main: MAIN },
    commits: { [MAIN]: { "config.json": "{}", "tokenizer.json": "{}", "model.safetensors.index.json": INDEX, [SHARD_1]: fakeBytes(3000, 2), [SHARD_2]: fakeBytes(2000, 3) } },
  },
  { id: "org/private", refs: { main: MAIN }, commits: { [MAIN]: FILES }, token: "hf_good" },
  { id: "org/gated", refs: { main: MAIN }, commits: { [MAIN]: FILES }, token: "hf_good", gated: true },
  { id: "org/no-tokenizer", refs: { main: MAIN }, commits: { [MAIN]: { "config.json": "{}", "model.safetensors": fakeBytes(100) } } },
  { id: "org/pickled", refs: { main: MAIN }, commits: { [MAIN]: { "config.json": "{}", "tokenizer.json": "{}", "pytorch_model.bin": fakeBytes(100) } } },
];

let hub: FakeHub;
const temporary: string[] = [];

beforeAll(async () => {
  hub = await startFakeHub(REPOS);
});
afterAll(async () => {
  await hub.close();
  for (const dir of temporary) rmSync(dir, { recursive: true, force: true });
});
afterEach(() => {
  hub.cut = undefined;
  hub.corrupt.clear();
  hub.chunkDelayMs = 0;
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  temporary.push(dir);
  return dir;
}

/** An empty cache, the fake Hub as endpoint, and a HF_HOME of its own (no token of the machine's). */
function freshEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const home = tempDir("xpm-hf-home-");
  return { HF_HOME: home, HF_HUB_CACHE: join(home, "hub"), HF_ENDPOINT: hub.endpoint, ...extra };
}

const quiet = (env: NodeJS.ProcessEnv) => ({ env, progress: false as const });

function repoDir(env: NodeJS.ProcessEnv, id: string): string {
  return join(hubCacheDir(env), `models--${id.replace("/", "--")}`);
}

/** The requests made while `action` ran. */
async function requestsDuring<T>(action: () => Promise<T>): Promise<{ result: T; requests: FakeHub["requests"] }> {
  const before = hub.requests.length;
  const result = await action();
  return { result, requests: hub.requests.slice(before) };
}

async function failure(promise: Promise<unknown>): Promise<HubError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(HubError);
  return error as HubError;
}

describe("hub ids", () => {
  it("accepts the Hub's ids and refuses the others", () => {
    for (const id of ["bert-base-uncased", "org/name", "sentence-transformers/all-MiniLM-L6-v2", "a/b.c_d-e", "x"]) expect(isHubId(id), id).toBe(true);
    for (const id of ["", "a/b/c", "-a", "a-", "a--b", "a..b", "a/b.git", "a b", "/a", "a/", "../x", `a/${"n".repeat(97)}`]) expect(isHubId(id), id).toBe(false);
  });

  it("names the cache as huggingface_hub does", () => {
    expect(hubCacheDir({ HF_HUB_CACHE: "/c", HF_HOME: "/h" })).toBe("/c");
    expect(hubCacheDir({ HUGGINGFACE_HUB_CACHE: "/legacy", HF_HOME: "/h" })).toBe("/legacy");
    expect(hubCacheDir({ HF_HOME: "/h", XDG_CACHE_HOME: "/x" })).toBe("/h/hub");
    expect(hubCacheDir({ XDG_CACHE_HOME: "/x" })).toBe("/x/huggingface/hub");
  });
});

describe("a first use", () => {
  it("downloads into an empty cache in Python's layout, and the second use makes no request", async () => {
    const env = freshEnv();
    const { result: model, requests } = await requestsDuring(() => hubModel("org/tiny", undefined, quiet(env)));
    const repo = repoDir(env, "org/tiny");
    expect(model).toEqual({ id: "org/tiny", revision: "main", commit: MAIN, directory: join(repo, "snapshots", MAIN) });
    expect(readFileSync(join(repo, "refs", "main"), "utf8")).toBe(MAIN);
    expect(readdirSync(join(repo, "refs"))).toEqual(["main"]);

    const etags = Object.entries(FILES).map(([file, content]) => (file.endsWith(".safetensors") ? sha256(Buffer.from(content)) : gitBlobSha1(Buffer.from(content))));
    expect(readdirSync(join(repo, "blobs")).sort()).toEqual([...new Set(etags)].sort());
    for (const [file, content] of Object.entries(FILES)) {
      const pointer = join(model.directory, file);
      const depth = file.split("/").length + 1;
      const etag = file.endsWith(".safetensors") ? sha256(Buffer.from(content)) : gitBlobSha1(Buffer.from(content));
      expect(lstatSync(pointer).isSymbolicLink(), file).toBe(true);
      expect(readlinkSync(pointer)).toBe(`${"../".repeat(depth)}blobs/${etag}`);
      expect(readFileSync(pointer)).toEqual(Buffer.from(content));
    }
    for (const file of ABSENT_OPTIONAL) expect(statSync(join(repo, ".no_exist", MAIN, file)).size, file).toBe(0);
    expect(readdirSync(join(hubCacheDir(env), ".locks", "models--org--tiny"))).toEqual([]);
    // One commit for the whole model: every request after the first names it.
    const hubPaths = requests.filter((r) => r.server === "hub").map((r) => r.url);
    expect(hubPaths[0]).toBe("/org/tiny/resolve/main/config.json");
    expect(hubPaths.slice(1).every((url) => url.startsWith(`/org/tiny/resolve/${MAIN}/`))).toBe(true);
    expect(requests.filter((r) => r.server === "hub" && r.method === "HEAD").every((r) => r.headers["accept-encoding"] === "identity")).toBe(true);

    const again = await requestsDuring(() => hubModel("org/tiny", undefined, quiet(env)));
    expect(again.requests).toEqual([]);
    expect(again.result).toEqual(model);
    expect(cachedHubModel("org/tiny", "main", env)).toEqual(model);
  });

  it("downloads only what is missing, and takes a model stored under a former id", async () => {
    const env = freshEnv();
    const model = await hubModel("org/tiny", "main", quiet(env));
    const tokenizer = join(model.directory, "tokenizer.json");
    // A link lost, its blob still there: linked again without a download.
    unlinkSync(tokenizer);
    expect(cachedHubModel("org/tiny", "main", env)).toBeUndefined();
    const relinked = await requestsDuring(() => hubModel("org/tiny", "main", quiet(env)));
    expect(relinked.requests.filter((r) => r.method === "GET")).toEqual([]);
    expect(readFileSync(tokenizer, "utf8")).toBe(FILES["tokenizer.json"]);
    // The blob lost too: downloaded again, and nothing else.
    unlinkSync(join(repoDir(env, "org/tiny"), "blobs", gitBlobSha1(Buffer.from(FILES["tokenizer.json"]))));
    unlinkSync(tokenizer);
    const { requests } = await requestsDuring(() => hubModel("org/tiny", "main", quiet(env)));
    expect(requests.filter((r) => r.method === "GET").map((r) => r.url)).toEqual([`/org/tiny/resolve/${MAIN}/tokenizer.json`]);

    const renamed = await hubModel("tiny-old-name", "main", quiet(env));
    expect(renamed.directory).toBe(join(repoDir(env, "tiny-old-name"), "snapshots", MAIN));
    expect(readFileSync(join(renamed.directory, "config.json"), "utf8")).toBe(FILES["config.json"]);
  });
});

describe("revisions", () => {
  it("resolves a tag and a pull request's ref, writing their refs, and a commit without a ref", async () => {
    const env = freshEnv();
    const v1 = await hubModel("org/tiny", "v1", quiet(env));
    expect(v1.commit).toBe(V1);
    expect(readFileSync(join(v1.directory, "config.json"), "utf8")).toContain('"v":1');
    const { result: pr, requests } = await requestsDuring(() => hubModel("org/tiny", "refs/pr/1", quiet(env)));
    expect(pr.commit).toBe(PR);
    expect(requests[0]?.url).toBe("/org/tiny/resolve/refs%2Fpr%2F1/config.json");
    const refs = join(repoDir(env, "org/tiny"), "refs");
    expect(readFileSync(join(refs, "v1"), "utf8")).toBe(V1);
    expect(readFileSync(join(refs, "refs", "pr", "1"), "utf8")).toBe(PR);

    const byCommit = await hubModel("org/tiny", MAIN, quiet(env));
    expect(byCommit).toMatchObject({ revision: MAIN, commit: MAIN });
    expect(readdirSync(refs).sort()).toEqual(["refs", "v1"]);
    expect(cachedHubModel("org/tiny", MAIN, env)).toEqual(byCommit);
    expect(cachedHubModel("org/tiny", "main", env)).toBeUndefined();
  });
});

describe("sharded weights", () => {
  it("fetches the index and every shard it names, and the cache needs them all", async () => {
    const env = freshEnv();
    const model = await hubModel("org/sharded", "main", quiet(env));
    for (const shard of [SHARD_1, SHARD_2]) expect(readlinkSync(join(model.directory, shard))).toMatch(/^\.\.\/\.\.\/blobs\/[0-9a-f]{64}$/);
    expect(existsSync(join(repoDir(env, "org/sharded"), ".no_exist", MAIN, "model.safetensors"))).toBe(true);
    expect(hub.bodies.filter((f) => f === SHARD_1)).toHaveLength(1);
    expect(cachedHubModel("org/sharded", "main", env)).toEqual(model);
    unlinkSync(join(model.directory, SHARD_2));
    expect(cachedHubModel("org/sharded", "main", env)).toBeUndefined();
  });
});

describe("LFS files", () => {
  it("follows the redirect to the storage host without the token, and checks the sha256", async () => {
    const env = freshEnv({ HF_TOKEN: "hf_secret" });
    const { requests } = await requestsDuring(() => hubModel("org/tiny", "main", quiet(env)));
    const storage = requests.filter((r) => r.server === "storage");
    expect(storage.map((r) => r.method)).toEqual(["GET"]);
    expect(storage[0]?.headers.authorization).toBeUndefined();
    expect(requests.filter((r) => r.server === "hub").every((r) => r.headers.authorization === "Bearer hf_secret")).toBe(true);
  });

  it("keeps no blob of a damaged body", async () => {
    const env = freshEnv();
    hub.corrupt.add("model.safetensors");
    const error = await failure(hubModel("org/tiny", "main", quiet(env)));
    expect(error).toMatchObject({ code: "ERR_HUB", reason: "corrupt", file: "model.safetensors", id: "org/tiny", revision: "main", cache: hubCacheDir(env) });
    expect(error.message).toContain("sha256");
    const blobs = readdirSync(join(repoDir(env, "org/tiny"), "blobs"));
    expect(blobs.filter((b) => b.startsWith(sha256(FILES["model.safetensors"])))).toEqual([]);
    expect(existsSync(join(repoDir(env, "org/tiny"), "refs", "main"))).toBe(false);
    hub.corrupt.clear();
    expect((await hubModel("org/tiny", "main", quiet(env))).commit).toBe(MAIN);
  });
});

describe("a broken connection", () => {
  const sha = sha256(FILES["model.safetensors"]);

  it("is resumed with a Range request", async () => {
    const env = freshEnv();
    hub.cut = { file: "model.safetensors", afterBytes: 1000, times: 1 };
    const { result: model, requests } = await requestsDuring(() => hubModel("org/tiny", "main", quiet(env)));
    expect(requests.filter((r) => r.server === "storage").map((r) => r.headers.range)).toEqual([undefined, "bytes=1000-"]);
    expect(readFileSync(join(model.directory, "model.safetensors"))).toEqual(FILES["model.safetensors"]);
  });

  it("leaves only a partial file, which the next call resumes", async () => {
    const env = freshEnv();
    hub.cut = { file: "model.safetensors", afterBytes: 1000, times: 10 };
    const error = await failure(hubModel("org/tiny", "main", quiet(env)));
    expect(error).toMatchObject({ reason: "network", file: "model.safetensors" });
    expect(error.message).toContain(hub.endpoint);
    const blobs = join(repoDir(env, "org/tiny"), "blobs");
    const partial = readdirSync(blobs).filter((b) => b.startsWith(sha));
    expect(partial).toEqual([`${sha}.xpm-torch.incomplete`]);
    const size = statSync(join(blobs, partial[0]!)).size;
    expect(size).toBeGreaterThan(0);
    expect(size).toBeLessThan(FILES["model.safetensors"].length);
    expect(existsSync(join(repoDir(env, "org/tiny"), "snapshots", MAIN, "model.safetensors"))).toBe(false);

    hub.cut = undefined;
    const { result: model, requests } = await requestsDuring(() => hubModel("org/tiny", "main", quiet(env)));
    expect(requests.filter((r) => r.server === "storage").map((r) => r.headers.range)).toEqual([`bytes=${size}-`]);
    expect(readFileSync(join(model.directory, "model.safetensors"))).toEqual(FILES["model.safetensors"]);
    expect(readdirSync(blobs).filter((b) => b.startsWith(sha))).toEqual([sha]);
  });
});

/** Runs `node --import tsx` on a script that resolves `id` with `env`; resolves to its output. */
function childResolve(
  id: string,
  env: NodeJS.ProcessEnv,
  started?: (child: ChildProcess) => void,
): Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
  const dir = tempDir("xpm-hub-child-");
  const script = join(dir, "resolve.mts");
  const model = pathToFileURL(join(repoRoot, "ts", "hub", "model.ts")).href;
  writeFileSync(script, `import { hubModel } from ${JSON.stringify(model)};\nconsole.log(JSON.stringify(await hubModel(${JSON.stringify(id)})));\n`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ["--import", "tsx", script], { cwd: repoRoot, env: { ...process.env, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d));
    child.stderr.on("data", (d: Buffer) => (stderr += d));
    child.on("close", (status, signal) => resolve({ status, signal, stdout, stderr }));
    started?.(child);
  });
}

describe("a killed download", () => {
  it("leaves no file taken for whole, and the next process resumes it past the dead one's lock", async () => {
    const env = freshEnv();
    const sha = sha256(FILES["model.safetensors"]);
    const partial = join(repoDir(env, "org/tiny"), "blobs", `${sha}.xpm-torch.incomplete`);
    hub.chunkDelayMs = 400;
    const killed = await childResolve("org/tiny", env, (child) => {
      const poll = setInterval(() => {
        if (existsSync(partial) && statSync(partial).size > 0) {
          clearInterval(poll);
          child.kill("SIGKILL");
        }
      }, 20);
      child.on("close", () => clearInterval(poll));
    });
    expect(killed.signal).toBe("SIGKILL");
    const size = statSync(partial).size;
    expect(size).toBeLessThan(FILES["model.safetensors"].length);
    expect(cachedHubModel("org/tiny", "main", env)).toBeUndefined();
    expect(existsSync(join(repoDir(env, "org/tiny"), "blobs", sha))).toBe(false);
    expect(readdirSync(join(hubCacheDir(env), ".locks", "models--org--tiny"))).toEqual([`${sha}.xpm-torch.lock`]);

    hub.chunkDelayMs = 0;
    const { result: model, requests } = await requestsDuring(() => hubModel("org/tiny", "main", quiet(env)));
    expect(requests.filter((r) => r.server === "storage" && r.method === "GET").map((r) => r.headers.range)).toEqual([`bytes=${size}-`]);
    expect(readFileSync(join(model.directory, "model.safetensors"))).toEqual(FILES["model.safetensors"]);
  });
});

describe("concurrent downloads", () => {
  const countBodies = (since: number) => {
    const counts = new Map<string, number>();
    for (const file of hub.bodies.slice(since)) counts.set(file, (counts.get(file) ?? 0) + 1);
    return counts;
  };

  it("fetch each blob once within one process", async () => {
    const env = freshEnv();
    hub.chunkDelayMs = 20;
    const since = hub.bodies.length;
    const [a, b] = await Promise.all([hubModel("org/tiny", "main", quiet(env)), hubModel("org/tiny", "main", quiet(env))]);
    expect(a).toEqual(b);
    expect([...countBodies(since).values()].every((n) => n === 1)).toBe(true);
    expect(countBodies(since).size).toBe(Object.keys(FILES).length);
  });

  it("fetch each blob once across processes", async () => {
    const env = freshEnv();
    hub.chunkDelayMs = 150;
    const since = hub.bodies.length;
    const [a, b] = await Promise.all([childResolve("org/tiny", env), childResolve("org/tiny", env)]);
    expect(a.status, a.stderr).toBe(0);
    expect(b.status, b.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toEqual(JSON.parse(b.stdout));
    expect(countBodies(since).size).toBe(Object.keys(FILES).length);
    expect([...countBodies(since).values()].every((n) => n === 1)).toBe(true);
    expect(`${a.stderr}${b.stderr}`).toContain("waiting for another process");
  });

  it("take over the lock of a dead process, and one left silent too long", async () => {
    const env = freshEnv();
    const lockDir = join(hubCacheDir(env), ".locks", "models--org--tiny");
    mkdirSync(lockDir, { recursive: true });
    const configLock = join(lockDir, `${gitBlobSha1(Buffer.from(FILES["config.json"]))}.xpm-torch.lock`);
    writeFileSync(configLock, `999999999 ${hostname()} dead`);
    const tokenizerLock = join(lockDir, `${gitBlobSha1(Buffer.from(FILES["tokenizer.json"]))}.xpm-torch.lock`);
    writeFileSync(tokenizerLock, "1 another-host silent");
    const elevenMinutesAgo = new Date(Date.now() - 11 * 60 * 1000);
    utimesSync(tokenizerLock, elevenMinutesAgo, elevenMinutesAgo);
    expect((await hubModel("org/tiny", "main", quiet(env))).commit).toBe(MAIN);
    expect(readdirSync(lockDir)).toEqual([]);
  });
});

describe("offline", () => {
  it("uses a complete cache without any request, and names what is missing otherwise", async () => {
    const env = freshEnv();
    const model = await hubModel("org/tiny", "main", quiet(env));
    for (const offline of [{ HF_HUB_OFFLINE: "1" }, { TRANSFORMERS_OFFLINE: "1" }]) {
      const offlineEnv = { ...env, ...offline };
      const { result, requests } = await requestsDuring(() => hubModel("org/tiny", "main", quiet(offlineEnv)));
      expect(result).toEqual(model);
      expect((await requestsDuring(() => downloadHubModel("org/tiny", "main", quiet(offlineEnv)))).requests).toEqual([]);
      expect(requests).toEqual([]);
    }
    const before = hub.requests.length;
    const error = await failure(hubModel("org/tiny", "v1", quiet({ ...env, HF_HUB_OFFLINE: "1" })));
    expect(hub.requests.length).toBe(before);
    expect(error).toMatchObject({ reason: "offline-missing", id: "org/tiny", revision: "v1", cache: hubCacheDir(env) });
    expect(error.message).toContain("org/tiny@v1");
    expect(error.message).toContain(hubCacheDir(env));
    expect(error.message).toContain("npx xpm-torch download org/tiny --revision v1");
  });
});

describe("errors", () => {
  it("name the reason, what to do, the id, the revision and the cache", async () => {
    const env = freshEnv();
    const cases: [string, string, NodeJS.ProcessEnv, Partial<HubError>, RegExp][] = [
      ["org/private", "main", {}, { reason: "repo-not-found", status: 401 }, /private and no token was sent.*HF_TOKEN/],
      ["org/private", "main", { HF_TOKEN: "hf_bad" }, { reason: "unauthorized", status: 401 }, /token was refused.*huggingface-cli login/],
      ["org/gated", "main", {}, { reason: "unauthorized", status: 401 }, /gated.*request access/],
      ["org/gated", "main", { HF_TOKEN: "hf_bad" }, { reason: "forbidden", status: 403 }, new RegExp(`request access on ${hub.endpoint}/org/gated`)],
      ["org/nothing", "main", {}, { reason: "repo-not-found", status: 404 }, /has no model org\/nothing/],
      ["org/tiny", "nope", {}, { reason: "revision-not-found", status: 404 }, /no revision "nope"/],
      ["org/no-tokenizer", "main", {}, { reason: "entry-not-found", status: 404, file: "tokenizer.json" }, /tokenizer\.json/],
      ["org/pickled", "main", {}, { reason: "bin-only", file: "pytorch_model.bin" }, /safetensors.*safe_serialization=True/],
    ];
    for (const [id, revision, extra, fields, message] of cases) {
      const error = await failure(hubModel(id, revision, quiet({ ...env, ...extra })));
      expect(error, `${id} ${JSON.stringify(extra)}`).toMatchObject({ ...fields, id, revision, cache: hubCacheDir(env) });
      expect(error.message).toMatch(message);
      expect(error.message).toContain(`${id}@${revision}`);
      expect(error.message).toContain(hubCacheDir(env));
    }
  });

  it("read the token from HF_TOKEN, HF_TOKEN_PATH and HF_HOME/token", async () => {
    const env = freshEnv({ HF_TOKEN: "hf_good" });
    expect((await hubModel("org/gated", "main", quiet(env))).commit).toBe(MAIN);
    const tokenFile = join(tempDir("xpm-hf-token-"), "token");
    writeFileSync(tokenFile, "  hf_good\n");
    expect((await hubModel("org/private", "main", quiet(freshEnv({ HF_TOKEN_PATH: tokenFile })))).commit).toBe(MAIN);
    const fromHome = freshEnv();
    writeFileSync(join(fromHome.HF_HOME as string, "token"), "hf_good\n");
    expect((await hubModel("org/private", "main", quiet(fromHome))).commit).toBe(MAIN);
  });

  it("a server out of reach is a network error, which suggests HF_HUB_OFFLINE when the cache has the model", async () => {
    const env = freshEnv();
    await hubModel("org/tiny", "main", quiet(env));
    const closed = await startFakeHub([]);
    await closed.close();
    const unreachable = { ...env, HF_ENDPOINT: closed.endpoint };
    const cached = await failure(downloadHubModel("org/tiny", "main", quiet(unreachable)));
    expect(cached).toMatchObject({ reason: "network", file: "config.json" });
    expect(cached.message).toContain(closed.endpoint);
    expect(cached.message).toContain("HF_HUB_OFFLINE=1");
    const missing = await failure(hubModel("org/sharded", "main", quiet(unreachable)));
    expect(missing.message).not.toContain("HF_HUB_OFFLINE");
  });

  it("refuse an id or a revision that cannot name a model", async () => {
    const env = freshEnv();
    for (const [id, revision] of [["a/b/c", "main"], ["org/tiny", "../../etc"]] as const) {
      const error = await failure(hubModel(id, revision, quiet(env)));
      expect(error.message).toContain("is not a Hugging Face model");
    }
    expect(cachedHubModel("a/b/c", "main", env)).toBeUndefined();
  });
});

describe("xpm-torch download", () => {
  const VARIABLES = ["HF_HOME", "HF_HUB_CACHE", "HF_ENDPOINT", "HF_TOKEN", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"];
  const saved = { ...process.env };

  /** The command reads process.env: `env` replaces the Hugging Face variables there until the test ends. */
  function useEnv(env: NodeJS.ProcessEnv): void {
    for (const name of VARIABLES) delete process.env[name];
    Object.assign(process.env, env);
  }
  afterEach(() => {
    for (const name of VARIABLES) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
  });

  function captured() {
    const out: string[] = [];
    const err: string[] = [];
    return { io: { out: (l: string) => out.push(l), err: (l: string) => err.push(l) }, out, err };
  }

  it("fills the cache and prints the commit and the snapshot folder", async () => {
    const env = freshEnv();
    useEnv(env);
    const { io, out, err } = captured();
    expect(await runCli(["download", "org/tiny", "--revision", "v1"], io)).toBe(0);
    const directory = join(repoDir(env, "org/tiny"), "snapshots", V1);
    expect(out).toEqual([`org/tiny@v1: commit ${V1}`, directory]);
    expect(err.join("\n")).toContain("downloading org/tiny: model.safetensors");
    expect(cachedHubModel("org/tiny", "v1", env)?.directory).toBe(directory);

    // Asked again, it asks the server (the ref may have moved) and downloads nothing.
    const { result: status, requests } = await requestsDuring(() => runCli(["download", "org/tiny", "--revision", "v1"], captured().io));
    expect(status).toBe(0);
    expect(requests.map((r) => r.method)).toEqual(["HEAD"]);
  });

  it("fails with the Hub's reason (1), and refuses what is no id (2)", async () => {
    useEnv(freshEnv());
    const missing = captured();
    expect(await runCli(["download", "org/nothing"], missing.io)).toBe(1);
    expect(missing.err.join("\n")).toMatch(/^xpm-torch download: org\/nothing@main: config\.json: .* has no model org\/nothing/);
    const bad = captured();
    expect(await runCli(["download", "a--b"], bad.io)).toBe(2);
    expect(bad.err.join("\n")).toContain("is not a Hugging Face Hub id");
  });
});
