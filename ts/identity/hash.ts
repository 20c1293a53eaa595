/**
 * Experimaestro-compatible configuration identifiers ("hash version 2"),
 * reference/identifiers.md §3–§7, and the Python `==` of their `ignoreDefault` test (§5.4).
 */
import { RecordWriter, type Site, Tag, childPath, compareCodePoints, fail, hex, sha256, within } from "./record.js";
import { isMetaMarked, type ArgumentDecl, type ConfigNode, type TypedValue } from "./values.js";

export { IdentifierError, compareCodePoints } from "./record.js";

/** Root of error paths: the declared class name, first letter lowercased (`learner`). */
function rootPath(node: ConfigNode): string {
  const declared = node.type.declaredId || node.type.id;
  const last = declared.slice(declared.lastIndexOf(".") + 1);
  return last.charAt(0).toLowerCase() + last.slice(1);
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

// --- Python `==` (§5.4), for the `ignoreDefault` test: it compares sealed configurations by
// their identifiers, so it and `identifier` call each other.

/** `value` with the meta-marked configurations of a list, set or dict removed (one level). */
export function withoutMetaMarked(value: TypedValue): TypedValue {
  switch (value.kind) {
    case "list":
    case "set":
      return { kind: value.kind, items: value.items.filter((item) => !isMetaMarked(item)) };
    case "dict":
      return { kind: "dict", entries: value.entries.filter((entry) => !isMetaMarked(entry.value)) };
    default:
      return value;
  }
}

/** The `ignoreDefault` test of §5.2 rule 5(b): meta-marked configurations leave `value` first. */
export function equalsDefault(defaultValue: TypedValue, value: TypedValue): boolean {
  return valuesEqual(defaultValue, withoutMetaMarked(value));
}

/**
 * Python `==` on typed values (§5.4): numbers compare by value across int, float and bool;
 * lists pairwise; dicts and sets regardless of order; configurations by type and every
 * argument value (ignored ones included), or by identifier when both are sealed.
 */
export function valuesEqual(a: TypedValue, b: TypedValue): boolean {
  return equal(a, b, new Map());
}

/** Pairs of configurations being compared; a pair met again inside its own comparison is assumed equal (cycles). */
type Pending = Map<ConfigNode, Set<ConfigNode>>;

function numeric(value: TypedValue): bigint | number | null {
  switch (value.kind) {
    case "int":
    case "float":
      return value.value;
    case "bool":
      return value.value ? 1n : 0n;
    default:
      return null;
  }
}

function equal(a: TypedValue, b: TypedValue, pending: Pending): boolean {
  const x = numeric(a);
  const y = numeric(b);
  // Loose equality compares bigint and number exactly (1n == 1.0, 2n ** 60n == 2 ** 60); NaN is unequal.
  if (x !== null || y !== null) return x !== null && y !== null && x == y;
  switch (a.kind) {
    case "none":
      return b.kind === "none";
    case "str":
    case "path":
      return b.kind === a.kind && b.value === a.value;
    case "enum":
      return b.kind === "enum" && b.enum === a.enum && b.member === a.member;
    case "list":
      return (
        b.kind === "list" &&
        a.items.length === b.items.length &&
        a.items.every((item, i) => equal(item, b.items[i] as TypedValue, pending))
      );
    case "set":
      return (
        b.kind === "set" &&
        a.items.every((item) => b.items.some((other) => equal(item, other, pending))) &&
        b.items.every((item) => a.items.some((other) => equal(item, other, pending)))
      );
    case "dict":
      return b.kind === "dict" && dictIncludes(a, b, pending) && dictIncludes(b, a, pending);
    case "config":
      return b.kind === "config" && configsEqual(a.node, b.node, pending);
    default:
      return false;
  }
}

type Dict = Extract<TypedValue, { kind: "dict" }>;

function dictIncludes(a: Dict, b: Dict, pending: Pending): boolean {
  return a.entries.every((entry) => {
    const match = b.entries.find((other) => equal(entry.key, other.key, pending));
    return match !== undefined && equal(entry.value, match.value, pending);
  });
}

function configsEqual(a: ConfigNode, b: ConfigNode, pending: Pending): boolean {
  if (a === b) return true;
  if (a.type.id !== b.type.id) return false;
  if (a.sealed && b.sealed) return Buffer.from(identifier(a)).equals(identifier(b));
  const partners = pending.get(a) ?? new Set<ConfigNode>();
  if (partners.has(b)) return true;
  partners.add(b);
  pending.set(a, partners);
  const none: TypedValue = { kind: "none" };
  try {
    return a.type.arguments.every((argument) =>
      equal(a.values.get(argument.name) ?? none, b.values.get(argument.name) ?? none, pending),
    );
  } finally {
    partners.delete(b);
  }
}
