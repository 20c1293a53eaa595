/**
 * Declaration defaults (reference/identifiers.md §1.4) and the Python `==` used by the
 * `ignoreDefault` test (§5.4).
 */
import { identifier } from "./hash.js";
import { isMetaMarked, type ConfigNode, type TypedValue } from "./values.js";

/**
 * Gives every absent argument of `node` a deep copy of its default, `none` when it has no
 * default and is not required; required arguments stay unset. Present values are kept.
 */
export function applyDefaults(node: ConfigNode): void {
  for (const argument of node.type.arguments) {
    if (node.values.has(argument.name)) continue;
    if (argument.default !== null) node.values.set(argument.name, deepCopyValue(argument.default));
    else if (!argument.required) node.values.set(argument.name, { kind: "none" });
  }
}

/**
 * A deep copy of `value`. A copied configuration is a new object keeping copies of its
 * arguments that have no generator and are not constants; the others get their own
 * defaults; it has no meta, task or init-task marks and is not sealed. Objects shared
 * within `value` (or cycles) stay shared in the copy.
 */
export function deepCopyValue(value: TypedValue, copies: Map<ConfigNode, ConfigNode> = new Map()): TypedValue {
  switch (value.kind) {
    case "list":
    case "set":
      return { kind: value.kind, items: value.items.map((item) => deepCopyValue(item, copies)) };
    case "dict":
      return {
        kind: "dict",
        entries: value.entries.map(({ key, value: v }) => ({ key: deepCopyValue(key, copies), value: deepCopyValue(v, copies) })),
      };
    case "config":
      return { kind: "config", node: copyNode(value.node, copies) };
    case "enum":
      return { kind: "enum", enum: value.enum, member: value.member };
    case "none":
      return { kind: "none" };
    default:
      return { ...value };
  }
}

function copyNode(node: ConfigNode, copies: Map<ConfigNode, ConfigNode>): ConfigNode {
  const existing = copies.get(node);
  if (existing) return existing;
  const copy: ConfigNode = {
    type: node.type,
    values: new Map(),
    meta: null,
    producer: null,
    submitted: false,
    initTasks: [],
    sealed: false,
  };
  copies.set(node, copy);
  for (const argument of node.type.arguments) {
    const value = node.values.get(argument.name);
    if (value !== undefined && argument.generator === null && !argument.constant) {
      copy.values.set(argument.name, deepCopyValue(value, copies));
    }
  }
  applyDefaults(copy);
  return copy;
}

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
