/**
 * Memory cost formulas of the PredictiveBatcher: parsed with Python's precedence, expanded with
 * exact fractions, grouped by coefficient, checked, and rendered in the reference's canonical
 * text (case table: `test/fixtures/formulas.json`). This is the only parser: the core receives
 * the expanded terms (`formulaTerms`, the `formula_terms` of the wire) and never reads the text.
 */

import { Polynomial, Rational, TooLarge } from "./polynomial.js";

/** Why a formula was rejected. */
export interface FormulaRejection {
  readonly error: string;
}

class Rejected extends Error {}

const MAX_EXPONENT = 16n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;
const I128_MAX = (1n << 127n) - 1n;

type Token = { kind: "number"; value: bigint; text: string } | { kind: "name"; text: string } | { kind: "op"; text: string };

const OPS = ["**", "+", "-", "*", "/", "^", "(", ")"] as const;

/** Orders strings by code point, as Rust orders `String`s (UTF-8 bytes). */
function byCodePoint(a: string, b: string): number {
  const x = [...a].map((c) => c.codePointAt(0) ?? 0);
  const y = [...b].map((c) => c.codePointAt(0) ?? 0);
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0);
  }
  return x.length - y.length;
}

function sortedUnique(names: Iterable<string>): string[] {
  return [...new Set(names)].sort(byCodePoint);
}

const utf8Length = (s: string): number => new TextEncoder().encode(s).length;

/** A character as Rust's `{:?}` prints it. */
function debugChar(c: string): string {
  const escapes: Record<string, string> = { "\\": "\\\\", "'": "\\'", "\0": "\\0", "\t": "\\t", "\r": "\\r", "\n": "\\n" };
  const escaped = escapes[c] ?? (/\p{Cc}/u.test(c) ? `\\u{${(c.codePointAt(0) ?? 0).toString(16)}}` : c);
  return `'${escaped}'`;
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const chars = [...text];
  let i = 0;
  const offset = () => utf8Length(chars.slice(0, i).join(""));
  const takeWhile = (ok: (c: string) => boolean) => {
    const start = i;
    while (i < chars.length && ok(chars[i] ?? "")) i++;
    return chars.slice(start, i).join("");
  };
  while (i < chars.length) {
    const c = chars[i] ?? "";
    if (/\p{White_Space}/u.test(c)) {
      i++;
    } else if (/^[0-9.]$/.test(c)) {
      const position = offset();
      const literal = takeWhile((ch) => /^[A-Za-z0-9._]$/.test(ch));
      if (!/^[0-9]+$/.test(literal)) {
        throw new Rejected(`the number "${literal}" at position ${position} is not a whole number: numeric factors must be whole numbers`);
      }
      const value = BigInt(literal);
      if (value > I128_MAX) throw new Rejected(`the number ${literal} is too large`);
      tokens.push({ kind: "number", value, text: value.toString() });
    } else if (/^[\p{Alphabetic}_]$/u.test(c)) {
      tokens.push({ kind: "name", text: takeWhile((ch) => /^[\p{Alphabetic}\p{N}_]$/u.test(ch)) });
    } else {
      const rest = chars.slice(i, i + 2).join("");
      const op = OPS.find((o) => rest.startsWith(o));
      if (op === undefined) throw new Rejected(`unexpected character ${debugChar(c)} at position ${offset()}`);
      tokens.push({ kind: "op", text: op });
      i += op.length;
    }
  }
  if (tokens.length === 0) throw new Rejected("the formula is empty");
  return tokens;
}

const quoted = (t: Token) => `"${t.text}"`;

/** Recursive descent with Python's precedence: `+ -` < `* /` < unary sign < `**` (right-assoc). */
class Parser {
  private at = 0;
  constructor(
    private readonly tokens: readonly Token[],
    private readonly symbols: readonly string[],
  ) {}

  private peekOp(): string | undefined {
    const t = this.tokens[this.at];
    return t?.kind === "op" ? t.text : undefined;
  }

  finish(): Polynomial {
    const poly = this.expression();
    const extra = this.tokens[this.at];
    if (extra !== undefined) throw new Rejected(`unexpected ${quoted(extra)} after a complete formula`);
    return poly;
  }

  private expression(): Polynomial {
    let acc = this.product();
    for (let op = this.peekOp(); op === "+" || op === "-"; op = this.peekOp()) {
      this.at++;
      const rhs = this.product();
      acc = acc.add(op === "+" ? rhs : rhs.neg());
    }
    return acc;
  }

