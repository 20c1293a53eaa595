/** Declaration defaults (reference/identifiers.md §1.4). */
import type { ConfigNode, TypedValue } from "./values.js";

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
