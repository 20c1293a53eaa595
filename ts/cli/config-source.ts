// Where, in a module's text, the ConfigError of a `.C()` call points. JavaScript builds the inner
// configurations first, so `HingeLoss.C({ margn: 1 })` throws before the `LossTrainer.C({` and
// `Learner.C({` around it exist: its error can name only `hingeLoss.margn`, at the line of its
// call. The text still holds what the values could not: the key's own line, and the literal
// nesting up to the outermost `.C(` (`learner.trainer.hooks[0].margn`). A light reading of the
// text (tokens and brackets, no full parser) finds them; what it cannot follow (a value made by a
// function, a variable, a spread) keeps the error's own path.

interface Token {
  readonly text: string;
  readonly kind: "name" | "string" | "number" | "punct" | "opaque";
  readonly line: number;
  readonly column: number;
}

/** Where a parameter's value sits: the key of an object literal, or the index of an array's item. */
type Up = { readonly object: ObjectNode; readonly key: string } | { readonly array: ArrayNode; readonly index: number } | { readonly call: CallNode };

interface CallNode {
  readonly kind: "call";
  /** The class name before `.C`. */
  readonly name: string;
  /** The `C` token: where a stack frame of the call points. */
  readonly at: Token;
  arg?: ObjectNode;
  readonly up: Up | undefined;
}

interface ObjectNode {
  readonly kind: "object";
  readonly keys: Map<string, { readonly at: Token; value: Node | undefined }>;
  readonly up: Up | undefined;
}

interface ArrayNode {
  readonly kind: "array";
  readonly items: Map<number, { readonly at: Token; readonly value: Node | undefined }>;
  readonly up: Up | undefined;
}

type Node = CallNode | ObjectNode | ArrayNode;

/** What a ConfigError's place becomes: the key's line and column (1-based), and the path from the outermost configuration. */
export interface SourcePlace {
  readonly line: number;
  readonly column: number;
  readonly path: string;
}

const PUNCT3 = new Set(["...", "===", "!==", "**=", "<<=", ">>=", ">>>"]);
const PUNCT2 = new Set(["=>", "?.", "??", "&&", "||", "==", "!=", "<=", ">=", "++", "--", "+=", "-=", "*=", "/=", "**", "<<", ">>"]);
/** After these, a `/` starts a regular expression rather than a division. */
const BEFORE_REGEX = new Set(["(", ",", "=", ":", "[", "!", "&", "|", "?", "{", "}", ";", "=>", "&&", "||", "??", "return", "typeof"]);

/** The text's tokens, comments skipped; strings, templates and regular expressions as one token each. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let line = 1;
  let lineStart = 0;
  let i = 0;
  const skip = (end: number) => {
    for (let j = i; j < end; j++) if (text[j] === "\n") [line, lineStart] = [line + 1, j + 1];
    i = end;
  };
  while (i < text.length) {
    const ch = text[i]!;
    const rest = text.slice(i, i + 3);
    if (/\s/.test(ch)) skip(i + 1);
    else if (rest.startsWith("//")) skip(text.indexOf("\n", i) < 0 ? text.length : text.indexOf("\n", i));
    else if (rest.startsWith("/*")) skip(text.indexOf("*/", i + 2) < 0 ? text.length : text.indexOf("*/", i + 2) + 2);
    else {
      const [kind, end] = tokenAt(text, i, tokens[tokens.length - 1]?.text);
      tokens.push({ text: text.slice(i, end), kind, line, column: i - lineStart + 1 });
      skip(end);
    }
  }
  return tokens;
}

/** The kind and end of the token at `i` (not a space or comment). */
function tokenAt(text: string, i: number, previous: string | undefined): [Token["kind"], number] {
  const ch = text[i]!;
  const word = /^[A-Za-z_$\u0080-\uffff][\w$\u0080-\uffff]*/.exec(text.slice(i, i + 200));
  if (word) return ["name", i + word[0].length];
  const number = /^\.?\d[\w.]*/.exec(text.slice(i, i + 100));
  if (number) return ["number", i + number[0].length];
  if (ch === '"' || ch === "'") return ["string", quotedEnd(text, i, ch)];
  if (ch === "`") return ["opaque", templateEnd(text, i)];
  if (ch === "/" && (previous === undefined || BEFORE_REGEX.has(previous))) return ["opaque", regexEnd(text, i)];
  const three = text.slice(i, i + 3);
  if (PUNCT3.has(three)) return ["punct", i + 3];
  return ["punct", i + (PUNCT2.has(text.slice(i, i + 2)) ? 2 : 1)];
}

function quotedEnd(text: string, i: number, quote: string): number {
  let j = i + 1;
  while (j < text.length && text[j] !== quote && text[j] !== "\n") j += text[j] === "\\" ? 2 : 1;
  return Math.min(j + 1, text.length);
}

