/**
 * The bytes of an own record (reference/identifiers.md §3–§4): tags, the writer of integers,
 * floats and UTF-8 text, the order of names, and the error naming where a value cannot be hashed.
 */
import { createHash } from "node:crypto";

/** Tag bytes (§3). PATH (04) is reserved and never emitted. */
export const Tag = {
  OBJECT: 0x00,
  INT: 0x01,
  FLOAT: 0x02,
  STR: 0x03,
  NAME: 0x05,
  NONE: 0x06,
  LIST: 0x07,
  TASK: 0x08,
  DICT: 0x09,
  ENUM: 0x0a,
  CYCLE_REFERENCE: 0x0b,
  INIT_TASKS: 0x0c,
  INSTANCE: 0x0d,
  SET: 0x0e,
} as const;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * A configuration cannot be hashed. `path` is the dotted path of the configuration from the
 * top-level one (`learner.trainer`), `argument` the argument being hashed, if any.
 */
export class IdentifierError extends Error {
  readonly path: string;
  readonly argument: string | null;

  constructor(path: string, argument: string | null, message: string) {
    super(`${path}: ${message}`);
    this.name = "IdentifierError";
    this.path = path;
    this.argument = argument;
  }
}

/** Where a value sits, for error messages: configuration path, argument, position inside it. */
export interface Site {
  readonly config: string;
  readonly argument: string | null;
  readonly inner: string;
}

export function fail(site: Site, message: string): never {
  const where = site.argument === null ? "" : `argument ${JSON.stringify(site.argument)}${site.inner ? ` at ${site.inner}` : ""}: `;
  throw new IdentifierError(site.config, site.argument, where + message);
}

export function within(site: Site, segment: string): Site {
  return { ...site, inner: site.inner + segment };
}

/** The dotted path of a configuration reached from `site`: `learner.listeners[0]`. */
export function childPath(site: Site): string {
  return site.argument === null ? site.config + site.inner : `${site.config}.${site.argument}${site.inner}`;
}

/**
 * Orders strings by Unicode code point, as Python does. UTF-16 code-unit order differs only
 * when a surrogate (astral character) meets a BMP character at or above U+E000.
 */
export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000; // surrogates rank above the BMP
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}

const LONE_SURROGATE = /\p{Cs}/u;

/** Accumulates the bytes of one own record. */
export class RecordWriter {
  private readonly chunks: Uint8Array[] = [];

  tag(tag: number): void {
    this.chunks.push(Uint8Array.of(tag));
  }

  raw(bytes: Uint8Array): void {
    this.chunks.push(bytes);
  }

  utf8(text: string, site: Site, what: string): void {
    if (LONE_SURROGATE.test(text)) fail(site, `${what} contains a lone surrogate: ${JSON.stringify(text)}`);
    this.chunks.push(Buffer.from(text, "utf8"));
  }

  i64(value: bigint, site: Site): void {
    if (value < INT64_MIN || value > INT64_MAX) fail(site, `integer ${value} is outside the signed 64-bit range`);
    const buffer = Buffer.alloc(8);
    buffer.writeBigInt64BE(value);
    this.chunks.push(buffer);
  }

  f64(value: number): void {
    const buffer = Buffer.alloc(8);
    buffer.writeDoubleBE(value); // keeps -0, NaN and infinities bit for bit
    this.chunks.push(buffer);
  }

  bytes(): Uint8Array {
    return Buffer.concat(this.chunks);
  }
}

export function sha256(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(bytes).digest());
}

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}
