// The settings huggingface_hub reads from the environment (its `constants.py`), read the same way,
// so that Python and xpm-torch share one cache, one server and one token.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

/** `~` and `~/x` as Python's `os.path.expanduser` reads them, made absolute. */
function expandUser(path: string): string {
  if (path === "~") return homedir();
  if (path.startsWith("~/")) return join(homedir(), path.slice(2));
  return resolve(path);
}

/** A variable's value, an empty one read as unset. */
function variable(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value === "" ? undefined : value;
}

/** Python's `_is_true`: 1, ON, YES or TRUE, in any case. */
function isTrue(value: string | undefined): boolean {
  return value !== undefined && ["1", "ON", "YES", "TRUE"].includes(value.toUpperCase());
}

/** `HF_HOME`, else `$XDG_CACHE_HOME/huggingface`, else `~/.cache/huggingface`. */
export function hfHome(env: NodeJS.ProcessEnv): string {
  const home = variable(env, "HF_HOME");
  if (home) return expandUser(home);
  const xdg = variable(env, "XDG_CACHE_HOME") ?? join(homedir(), ".cache");
  return join(expandUser(xdg), "huggingface");
}

/** The cache folder in use: `HF_HUB_CACHE`, else the legacy `HUGGINGFACE_HUB_CACHE`, else `HF_HOME/hub`. */
export function hubCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const cache = variable(env, "HF_HUB_CACHE") ?? variable(env, "HUGGINGFACE_HUB_CACHE");
  return cache ? expandUser(cache) : join(hfHome(env), "hub");
}

/** `HF_ENDPOINT` without its trailing slashes, else the public Hub. */
export function hubEndpoint(env: NodeJS.ProcessEnv): string {
  return (variable(env, "HF_ENDPOINT") ?? "https://huggingface.co").replace(/\/+$/, "");
}

/** Whether no request may be made: `HF_HUB_OFFLINE`, else (when it is unset) `TRANSFORMERS_OFFLINE`. */
export function isOffline(env: NodeJS.ProcessEnv): boolean {
  return isTrue(variable(env, "HF_HUB_OFFLINE") ?? variable(env, "TRANSFORMERS_OFFLINE"));
}

function readTokenFile(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/**
 * The token sent to the endpoint: `HF_TOKEN` (or the legacy `HUGGING_FACE_HUB_TOKEN`), else the
 * file `HF_TOKEN_PATH`, else `$HF_HOME/token` (what `huggingface-cli login` writes); none when
 * `HF_HUB_DISABLE_IMPLICIT_TOKEN` is set.
 */
export function hubToken(env: NodeJS.ProcessEnv): string | undefined {
  if (isTrue(variable(env, "HF_HUB_DISABLE_IMPLICIT_TOKEN"))) return undefined;
  const fromEnv = variable(env, "HF_TOKEN") ?? variable(env, "HUGGING_FACE_HUB_TOKEN");
  const tokenPath = variable(env, "HF_TOKEN_PATH");
  const token = (fromEnv ?? readTokenFile(tokenPath ? expandUser(tokenPath) : join(hfHome(env), "token")))?.trim();
  return token ? token : undefined;
}

/** Seconds from `name`, else `fallback`, in milliseconds. */
function seconds(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const value = Number(variable(env, name));
  return (Number.isFinite(value) && value > 0 ? value : fallback) * 1000;
}

/** How long the metadata request (`HF_HUB_ETAG_TIMEOUT`) and a download's silence (`HF_HUB_DOWNLOAD_TIMEOUT`) may last. */
export function hubTimeouts(env: NodeJS.ProcessEnv): { readonly metadataMs: number; readonly downloadMs: number } {
  return { metadataMs: seconds(env, "HF_HUB_ETAG_TIMEOUT", 10), downloadMs: seconds(env, "HF_HUB_DOWNLOAD_TIMEOUT", 10) };
}
