/**
 * Experimaestro-compatible configuration identifiers ("hash version 2"),
 * reference/identifiers.md §3–§7.
 */
import { createHash } from "node:crypto";

import { equalsDefault } from "./defaults.js";
import { isMetaMarked, type ArgumentDecl, type ConfigNode, type TypedValue } from "./values.js";

/** Tag bytes (§3). PATH (04) is reserved and never emitted. */
const Tag = {
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
interface Site {
  readonly config: string;
  readonly argument: string | null;
  readonly inner: string;
}

function fail(site: Site, message: string): never {
  const where = site.argument === null ? "" : `argument ${JSON.stringify(site.argument)}${site.inner ? ` at ${site.inner}` : ""}: `;
  throw new IdentifierError(site.config, site.argument, where + message);
}

function within(site: Site, segment: string): Site {
  return { ...site, inner: site.inner + segment };
}

/** The dotted path of a configuration reached from `site`: `learner.listeners[0]`. */
function childPath(site: Site): string {
  return site.argument === null ? site.config + site.inner : `${site.config}.${site.argument}${site.inner}`;
}

/** Root of error paths: the declared class name, first letter lowercased (`learner`). */
function rootPath(node: ConfigNode): string {
  const declared = node.type.declaredId || node.type.id;
  const last = declared.slice(declared.lastIndexOf(".") + 1);
  return last.charAt(0).toLowerCase() + last.slice(1);
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
class RecordWriter {
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

function sha256(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(bytes).digest());
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
}

/** Identifiers of sealed nodes computed without loops (§6.4). */
const cache = new WeakMap<ConfigNode, Uint8Array>();

/**
 * State of one computation: the stack of own records in progress (§6.2), the nodes found
 * inside a cycle, and the instance table (§6.3). A top-level call starts one; set sort keys
 * start fresh ones that share only `setKeysInProgress`.
 */
class Computation {
  readonly stack: ConfigNode[] = [];
  readonly loops = new Set<ConfigNode>();
  readonly instances = new Map<string, ConfigNode[]>();

  constructor(readonly setKeysInProgress: Set<TypedValue> = new Set()) {}
}

/** The 32-byte identifier of `node`, SHA-256 of its own record (§5.1). */
export function identifier(node: ConfigNode): Uint8Array {
  const cached = node.sealed ? cache.get(node) : undefined;
  if (cached) return cached.slice();
  return computeIdentifier(node, new Computation(), rootPath(node)).slice();
}

/** The identifier as 64 lowercase hex characters. */
export function identifierHex(node: ConfigNode): string {
  return hex(identifier(node));
}

/** The bytes fed to SHA-256 when computing the identifier of `node` as a top-level call. */
export function ownRecordBytes(node: ConfigNode): Uint8Array {
  const computation = new Computation();
  computation.stack.push(node);
  return ownRecord(node, computation, rootPath(node));
}

/** Whether a sealed node's identifier is cached (it is reused by every later computation). */
export function isIdentifierCached(node: ConfigNode): boolean {
  return cache.has(node);
}

function computeIdentifier(node: ConfigNode, computation: Computation, path: string): Uint8Array {
  computation.stack.push(node);
  let record: Uint8Array;
  try {
    record = ownRecord(node, computation, path);
  } finally {
    computation.stack.pop();
  }
  const digest = sha256(record);
  if (node.sealed && !computation.loops.has(node)) cache.set(node, digest);
  return digest;
}

/** §5.1: the own record of a node already pushed on the computation stack. */
function ownRecord(node: ConfigNode, computation: Computation, path: string): Uint8Array {
  const out = new RecordWriter();
  const site: Site = { config: path, argument: null, inner: "" };
  out.tag(Tag.OBJECT);
  if (node.producer !== null && node.producer !== node) {
    out.tag(Tag.TASK);
    encodeNested(node.producer, out, computation, `${path}.__task__`);
  }
  if (/[A-Z]/.test(node.type.id)) fail(site, `type identifier ${JSON.stringify(node.type.id)} is not lowercase`);
  out.utf8(node.type.id, site, "the type identifier");

  const declared = new Set<string>();
  for (const argument of node.type.arguments) {
    if (declared.has(argument.name)) fail(site, `type ${node.type.id} declares argument "${argument.name}" twice`);
    declared.add(argument.name);
  }
  for (const name of node.values.keys()) {
    if (!declared.has(name)) fail(site, `unknown argument ${JSON.stringify(name)} for type ${node.type.id}`);
  }

  const sorted = [...node.type.arguments].sort((a, b) => compareCodePoints(a.name, b.name));
  for (const argument of sorted) {
    const value = includedValue(node, argument, site);
    if (value === null) continue;
    const argumentSite: Site = { config: path, argument: argument.name, inner: "" };
    out.tag(Tag.STR);
    out.utf8(argument.name, argumentSite, "the argument name");
    out.tag(Tag.NAME);
    encodeValue(value, out, computation, argumentSite);
  }

  // Init tasks are attached at submission, before the job directory (named by this very
  // identifier) exists, so they are hashed whether or not the task mark is already set.
  if (node.initTasks.length > 0) {
    out.tag(Tag.INIT_TASKS);
    node.initTasks.forEach((task, i) => encodeNested(task, out, computation, `${path}.__init_tasks__[${i}]`));
  }
  return out.bytes();
}

const NONE: TypedValue = { kind: "none" };

/** §5.2: the value to hash for `argument`, or `null` when the argument is skipped. */
function includedValue(node: ConfigNode, argument: ArgumentDecl, site: Site): TypedValue | null {
  const set = node.values.get(argument.name);
  if (argument.ignored && !(set?.kind === "config" && set.node.meta === false)) return null;
  if (argument.generator === "path") return null;
  if (set === undefined && argument.required) fail(site, `unset required argument ${JSON.stringify(argument.name)}`);
  // Without applied defaults an unset argument stands for its default (or none).
  let value = set ?? argument.default ?? NONE;
  const defaultValue = argument.default !== null && argument.default.kind !== "none" ? argument.default : null;
  if (value.kind === "none" && argument.generator === "factory" && defaultValue !== null) value = defaultValue;
  if (!argument.constant) {
    if (!argument.required && defaultValue === null && value.kind === "none") return null;
    if (argument.ignoreDefault && defaultValue !== null && equalsDefault(defaultValue, value)) return null;
  }
  if (isMetaMarked(value)) return null;
  return value;
}

/** §4: appends `enc(value)`. */
function encodeValue(value: TypedValue, out: RecordWriter, computation: Computation, site: Site): void {
  switch (value.kind) {
    case "none":
      out.tag(Tag.NONE);
      return;
    case "int":
      out.tag(Tag.INT);
      out.i64(value.value, site);
      return;
    case "bool":
      out.tag(Tag.INT);
      out.i64(value.value ? 1n : 0n, site);
      return;
    case "float":
      out.tag(Tag.FLOAT);
      out.f64(value.value);
      return;
    case "str":
      out.tag(Tag.STR);
      out.utf8(value.value, site, "a string");
      return;
    case "enum":
      out.tag(Tag.ENUM);
      out.utf8(`${value.enum}:${value.member}`, site, "an enum name");
      return;
    case "path":
      return fail(site, "a path cannot be hashed");
    case "list": {
      const kept = value.items.map((item, i) => [item, i] as const).filter(([item]) => !isMetaMarked(item));
      out.tag(Tag.LIST);
      out.f64(kept.length);
      for (const [item, i] of kept) encodeValue(item, out, computation, within(site, `[${i}]`));
      return;
    }
    case "set":
      encodeSet(value.items, out, computation, site);
      return;
    case "dict":
      encodeDict(value.entries, out, computation, site);
      return;
    case "config":
      encodeNested(value.node, out, computation, childPath(site));
      return;
  }
}

/**
 * Set elements are ordered by SHA-256 of their encoding, each computed independently (empty
 * stack and instance table); elements with the same key are the same element.
 */
function encodeSet(items: readonly TypedValue[], out: RecordWriter, computation: Computation, site: Site): void {
  const keyed = new Map<string, { item: TypedValue; key: Uint8Array; site: Site }>();
  items.forEach((item, i) => {
    if (isMetaMarked(item)) return;
    const itemSite = within(site, `{${i}}`);
    const key = setSortKey(item, computation, itemSite);
    const id = hex(key);
    if (!keyed.has(id)) keyed.set(id, { item, key, site: itemSite });
  });
  const ordered = [...keyed.values()].sort((a, b) => Buffer.compare(a.key, b.key));
  out.tag(Tag.SET);
  out.f64(ordered.length);
  for (const { item, site: itemSite } of ordered) encodeValue(item, out, computation, itemSite);
}

function setSortKey(item: TypedValue, computation: Computation, site: Site): Uint8Array {
  const inProgress = computation.setKeysInProgress;
  // A cycle through a set element would restart the same independent computation forever.
  if (inProgress.has(item)) fail(site, "a cycle passes through a set element; it cannot be hashed");
  inProgress.add(item);
  try {
    const record = new RecordWriter();
    encodeValue(item, record, new Computation(inProgress), site);
    return sha256(record.bytes());
  } finally {
    inProgress.delete(item);
  }
}

type DictKey = { kind: "str"; value: string } | { kind: "number"; value: bigint | number };

function dictKey(key: TypedValue, site: Site): DictKey {
  switch (key.kind) {
    case "str":
      return { kind: "str", value: key.value };
    case "int":
    case "float":
      return { kind: "number", value: key.value };
    case "bool":
      return { kind: "number", value: key.value ? 1n : 0n };
    default:
      return fail(site, `a dict key must be a str or an int, not ${key.kind}`);
  }
}

function compareDictKeys(a: DictKey, b: DictKey): number {
  if (a.kind === "str" && b.kind === "str") return compareCodePoints(a.value, b.value);
  // bigint and number compare exactly with < and >.
  return a.value < b.value ? -1 : a.value > b.value ? 1 : 0;
}

function encodeDict(
  entries: readonly { key: TypedValue; value: TypedValue }[],
  out: RecordWriter,
  computation: Computation,
  site: Site,
): void {
  const keyed = entries.map((entry) => ({ ...entry, sortKey: dictKey(entry.key, site) }));
  const kinds = new Set(keyed.map((entry) => entry.sortKey.kind));
  if (kinds.size > 1) fail(site, "a dict cannot mix str and numeric keys");
  keyed.sort((a, b) => compareDictKeys(a.sortKey, b.sortKey));
  for (let i = 1; i < keyed.length; i++) {
    const [previous, current] = [keyed[i - 1], keyed[i]];
    if (previous && current && compareDictKeys(previous.sortKey, current.sortKey) === 0) {
      fail(site, `duplicate dict key ${String(current.sortKey.value)}`);
    }
  }
  out.tag(Tag.DICT);
  for (const { key, value, sortKey } of keyed) {
    if (isMetaMarked(value)) continue;
    const entrySite = within(site, sortKey.kind === "str" ? `.${sortKey.value}` : `[${String(sortKey.value)}]`);
    encodeValue(key, out, computation, entrySite);
    encodeValue(value, out, computation, entrySite);
  }
}

/** §6.1: `00 ‖ (cycle reference | identifier [‖ instance suffix])`. */
function encodeNested(node: ConfigNode, out: RecordWriter, computation: Computation, path: string): void {
  out.tag(Tag.OBJECT);
  const { stack } = computation;
  const index = stack.indexOf(node);
  if (index >= 0) {
    for (let i = index; i < stack.length; i++) computation.loops.add(stack[i] as ConfigNode);
    out.tag(Tag.CYCLE_REFERENCE);
    out.i64(BigInt(stack.length - index), { config: path, argument: null, inner: "" });
    return;
  }
  const cached = node.sealed ? cache.get(node) : undefined;
  const id = cached ?? computeIdentifier(node, computation, path);
  out.raw(id);
  if (node.type.instance) {
    const key = hex(id);
    const seen = computation.instances.get(key);
    if (seen === undefined) {
      computation.instances.set(key, [node]);
      return;
    }
    let position = seen.indexOf(node);
    if (position < 0) position = seen.push(node) - 1;
    if (position > 0) {
      out.tag(Tag.INSTANCE);
      out.i64(BigInt(position), { config: path, argument: null, inner: "" });
    }
  }
}
