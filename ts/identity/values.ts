/**
 * The typed value model hashed by the experimaestro-compatible identifier
 * (reference/identifiers.md §1.3–§1.5, §9). Every value carries its kind explicitly:
 * JavaScript cannot tell an int from an integral float, so the declared type decides.
 */

/** A declared parameter type (§1.3 `valueType`). */
export type ValueType =
  | { kind: "int" }
  | { kind: "float" }
  | { kind: "str" }
  | { kind: "bool" }
  | { kind: "path" }
  | { kind: "enum"; name: string } // qualified enum name, case preserved
  | { kind: "config"; typeId: string; classes?: readonly string[]; union?: string } // lowercase type id (informative); every class, case preserved; a union's name
  | { kind: "list"; item: ValueType }
  | { kind: "set"; item: ValueType }
  | { kind: "dict"; key: ValueType; value: ValueType }
  | { kind: "optional"; inner: ValueType }
  | { kind: "any" };

/** A value after coercion to its declared type (§1.5). */
export type TypedValue =
  | { kind: "int"; value: bigint }
  | { kind: "float"; value: number }
  | { kind: "bool"; value: boolean }
  | { kind: "str"; value: string }
  | { kind: "none" }
  | { kind: "path"; value: string }
  | { kind: "enum"; enum: string; member: string }
  | { kind: "list"; items: TypedValue[] }
  | { kind: "set"; items: TypedValue[] }
  | { kind: "dict"; entries: { key: TypedValue; value: TypedValue }[] }
  | { kind: "config"; node: ConfigNode };

/** One parameter of a configuration type, inherited ones included (§1.3). */
export interface ArgumentDecl {
  name: string;
  annotation: "param" | "meta" | "constant" | "datapath" | "generated-path";
  valueType: ValueType;
  /** Excluded from the identifier (Meta, DataPath, generated paths, path-typed parameters). */
  ignored: boolean;
  /** No default and not optional. */
  required: boolean;
  /** `null` = no default. Never the typed `none`. */
  default: TypedValue | null;
  /** Skip the parameter while its value equals `default` (§5.3). */
  ignoreDefault: boolean;
  generator: null | "path" | "factory";
  constant: boolean;
}

/** A configuration or task type (§1.3). */
export interface TypeDecl {
  /** The hashed type identifier: always `declaredId` lowercased. */
  id: string;
  /** The identifier as declared, case preserved (the `typename` of params.json). */
  declaredId: string;
  kind: "config" | "task" | "lightweight-task";
  /** Instance configuration: object identity matters (§6.3). */
  instance: boolean;
  arguments: ArgumentDecl[];
}

/** One configuration object of a value graph (§1.4). Nodes are shared by reference. */
export interface ConfigNode {
  type: TypeDecl;
  /** Values after defaults; an absent key is an unset argument. */
  values: Map<string, TypedValue>;
  /** Explicit meta mark (§5.2): `true` removes the node from identifiers, `false` forces it in. */
  meta: boolean | null;
  /** Task mark of a marked task output (§7.2). */
  producer: ConfigNode | null;
  /** The task mark is the node itself (§7.1): emits nothing. */
  submitted: boolean;
  /** Init tasks, in order (§7.3). */
  initTasks: ConfigNode[];
  /** Sealed nodes are immutable and may cache their identifier (§6.4). */
  sealed: boolean;
}

/** A fresh, unmarked, unsealed node of `type` holding `values` (no defaults applied). */
export function createNode(type: TypeDecl, values: Iterable<readonly [string, TypedValue]> = []): ConfigNode {
  return {
    type,
    values: new Map(values),
    meta: null,
    producer: null,
    submitted: false,
    initTasks: [],
    sealed: false,
  };
}

/** Whether `value` is a configuration whose meta mark is `true` (dropped from identifiers). */
export function isMetaMarked(value: TypedValue): boolean {
  return value.kind === "config" && value.node.meta === true;
}

/** Renders a value type in the notation of the vectors file (`dict<str,int>`). */
export function formatValueType(type: ValueType): string {
  switch (type.kind) {
    case "enum":
      return `enum<${type.name}>`;
    case "config":
      return `config<${type.typeId}>`;
    case "list":
    case "set":
      return `${type.kind}<${formatValueType(type.item)}>`;
    case "dict":
      return `dict<${formatValueType(type.key)},${formatValueType(type.value)}>`;
    case "optional":
      return `optional<${formatValueType(type.inner)}>`;
    default:
      return type.kind;
  }
}

/** Parses the type expressions of the vectors file (§1.3): `int`, `list<T>`, `dict<K,V>`, ... */
export function parseValueType(text: string): ValueType {
  let pos = 0;
  const fail = (why: string): never => {
    throw new SyntaxError(`invalid value type ${JSON.stringify(text)} at ${pos}: ${why}`);
  };
  const skipSpaces = (): void => {
    while (text[pos] === " ") pos++;
  };
  const expect = (char: string): void => {
    skipSpaces();
    if (text[pos] !== char) fail(`expected "${char}"`);
    pos++;
  };
  // The name inside enum<...> or config<...>: everything up to the matching ">".
  const rawName = (): string => {
    const start = pos;
    while (pos < text.length && text[pos] !== ">") pos++;
    const name = text.slice(start, pos).trim();
    if (name === "") fail("empty name");
    return name;
  };
  const parse = (): ValueType => {
    skipSpaces();
    const start = pos;
    while (pos < text.length && /[a-z]/.test(text[pos] ?? "")) pos++;
    const word = text.slice(start, pos);
    switch (word) {
      case "int":
      case "float":
      case "str":
      case "bool":
      case "path":
      case "any":
        return { kind: word };
      case "enum":
      case "config": {
        expect("<");
        const name = rawName();
        expect(">");
        return word === "enum" ? { kind: "enum", name } : { kind: "config", typeId: name };
      }
      case "list":
      case "set":
      case "optional": {
        expect("<");
        const inner = parse();
        expect(">");
        if (word === "optional") return { kind: "optional", inner };
        return { kind: word, item: inner };
      }
      case "dict": {
        expect("<");
        const key = parse();
        expect(",");
        const value = parse();
        expect(">");
        return { kind: "dict", key, value };
      }
      default:
        return fail(word === "" ? "expected a type" : `unknown type "${word}"`);
    }
  };
  const type = parse();
  skipSpaces();
  if (pos !== text.length) fail("unexpected trailing text");
  return type;
}