/** The end of a template literal, its `${...}` parts (strings and templates in them) included. */
function templateEnd(text: string, i: number): number {
  let j = i + 1;
  while (j < text.length && text[j] !== "`") {
    if (text[j] === "\\") j += 2;
    else if (text.startsWith("${", j)) j = substitutionEnd(text, j + 2);
    else j++;
  }
  return Math.min(j + 1, text.length);
}

function substitutionEnd(text: string, j: number): number {
  let depth = 1;
  while (j < text.length && depth > 0) {
    const ch = text[j]!;
    if (ch === "'" || ch === '"') j = quotedEnd(text, j, ch);
    else if (ch === "`") j = templateEnd(text, j);
    else {
      depth += ch === "{" ? 1 : ch === "}" ? -1 : 0;
      j++;
    }
  }
  return j;
}

function regexEnd(text: string, i: number): number {
  let j = i + 1;
  let inClass = false;
  while (j < text.length && text[j] !== "\n" && (inClass || text[j] !== "/")) {
    if (text[j] === "\\") j++;
    else if (text[j] === "[") inClass = true;
    else if (text[j] === "]") inClass = false;
    j++;
  }
  while (j + 1 < text.length && /[a-z]/.test(text[j + 1]!)) j++;
  return Math.min(j + 1, text.length);
}

const OPEN: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

/** For each opening bracket's index, its closing one's (unbalanced text: as far as it goes). */
function brackets(tokens: readonly Token[]): Map<number, number> {
  const closeOf = new Map<number, number>();
  const open: number[] = [];
  tokens.forEach((t, i) => {
    if (t.kind !== "punct") return;
    if (t.text in OPEN) open.push(i);
    else if (t.text === ")" || t.text === "]" || t.text === "}") {
      const start = open.pop();
      if (start !== undefined) closeOf.set(start, i);
    }
  });
  return closeOf;
}

/** The tokens and the configuration literals (`X.C({...})`, with the objects and arrays inside) of a module's text. */
class SourceReading {
  readonly tokens: Token[];
  private readonly closeOf: Map<number, number>;
  /** Every `X.C(` call, by the index of its `C`. */
  readonly calls = new Map<number, CallNode>();

  constructor(text: string) {
    this.tokens = tokenize(text);
    this.closeOf = brackets(this.tokens);
    this.tokens.forEach((_, i) => {
      if (this.isCallAt(i) && !this.calls.has(i)) this.call(i, undefined);
    });
  }

  /** Whether token `i` is the `C` of `NAME.C(`. */
  private isCallAt(i: number): boolean {
    const t = this.tokens;
    return t[i]?.text === "C" && t[i - 1]?.text === "." && t[i - 2]?.kind === "name" && t[i + 1]?.text === "(";
  }

  private call(c: number, up: Up | undefined): CallNode {
    const node: CallNode = { kind: "call", name: this.tokens[c - 2]!.text, at: this.tokens[c]!, up };
    this.calls.set(c, node);
    const argEnd = this.closeOf.get(c + 2);
    const next = argEnd === undefined ? undefined : this.tokens[argEnd + 1]?.text;
    if (this.tokens[c + 2]?.text === "{" && (next === ")" || next === ",")) node.arg = this.object(c + 2, { call: node });
    return node;
  }

  /** The top-level parts of the bracket opened at `open`, as [start, end) token ranges. */
  private parts(open: number): [number, number][] {
    const close = this.closeOf.get(open) ?? this.tokens.length;
    const parts: [number, number][] = [];
    let start = open + 1;
    for (let i = start; i < close; i++) {
      if (this.closeOf.has(i)) i = this.closeOf.get(i)!;
      else if (this.tokens[i]!.text === ",") {
        parts.push([start, i]);
        start = i + 1;
      }
    }
    if (start < close) parts.push([start, close]);
    return parts;
  }

  private object(open: number, up: Up | undefined): ObjectNode {
    const node: ObjectNode = { kind: "object", keys: new Map(), up };
    for (const [start, end] of this.parts(open)) {
      const key = this.tokens[start]!;
      if (key.kind !== "name" && key.kind !== "string" && key.kind !== "number") continue;
      const name = key.kind === "string" ? key.text.slice(1, -1) : key.text;
      if (end === start + 1) node.keys.set(name, { at: key, value: undefined }); // shorthand
      else if (this.tokens[start + 1]?.text === ":") {
        const entry: { at: Token; value: Node | undefined } = { at: key, value: undefined };
        node.keys.set(name, entry);
        entry.value = this.value(start + 2, end, { object: node, key: name });
      }
    }
    return node;
  }

