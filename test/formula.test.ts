import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { canonicalFormula, formulaTerms } from "../ts/config/formula.js";

interface Case {
  formula: string;
  coefficients?: string[];
  variables?: string[];
  canonical?: string;
  error?: string;
}

interface Table {
  coefficients: string[];
  variables: string[];
  cases: Case[];
}

// The canonical texts and errors of the parser (the only one: the core receives expanded terms).
const table = JSON.parse(readFileSync(new URL("./fixtures/formulas.json", import.meta.url), "utf8")) as Table;

describe("formula canonicalisation", () => {
  it("reproduces the case table, texts and errors", () => {
    expect(table.cases.length).toBeGreaterThan(40);
    for (const c of table.cases) {
      const got = canonicalFormula(c.formula, c.coefficients ?? table.coefficients, c.variables ?? table.variables);
      const expected = c.error !== undefined ? { error: c.error } : c.canonical;
      expect(got, JSON.stringify(c.formula)).toEqual(expected);
    }
  });

  it("gives canonical texts that are fixed points", () => {
    for (const c of table.cases.filter((x) => x.canonical !== undefined && x.canonical !== "0")) {
      const coefficients = c.coefficients ?? table.coefficients;
      const variables = c.variables ?? table.variables;
      expect(canonicalFormula(c.canonical ?? "", coefficients, variables)).toBe(c.canonical);
    }
  });

  it("gives the core the expanded terms in canonical order, and the same errors", () => {
    const [coefficients, variables] = [["a", "b", "c"], ["bs", "l"]];
    expect(formulaTerms("a*bs - b*bs*l", coefficients, variables)).toEqual([
      { coefficient: "a", factor: 1, powers: { bs: 1 } },
      { coefficient: "b", factor: -1, powers: { bs: 1, l: 1 } },
    ]);
    expect(formulaTerms("c + 2*(bs + l)**2 + a*bs*(l + 1) + 7", coefficients, variables)).toEqual([
      { coefficient: "a", factor: 1, powers: { bs: 1, l: 1 } },
      { coefficient: "a", factor: 1, powers: { bs: 1 } },
      { coefficient: "c", factor: 1, powers: {} },
      { factor: 2, powers: { bs: 2 } },
      { factor: 4, powers: { bs: 1, l: 1 } },
      { factor: 2, powers: { l: 2 } },
      { factor: 7, powers: {} },
    ]);
    for (const c of table.cases.filter((x) => x.error !== undefined)) {
      expect(formulaTerms(c.formula, c.coefficients ?? table.coefficients, c.variables ?? table.variables), c.formula).toEqual({ error: c.error });
    }
  });
});
