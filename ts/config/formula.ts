/**
 * Memory cost formulas of the PredictiveBatcher: a sum of terms, each a number times exactly one
 * coefficient times powers of variables (`a*bs*l**2 + b*bs*l + c`). The canonical form sorts
 * terms by coefficient and factors by name, so equivalent formulas share an identifier.
 */

export interface FormulaTerm {
  /** Numeric factor. */
  readonly scale: number;
  readonly coefficient: string;
  /** Variable name to power (≥ 1), sorted by name. */
  readonly powers: ReadonlyArray<readonly [string, number]>;
}

type Parsed = { terms: FormulaTerm[] } | { error: string };

const TOKEN = /\s*(?:(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[*+-]))/y;

/** Parses and checks a formula against the declared names. */
export function parseFormula(formula: string, coefficients: ReadonlySet<string>, variables: ReadonlySet<string>): Parsed {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < formula.length) {
    if (/^\s*$/.test(formula.slice(at))) break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(formula);
    if (!m) return { error: `unexpected character ${JSON.stringify(formula.slice(at).trim()[0])} at position ${at}` };
    tokens.push(m[1] ?? m[2] ?? m[3] ?? "");
    at = TOKEN.lastIndex;
  }
  if (tokens.length === 0) return { error: "the formula is empty" };

  const terms: FormulaTerm[] = [];
  let i = 0;
  const seen = new Set<string>();
  while (i < tokens.length) {
    let sign = 1;
    if (terms.length > 0 || tokens[i] === "-" || tokens[i] === "+") {
      const op = tokens[i++];
      if (op !== "+" && op !== "-") return { error: `expected + or - before ${JSON.stringify(op)}` };
      sign = op === "-" ? -1 : 1;
    }
    let scale = sign;
    let coefficient: string | undefined;
    const powers = new Map<string, number>();
    for (;;) {
      const factor = tokens[i++];
      if (factor === undefined || factor === "*" || factor === "**" || factor === "+" || factor === "-") {
        return { error: `a term ends early near ${JSON.stringify(factor ?? "end of formula")}` };
      }
      let power = 1;
      if (tokens[i] === "**") {
        const exponent = tokens[i + 1];
        if (exponent === undefined || !/^\d+$/.test(exponent)) return { error: `${factor}** needs a whole-number exponent` };
        power = Number(exponent);
        i += 2;
      }
      if (/^\d/.test(factor)) {
        scale *= Number(factor) ** power;
      } else if (coefficients.has(factor)) {
        if (coefficient !== undefined || power !== 1) {
          return { error: `the formula is not linear in its coefficients (term with ${coefficient ?? factor}${power !== 1 ? `**${power}` : ""}${coefficient !== undefined ? `*${factor}` : ""})` };
        }
        coefficient = factor;
      } else if (variables.has(factor)) {
        if (power > 0) powers.set(factor, (powers.get(factor) ?? 0) + power);
      } else {
        return { error: `undeclared symbol "${factor}"` };
      }
      if (tokens[i] !== "*") break;
      i++;
    }
    if (coefficient === undefined) return { error: `every term needs one coefficient (one of ${[...coefficients].sort().join(", ")})` };
    if (seen.has(coefficient)) return { error: `coefficient "${coefficient}" appears in two terms` };
    seen.add(coefficient);
    if (scale === 0 || !Number.isFinite(scale)) return { error: `the term of "${coefficient}" has a factor of ${scale}` };
    terms.push({ scale, coefficient, powers: [...powers.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)) });
  }
  const unused = [...coefficients].filter((c) => !seen.has(c));
  if (unused.length > 0) return { error: `declared coefficients not in the formula: ${unused.sort().join(", ")}` };
  terms.sort((a, b) => (a.coefficient < b.coefficient ? -1 : a.coefficient > b.coefficient ? 1 : 0));
  return { terms };
}

function renderTerm(t: FormulaTerm): string {
  const factors = [t.coefficient, ...t.powers.map(([v, p]) => (p === 1 ? v : `${v}**${p}`))];
  const magnitude = Math.abs(t.scale);
  return (magnitude === 1 ? "" : `${magnitude}*`) + factors.join("*");
}

/** The canonical text of a formula, or the reason it is rejected. */
export function canonicalFormula(
  formula: string,
  coefficients: ReadonlySet<string>,
  variables: ReadonlySet<string>,
): string | { error: string } {
  const parsed = parseFormula(formula, coefficients, variables);
  if ("error" in parsed) return parsed;
  return parsed.terms
    .map((t, k) => {
      const body = renderTerm(t);
      if (k === 0) return t.scale < 0 ? `-${body}` : body;
      return t.scale < 0 ? `- ${body}` : `+ ${body}`;
    })
    .join(" ");
}