  private array(open: number, up: Up | undefined): ArrayNode {
    const node: ArrayNode = { kind: "array", items: new Map(), up };
    for (const [index, [start, end]] of this.parts(open).entries()) {
      if (this.tokens[start]!.text === "...") break; // the indices after a spread are not known
      node.items.set(index, { at: this.tokens[start]!, value: this.value(start, end, { array: node, index }) });
    }
    return node;
  }

  /** The literal that tokens [start, end) are, when they are one (TypeScript's `as ...`, `!` after it allowed). */
  private value(start: number, end: number, up: Up): Node | undefined {
    const first = this.tokens[start]?.text;
    let stop: number | undefined;
    let make: (() => Node) | undefined;
    if (first === "{" || first === "[") {
      stop = this.closeOf.get(start);
      make = () => (first === "{" ? this.object(start, up) : this.array(start, up));
    } else {
      let c = start;
      while (this.tokens[c]?.kind === "name" && this.tokens[c + 1]?.text === "." && !this.isCallAt(c + 2)) c += 2;
      if (this.isCallAt(c + 2)) {
        stop = this.closeOf.get(c + 3);
        make = () => this.call(c + 2, up);
      }
    }
    if (stop === undefined || !make) return undefined;
    const after = this.tokens[stop + 1]?.text;
    return stop + 1 === end || after === "as" || after === "satisfies" || after === "!" ? make() : undefined;
  }
}

/** `learner.trainer.hooks[0]` as its parts: a root, then keys and indices. */
function pathParts(path: string): { root: string; parts: (string | number)[] } | undefined {
  const m = /^([^.[\]]+)((?:\.[^.[\]]+|\[\d+\])*)$/.exec(path);
  if (!m) return undefined;
  const parts = [...m[2]!.matchAll(/\.([^.[\]]+)|\[(\d+)\]/g)].map((p) => (p[1] !== undefined ? p[1] : Number(p[2])));
  return { root: m[1]!, parts };
}

function render(root: string, parts: readonly (string | number)[]): string {
  return parts.reduce<string>((acc, p) => (typeof p === "number" ? `${acc}[${p}]` : `${acc}.${p}`), root);
}

/** The call's root and the keys and indices from the outermost `.C(` that literally encloses it. */
function outerPath(call: CallNode): { root: string | undefined; parts: (string | number)[] } {
  let root: string | undefined;
  let committed: (string | number)[] = [];
  let pending: (string | number)[] = [];
  let node: Node = call;
  for (let up = node.up; up; up = node.up) {
    if ("call" in up) {
      node = up.call;
      committed = [...pending, ...committed];
      pending = [];
      root = node.name.charAt(0).toLowerCase() + node.name.slice(1);
    } else if ("object" in up) {
      pending.unshift(up.key);
      node = up.object;
    } else {
      pending.unshift(up.index);
      node = up.array;
    }
  }
  return { root, parts: committed };
}

/** The deepest key or item of `parts` written out inside the call's literal. */
function keyToken(call: CallNode, parts: readonly (string | number)[]): Token | undefined {
  let node: Node | undefined = call;
  let found: Token | undefined;
  for (const part of parts) {
    if (node?.kind === "call") node = node.arg;
    const entry: { at: Token; value: Node | undefined } | undefined =
      node?.kind === "object" && typeof part === "string" ? node.keys.get(part) : node?.kind === "array" && typeof part === "number" ? node.items.get(part) : undefined;
    if (!entry) break;
    found = entry.at;
    node = entry.value;
  }
  return found;
}

/**
 * For the ConfigError of `path` (rooted at the class being built: `hingeLoss.margn`) that the
 * `.C(` call at `at` (1-based line and column of its `C`, as a stack frame gives them) of the
 * module text `text` raised: the line and column of the offending key (else of the call), and the
 * path from the outermost `.C(` that encloses the call literally
 * (`learner.trainer.hooks[0].margn`; else `path`). Undefined when no `.C(` call is on that line.
 */
export function placeInSource(text: string, at: { readonly line: number; readonly column: number }, path: string): SourcePlace | undefined {
  const parsed = pathParts(path);
  const onLine = [...new SourceReading(text).calls.values()].filter((c) => c.at.line === at.line);
  const first = parsed?.parts[0];
  const call =
    onLine.find((c) => c.at.column === at.column) ??
    onLine.find((c) => typeof first === "string" && c.arg?.keys.has(first)) ??
    onLine[0];
  if (!call) return undefined;
  if (!parsed) return { line: call.at.line, column: call.at.column, path };
  const key = keyToken(call, parsed.parts) ?? call.at;
  const outer = outerPath(call);
  const full = outer.root === undefined ? path : render(outer.root, [...outer.parts, ...parsed.parts]);
  return { line: key.line, column: key.column, path: full };
}
