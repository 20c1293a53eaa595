/** Base of every error xpm-torch throws; `code` is stable and matches the Rust core's codes. */
export class XpmTorchError extends Error {
  readonly code: string;

  constructor(code: string, message: string) {
    super(message);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A configuration is invalid; `path` is the dotted path from the root (`learner.max_epochs`). */
export class ConfigError extends XpmTorchError {
  readonly path: string;
  /**
   * For an unknown parameter, the nearest parameter the class has (as tsc's "Did you mean
   * 'max_epochs'?"), when one is near enough; the message ends with it too.
   */
  readonly suggestion?: string;

  constructor(path: string, message: string, details: { readonly suggestion?: string | undefined } = {}) {
    super("ERR_CONFIG", `${path}: ${message}`);
    this.path = path;
    if (details.suggestion !== undefined) this.suggestion = details.suggestion;
  }
}

/** A data file is malformed at `file:line:column` (1-based); the message starts with them. */
export class DataError extends XpmTorchError {
  readonly file: string;
  readonly line: number;
  readonly column: number;

  constructor(message: string, where: { readonly file: string; readonly line: number; readonly column: number }) {
    super("ERR_DATA", message);
    this.file = where.file;
    this.line = where.line;
    this.column = where.column;
  }
}

/** libtorch raised an exception during the run (shape mismatch, ...). */
export class TorchError extends XpmTorchError {
  constructor(message: string, code = "ERR_TORCH") {
    super(code, message);
  }
}

/** libtorch ran out of memory (CUDA, cuBLAS, cuDNN or the CPU allocator): reduce the batch or the model. */
export class OutOfMemoryError extends TorchError {
  constructor(message: string) {
    super(message, "ERR_OUT_OF_MEMORY");
  }
}

/** Gradients or scores became NaN or infinite at global step `step`. */
export class NonFiniteError extends XpmTorchError {
  readonly step: number;
  /** What was not finite. */
  readonly what: string;

  constructor(message: string, step: number, what: string) {
    super("ERR_NON_FINITE", message);
    this.step = step;
    this.what = what;
  }
}

/** A checkpoint (or saved model) cannot be read or written, or does not fit the run. */
export class CheckpointError extends XpmTorchError {
  /** The checkpoint, directory or file at fault. */
  readonly checkpoint: string;

  constructor(message: string, checkpoint: string) {
    super("ERR_CHECKPOINT", message);
    this.checkpoint = checkpoint;
  }
}

/**
 * A pretrained model directory (Hugging Face layout: `config.json`, `*.safetensors`,
 * `tokenizer.json`) cannot be read, does not describe its weights, or cannot be written.
 */
export class ModelDirectoryError extends XpmTorchError {
  /** The file of the directory at fault (or the directory). */
  readonly file: string;

  constructor(message: string, file: string) {
    super("ERR_MODEL_DIRECTORY", message);
    this.file = file;
  }
}

/** Why a Hugging Face Hub model could not be had (`HubError.reason`). */
export type HubErrorReason =
  /** HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) is set and the cache lacks the model. */
  | "offline-missing"
  /** The cache lacks the model and the caller did not ask to download it. */
  | "not-downloaded"
  /** 401: no token, or a bad one. */
  | "unauthorized"
  /** 403: a gated model whose access the token's user was not granted. */
  | "forbidden"
  | "repo-not-found"
  | "revision-not-found"
  /** A required file is not in the repository. */
  | "entry-not-found"
  /** The repository has PyTorch pickles (`pytorch_model.bin`) but no safetensors weights. */
  | "bin-only"
  /** The server could not be reached, or the connection broke. */
  | "network"
  /** A downloaded file does not have the size or the sha256 the server announced. */
  | "corrupt"
  /** Any other HTTP answer. */
  | "http";

/** What a {@link HubError} knows of the failure. */
export interface HubFailure {
  /** The Hub id, `ORG/NAME`. */
  readonly id: string;
  readonly revision: string;
  /** The file of the repository at fault. */
  readonly file?: string;
  /** The Hugging Face cache folder in use. */
  readonly cache: string;
  /** The HTTP status of the answer at fault. */
  readonly status?: number;
  readonly reason: HubErrorReason;
}

/** A model of the Hugging Face Hub could not be found, downloaded or read from its cache; the message says what to do. */
export class HubError extends XpmTorchError implements HubFailure {
  readonly id: string;
  readonly revision: string;
  readonly file?: string;
  readonly cache: string;
  readonly status?: number;
  readonly reason: HubErrorReason;

  constructor(message: string, failure: HubFailure) {
    super("ERR_HUB", message);
    this.id = failure.id;
    this.revision = failure.revision;
    if (failure.file !== undefined) this.file = failure.file;
    this.cache = failure.cache;
    if (failure.status !== undefined) this.status = failure.status;
    this.reason = failure.reason;
  }
}

/** Reading or writing `path` failed. */
export class FileError extends XpmTorchError {
  readonly path: string;

  constructor(message: string, path: string) {
    super("ERR_IO", message);
    this.path = path;
  }
}

/** Something valid was asked that this build or machine does not offer (a dtype, a device). */
export class UnsupportedError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_UNSUPPORTED", message);
  }
}

