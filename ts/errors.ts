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

  constructor(path: string, message: string) {
    super("ERR_CONFIG", `${path}: ${message}`);
    this.path = path;
  }
}

/** A data file is malformed; the message starts with `file:line:column`. */
export class DataError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_DATA", message);
  }
}

/** libtorch raised an exception during the run (shape mismatch, out of memory, ...). */
export class TorchError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_TORCH", message);
  }
}

/** The Rust core panicked; the run is lost, the process is not. Please report it. */
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

  constructor(message: string, checkpoint: string) {
    super("ERR_INTERRUPTED", message);
    this.checkpoint = checkpoint;
  }
}

/**
 * A distributed run failed: a rank died or hung, the rendezvous failed, or the launch
 * environment is wrong. The message names the rank.
 */
export class DistributedError extends XpmTorchError {
  constructor(message: string) {
    super("ERR_DISTRIBUTED", message);
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

/** The error shape the native binding resolves with when a job fails. */
export interface NativeErrorPayload {
  code: string;
  message: string;
  path?: string;
  detail?: string;
  checkpoint?: string;
}

/** Turns a native error payload into the matching typed error. */
export function fromNative(error: NativeErrorPayload): XpmTorchError {
  switch (error.code) {
    case "ERR_CONFIG":
      return new ConfigError(error.path ?? "learner", error.detail ?? error.message);
    case "ERR_TORCH":
      return new TorchError(error.message);
    case "ERR_DATA":
      return new DataError(error.message);
    case "ERR_PANIC":
      return new InternalError(error.message);
    case "ERR_CANCELLED":
      return new CancelledError(error.message);
    case "ERR_INTERRUPTED":
      return new InterruptedError(error.message, error.checkpoint ?? "");
    case "ERR_DISTRIBUTED":
      return new DistributedError(error.message);
    default:
      return new XpmTorchError(error.code, error.message);
  }
}
