// What went wrong with a Hub model, said as what to do about it.
import { HubError, type HubErrorReason } from "../errors.js";
import { CorruptBlobError } from "./download.js";
import { HttpStatusError, NetworkError, NotAHubError } from "./http.js";

/** What a failure happened to. */
export interface FailureContext {
  readonly id: string;
  readonly revision: string;
  readonly cache: string;
  readonly endpoint: string;
  /** The file being fetched. */
  readonly file?: string;
  readonly tokenSent: boolean;
  /** Whether the cache holds the whole model (for a network failure). */
  readonly cached: () => boolean;
}

const LOGIN = "set HF_TOKEN to a token of yours (https://huggingface.co/settings/tokens) or run `huggingface-cli login`";

/** `ORG/NAME@main` (and the file). */
function subject(context: FailureContext): string {
  const model = `${context.id}@${context.revision}`;
  return context.file ? `${model}: ${context.file}` : model;
}

function hubError(reason: HubErrorReason, message: string, context: FailureContext, status?: number): HubError {
  const { id, revision, file, cache } = context;
  return new HubError(`${message} (Hugging Face cache: ${cache})`, { id, revision, cache, reason, ...(file ? { file } : {}), ...(status ? { status } : {}) });
}

function statusReason(error: HttpStatusError): HubErrorReason {
  if (error.storageHost) return "http";
  switch (error.errorCode) {
    case "RepoNotFound":
      return "repo-not-found";
    case "RevisionNotFound":
      return "revision-not-found";
    case "EntryNotFound":
      return "entry-not-found";
    case "GatedRepo":
      return error.status === 401 ? "unauthorized" : "forbidden";
  }
  if (error.status === 401) return "unauthorized";
  if (error.status === 403) return "forbidden";
  return "http";
}

function statusMessage(reason: HubErrorReason, error: HttpStatusError, context: FailureContext): string {
  const { id, revision, endpoint, tokenSent } = context;
  const gated = error.errorCode === "GatedRepo";
  switch (reason) {
    case "repo-not-found":
      return tokenSent
        ? `${subject(context)}: ${endpoint} has no model ${id} that this token can read: check the id, and that the token's user may read it if it is private`
        : `${subject(context)}: ${endpoint} has no model ${id}, or it is private and no token was sent: check the id, or ${LOGIN}`;
    case "revision-not-found":
      return `${subject(context)}: the model ${id} has no revision ${JSON.stringify(revision)} (a branch, a tag or a full commit hash) on ${endpoint}`;
    case "entry-not-found":
      return `${subject(context)}: the model has no such file, which xpm-torch needs (config.json, tokenizer.json and safetensors weights)`;
    case "unauthorized":
      return `${subject(context)}: ${endpoint} refused the request (401${gated ? ", a gated model" : ""}): ${tokenSent ? "the token was refused: " : "no token was sent: "}${LOGIN}${gated ? `, and request access on ${endpoint}/${id}` : ""}`;
    case "forbidden":
      return `${subject(context)}: the model is gated and the token's user may not read it (403): request access on ${endpoint}/${id}, then run again`;
    default:
      return error.storageHost
        ? `${subject(context)}: the storage host ${error.storageHost} answered ${error.message}: run again (its signed link may have expired)`
        : `${subject(context)}: ${endpoint} answered ${error.message}`;
  }
}

function networkMessage(error: NetworkError, context: FailureContext): string {
  const { endpoint } = context;
  const advice = context.cached()
    ? "the cache holds this model: set HF_HUB_OFFLINE=1 to use it without the network"
    : "check the network, a proxy, or HF_ENDPOINT, and run again (a download resumes where it stopped)";
  return `${subject(context)}: could not download from ${endpoint} (${error.message}): ${advice}`;
}

/** The {@link HubError} of `error` thrown while fetching `context.file`; other errors (a full disk) as they are. */
export function toHubError(error: unknown, context: FailureContext): unknown {
  if (error instanceof HubError) return error;
  if (error instanceof HttpStatusError) {
    const reason = statusReason(error);
    return hubError(reason, statusMessage(reason, error, context), context, error.status);
  }
  if (error instanceof NetworkError) return hubError("network", networkMessage(error, context), context);
  if (error instanceof CorruptBlobError) {
    return hubError("corrupt", `${subject(context)}: the download was damaged (${error.message}) and was not kept: run again to download it anew`, context);
  }
  if (error instanceof NotAHubError) {
    return hubError("http", `${subject(context)}: ${context.endpoint} does not answer as the Hugging Face Hub does (${error.message}): check HF_ENDPOINT, a proxy or a firewall`, context);
  }
  return error;
}

/** The model is missing from the cache and HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) forbids downloading it. */
export function offlineMissing(context: FailureContext): HubError {
  const { id, revision } = context;
  const command = `npx xpm-torch download ${id}${revision === "main" ? "" : ` --revision ${revision}`}`;
  return hubError(
    "offline-missing",
    `${id}@${revision} is not (wholly) in the Hugging Face cache, and HF_HUB_OFFLINE=1 forbids downloading it: run \`${command}\` where the network is reached, with the same HF_HUB_CACHE or HF_HOME, or unset HF_HUB_OFFLINE`,
    context,
  );
}

/** The repository has only `pytorch_model.bin` weights. */
export function binOnly(context: FailureContext): HubError {
  return hubError(
    "bin-only",
    `${context.id}@${context.revision} has only PyTorch pickle weights (pytorch_model.bin) and xpm-torch reads safetensors: convert them, with the Hub's "Convert to Safetensors" space (https://huggingface.co/spaces/safetensors/convert, it opens a pull request whose revision refs/pr/N you can then use), or in Python with transformers' \`save_pretrained(folder, safe_serialization=True)\` and use that folder`,
    { ...context, file: "pytorch_model.bin" },
  );
}

/** The repository names a shard that cannot be a file of it, or an index that is not JSON. */
export function badIndex(context: FailureContext, detail: string): HubError {
  return hubError("corrupt", `${subject(context)}: ${detail}`, context);
}

/** `id` or `revision` cannot name a Hub model. */
export function badName(context: FailureContext): HubError {
  const { id, revision } = context;
  return hubError(
    "repo-not-found",
    `${JSON.stringify(id)} at revision ${JSON.stringify(revision)} is not a Hugging Face model: an id is NAME or ORG/NAME (letters, digits, "-", "_", "."), a revision a branch, tag or commit`,
    context,
  );
}
