// The Hugging Face cache's layout (huggingface_hub's `manage-cache` guide), read and written as
// Python does, so that each side uses what the other downloaded:
//
//   <cache>/models--ORG--NAME/refs/<revision>          the commit, no newline
//   <cache>/models--ORG--NAME/blobs/<etag>             the contents
//   <cache>/models--ORG--NAME/snapshots/<commit>/<f>   relative symlinks into blobs/
//   <cache>/models--ORG--NAME/.no_exist/<commit>/<f>   empty: the server said <f> is absent
import { existsSync, mkdirSync, readFileSync, readlinkSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";

// validate_repo_id of huggingface_hub: an optional namespace, a name of 1 to 96 characters, each
// starting and ending with a letter, digit or `_`.
const REPO_ID = /^(?:\b[\w.-]+\b\/)?\b[\w.-]{1,96}\b$/;
const COMMIT = /^[0-9a-f]{40}$/;

/** Hub ids: "NAME" or "ORG/NAME" with the Hub's allowed characters ([\w.-], no "--" / ".." and not ending in ".git"). */
export function isHubId(text: string): boolean {
  return REPO_ID.test(text) && !text.includes("--") && !text.includes("..") && !text.endsWith(".git");
}

/** Whether `revision` is a full commit hash (then no ref is read or written). */
export function isCommitHash(revision: string): boolean {
  return COMMIT.test(revision);
}

/** Whether `revision` names a ref that stays inside `refs/` (`main`, `v1.0`, `refs/pr/1`) or a commit. */
export function isSafeRevision(revision: string): boolean {
  return revision !== "" && !revision.split("/").some((part) => part === "" || part === "." || part === "..") && !/[\\\0]/.test(revision);
}

/** The folders and files of one model repository of the cache. */
export class RepoCache {
  readonly root: string;

  constructor(
    readonly cacheDir: string,
    readonly id: string,
  ) {
    this.root = join(cacheDir, `models--${id.replaceAll("/", "--")}`);
  }

  blob(etag: string): string {
    return join(this.root, "blobs", etag);
  }

  incomplete(etag: string): string {
    return `${this.blob(etag)}.incomplete`;
  }

  snapshot(commit: string): string {
    return join(this.root, "snapshots", commit);
  }

  /** The lock folder of this repository: Python's, `<cache>/.locks/models--ORG--NAME`. */
  lockDir(): string {
    return join(this.cacheDir, ".locks", `models--${this.id.replaceAll("/", "--")}`);
  }

  /** The commit `revision` points at as the cache knows it (itself for a commit hash). */
  commitOf(revision: string): string | undefined {
    if (isCommitHash(revision)) return revision;
    try {
      const commit = readFileSync(join(this.root, "refs", revision), "utf8").trim();
      return isCommitHash(commit) ? commit : undefined;
    } catch {
      return undefined;
    }
  }

  /** Whether `file` of the snapshot `commit` is there, its symlink resolving to a file. */
  hasFile(commit: string, file: string): boolean {
    try {
      return statSync(join(this.snapshot(commit), file)).isFile();
    } catch {
      return false;
    }
  }

  /** Whether the server said `file` is absent at `commit`. */
  knownMissing(commit: string, file: string): boolean {
    return existsSync(join(this.root, ".no_exist", commit, file));
  }

  markMissing(commit: string, file: string): void {
    const marker = join(this.root, ".no_exist", commit, file);
    mkdirSync(dirname(marker), { recursive: true });
    writeFileSync(marker, "");
  }

  /** Points `snapshots/<commit>/<file>` at `blobs/<etag>` by a relative symlink, replacing a link elsewhere. */
  link(commit: string, file: string, etag: string): void {
    const pointer = join(this.snapshot(commit), file);
    const target = relative(dirname(pointer), this.blob(etag));
    mkdirSync(dirname(pointer), { recursive: true });
    try {
      if (readlinkSync(pointer) === target) return;
      unlinkSync(pointer);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // A real file (Python copies where symlinks are not supported) is kept.
      if (code === "EINVAL") return;
      if (code !== "ENOENT") throw error;
    }
    try {
      symlinkSync(target, pointer);
    } catch (error) {
      // Another process linked it meanwhile: the same blob, since both read one commit.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }

  /** Writes `refs/<revision>` (the commit, without a newline, as Python writes it) unless it says so already. */
  writeRef(revision: string, commit: string): void {
    if (isCommitHash(revision) || this.commitOf(revision) === commit) return;
    const ref = join(this.root, "refs", revision);
    mkdirSync(dirname(ref), { recursive: true });
    writeFileSync(ref, commit);
  }
}