/**
 * A part of the run written in JavaScript failed without an exception of its own to rethrow
 * (it answered badly, or could not be reached). Exceptions thrown by listeners, hooks, samplers
 * and `learn()`'s callbacks are rethrown as they are.
 */
export class CallbackError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_CALLBACK", message);
  }
}

/** A bug in xpm-torch (the Rust core panicked); the run is lost, the process is not. Please report it. */
export class InternalError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_PANIC", message);
  }
}

/** The run was cancelled. */
export class CancelledError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_CANCELLED", message);
  }
}

/** The run was stopped (signal or abort) after writing a checkpoint; running it again resumes. */
export class InterruptedError extends XpmTorchError {
  /** The checkpoint written. */
  readonly checkpoint: string;
  /** The global step reached (absent when the run stopped before its first step). */
  readonly step: number | undefined;

  constructor(message: string, checkpoint: string, step?: number) {
    super("ERR_INTERRUPTED", message);
    this.checkpoint = checkpoint;
    this.step = step;
  }
}

/** What the core knows of a distributed failure. */
export interface DistributedFailure {
  /** `environment` (the launch variables), `rendezvous` or `collective`. */
  readonly reason?: "environment" | "rendezvous" | "collective";
  /** The environment variable at fault. */
  readonly variable?: string;
  readonly rank?: number;
  readonly worldSize?: number;
  /** `MASTER_ADDR:MASTER_PORT` of a failed rendezvous. */
  readonly master?: string;
  /** The collective that failed (`all_reduce`, `broadcast`, ...). */
  readonly operation?: string;
  /** Ranks known to have exited. */
  readonly deadRanks?: readonly number[];
}

/**
 * A distributed run failed: a rank died or hung, the rendezvous failed, or the launch
 * environment is wrong. The message names the rank; the fields say what the core knew.
 */
export class DistributedError extends XpmTorchError implements DistributedFailure {
  readonly reason?: DistributedFailure["reason"];
  readonly variable?: string;
  readonly rank?: number;
  readonly worldSize?: number;
  readonly master?: string;
  readonly operation?: string;
  readonly deadRanks?: readonly number[];

  constructor(message: string, failure: DistributedFailure = {}) {
    super("ERR_DISTRIBUTED", message);
    Object.assign(this, failure);
  }
}

/** No usable libtorch 2.11 was found; the message says what to run. */
export class LibtorchNotFoundError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_LIBTORCH", message);
  }
}

/** The native addon is neither installed (platform package) nor built (clone). */
export class AddonNotFoundError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_ADDON", message);
  }
}

/** The error shape the native binding resolves with when a job fails (see `Error::payload` in the core). */
export interface NativeErrorPayload extends DistributedFailure {
  readonly code: string;
  readonly message: string;
  /** The message without its prefix (`path: `, `file:line:column: `, ...). */
  readonly detail?: string;
  /** The config path (ERR_CONFIG) or the file (ERR_IO). */
  readonly path?: string;
  readonly checkpoint?: string;
  readonly file?: string;
  readonly line?: number;
  readonly column?: number;
  readonly step?: number;
  readonly what?: string;
}

/** Turns a native error payload into the matching typed error, with its fields. */
export function fromNative(error: NativeErrorPayload): XpmTorchError {
  const { message } = error;
  switch (error.code) {
    case "ERR_CONFIG":
      return new ConfigError(error.path ?? "learner", error.detail ?? message);
    case "ERR_TORCH":
      return new TorchError(message);
    case "ERR_OUT_OF_MEMORY":
      return new OutOfMemoryError(message);
    case "ERR_DATA":
      return new DataError(message, { file: error.file ?? "", line: error.line ?? 0, column: error.column ?? 0 });
    case "ERR_NON_FINITE":
      return new NonFiniteError(message, error.step ?? 0, error.what ?? "");
    case "ERR_CHECKPOINT":
      return new CheckpointError(message, error.checkpoint ?? "");
    case "ERR_IO":
      return new FileError(message, error.path ?? "");
    case "ERR_MODEL_DIRECTORY":
      return new ModelDirectoryError(message, error.file ?? "");
    case "ERR_UNSUPPORTED":
      return new UnsupportedError(message);
    case "ERR_CALLBACK":
      return new CallbackError(message);
    case "ERR_PANIC":
      return new InternalError(message);
    case "ERR_CANCELLED":
      return new CancelledError(message);
    case "ERR_INTERRUPTED":
      return new InterruptedError(message, error.checkpoint ?? "", error.step);
    case "ERR_DISTRIBUTED": {
      const { reason, variable, rank, worldSize, master, operation, deadRanks } = error;
      const failure = Object.fromEntries(
        Object.entries({ reason, variable, rank, worldSize, master, operation, deadRanks }).filter(([, v]) => v !== undefined),
      ) as DistributedFailure;
      return new DistributedError(message, failure);
    }
    default:
      return new XpmTorchError(error.code, message);
  }
}

/** Parses an outcome the binding resolved with, throwing the typed error of a failed job. */
export function unwrapOutcome<T>(json: string): T {
  const outcome = JSON.parse(json) as { ok: true; output: T } | { ok: false; error: NativeErrorPayload };
  if (!outcome.ok) throw fromNative(outcome.error);
  return outcome.output;
}