  private product(): Polynomial {
    let acc = this.unary();
    for (let op = this.peekOp(); op === "*" || op === "/"; op = this.peekOp()) {
      this.at++;
      const rhs = this.unary();
      if (op === "*") {
        acc = acc.mul(rhs);
      } else {
        const divisor = rhs.asConstant();
        if (divisor === undefined) throw new Rejected("division is only allowed by numbers");
        if (divisor.num === 0n) throw new Rejected("division by zero");
        acc = acc.scale(divisor.recip());
      }
    }
    return acc;
  }

  private unary(): Polynomial {
    const op = this.peekOp();
    if (op === "-" || op === "+") {
      this.at++;
      const inner = this.unary();
      return op === "-" ? inner.neg() : inner;
    }
    return this.power();
  }

  private power(): Polynomial {
    const base = this.atom();
    const op = this.peekOp();
    if (op === "**" || op === "^") {
      this.at++;
      const e = this.unary().asConstant();
      if (e === undefined || e.den !== 1n || e.num < 0n || e.num > MAX_EXPONENT) {
        throw new Rejected(`exponents must be whole numbers from 0 to ${MAX_EXPONENT}`);
      }
      return base.pow(Number(e.num));
    }
    return base;
  }

  private atom(): Polynomial {
    const token = this.tokens[this.at];
    this.at++;
    if (token === undefined) throw new Rejected("the formula ends early");
    if (token.kind === "number") return Polynomial.constant(Rational.whole(token.value), this.symbols.length);
    if (token.kind === "name") return Polynomial.symbol(this.symbols.indexOf(token.text), this.symbols.length);
    if (token.text === "(") {
      const inner = this.expression();
      if (this.peekOp() !== ")") throw new Rejected('a "(" is never closed');
      this.at++;
      return inner;
    }
    throw new Rejected(`unexpected ${quoted(token)}`);
  }
}

interface Monomial {
  readonly factor: bigint;
  readonly exponents: readonly number[];
}

function renderMonomial(m: Monomial, variables: readonly string[]): string {
  const factors: string[] = [];
  const constant = m.exponents.every((e) => e === 0);
  if (m.factor !== 1n || constant) factors.push(m.factor.toString());
  variables.forEach((name, k) => {
    const e = m.exponents[k] ?? 0;
    if (e === 1) factors.push(name);
    else if (e > 1) factors.push(`${name}**${e}`);
  });
  return factors.join("*");
}

/** A formula expanded and grouped: one polynomial in the variables per coefficient, plus the rest. */
interface Expanded {
  readonly coefficients: readonly string[];
  readonly variables: readonly string[];
  /** The monomials multiplying each coefficient, by exponent tuple descending. */
  readonly groups: readonly (readonly Monomial[])[];
  /** The coefficient-free part (known, not fitted). */
  readonly constant: readonly Monomial[];
}

/** Splits the expanded polynomial into per-coefficient groups, checking it is linear in them. */
function split(poly: Polynomial, coefficients: readonly string[], variables: readonly string[]): Expanded {
  const n = coefficients.length;
  const groups: Monomial[][] = coefficients.map(() => []);
  const constant: Monomial[] = [];
  for (const [exponents, factor] of poly.termsDescending()) {
    const coefPart = exponents.slice(0, n);
    const present = coefPart.flatMap((e, k) => (e > 0 ? [k] : []));
    const describe = () => {
      const names = [...coefficients, ...variables].flatMap((name, k) => {
        const e = exponents[k] ?? 0;
        return e === 0 ? [] : [e === 1 ? name : `${name}**${e}`];
      });
      return names.length === 0 ? "(the coefficient-free constant)" : names.join("*");
    };
    if (present.length >= 2) {
      throw new Rejected(`multiple coefficients in the term ${describe()}: the formula must be linear in its coefficients`);
    }
    if (factor.den !== 1n || factor.num < I64_MIN || factor.num > I64_MAX) {
      throw new Rejected(`the term ${describe()} has the non-integer factor ${factor.toString()}: numeric factors must be whole numbers`);
    }
    const monomial = { factor: factor.num, exponents: exponents.slice(n) };
    const k = present[0];
    if (k === undefined) constant.push(monomial);
    else if (coefPart[k] === 1) groups[k]?.push(monomial);
    else throw new Rejected(`the formula is not linear in ${coefficients[k]} (term ${describe()})`);
  }
  return { coefficients, variables, groups, constant };
}

/** The canonical text: `coef`, `coef*P` or `coef*(P)` per coefficient, then the rest; `0` when empty. */
function render({ coefficients, variables, groups, constant }: Expanded): string {
  const polynomial = (ms: readonly Monomial[]) => ms.map((m) => renderMonomial(m, variables)).join(" + ");
  const parts: string[] = [];
  coefficients.forEach((name, k) => {
    const group = groups[k] ?? [];
    const [one] = group;
    if (one === undefined) return;
    if (group.length > 1) parts.push(`${name}*(${polynomial(group)})`);
    else if (one.factor === 1n && one.exponents.every((e) => e === 0)) parts.push(name);
    else parts.push(`${name}*${renderMonomial(one, variables)}`);
  });
  if (constant.length > 0) parts.push(polynomial(constant));
  return parts.length === 0 ? "0" : parts.join(" + ");
}

function expand(formula: string, coefficientNames: Iterable<string>, variableNames: Iterable<string>): Expanded {
  const coefficients = sortedUnique(coefficientNames);
  const variables = sortedUnique(variableNames);
  const both = coefficients.find((c) => variables.includes(c));
  if (both !== undefined) throw new Rejected(`"${both}" is declared both as a coefficient and as a variable`);
  const symbols = [...coefficients, ...variables];
  const tokens = tokenize(formula);
  const undeclared = sortedUnique(tokens.flatMap((t) => (t.kind === "name" && !symbols.includes(t.text) ? [t.text] : [])));
  if (undeclared.length > 0) {
    throw new Rejected(`undeclared symbols: ${undeclared.join(", ")} (declare them in coefficient_names or variable_names)`);
  }
  return split(new Parser(tokens, symbols).finish(), coefficients, variables);
}

function rejectionOr<T>(make: () => T): T | FormulaRejection {
  try {
    return make();
  } catch (e) {
    if (e instanceof Rejected) return { error: e.message };
    if (e instanceof TooLarge) return { error: "the formula's numbers grow too large" };
    throw e;
  }
}

/**
 * One term of an expanded formula, as the core reads it: `factor × Π variable^power`, times the
 * coefficient when there is one (otherwise a known part of the cost, not fitted).
 */
export interface FormulaTerm {
  readonly coefficient?: string;
  /** A whole number; a float64 on the wire, as the core computes costs in float64. */
  readonly factor: number;
  /** The power of each variable of the term; variables of power 0 are left out. */
  readonly powers: Readonly<Record<string, number>>;
}

/**
 * The expanded terms of a formula, in canonical order (coefficients sorted, each one's monomials
 * by exponents descending, then the coefficient-free part), or the reason it is rejected (as
 * {@link canonicalFormula}). Example: `a*bs - b*bs*l` gives
 * `[{coefficient: "a", factor: 1, powers: {bs: 1}}, {coefficient: "b", factor: -1, powers: {bs: 1, l: 1}}]`.
 */
export function formulaTerms(formula: string, coefficients: Iterable<string>, variables: Iterable<string>): FormulaTerm[] | FormulaRejection {
  return rejectionOr(() => {
    const { coefficients: names, variables: order, groups, constant } = expand(formula, coefficients, variables);
    const term = (m: Monomial, coefficient?: string): FormulaTerm => {
      const powers = Object.fromEntries(order.flatMap((name, k) => ((m.exponents[k] ?? 0) > 0 ? [[name, m.exponents[k] ?? 0]] : [])));
      return { ...(coefficient === undefined ? {} : { coefficient }), factor: Number(m.factor), powers };
    };
    return [...names.flatMap((name, k) => (groups[k] ?? []).map((m) => term(m, name))), ...constant.map((m) => term(m))];
  });
}

/**
 * The canonical text of a formula over the declared coefficient and variable names, or the
 * reason it is rejected: a syntax error, an undeclared symbol, a name declared twice, a term with
 * several coefficients or a coefficient power other than 1, or a non-integer numeric factor.
 * Example: `a*bs - b*bs*l` gives `a*bs + b*-1*bs*l`.
 */
export function canonicalFormula(
  formula: string,
  coefficients: Iterable<string>,
  variables: Iterable<string>,
): string | FormulaRejection {
  return rejectionOr(() => render(expand(formula, coefficients, variables)));
}
