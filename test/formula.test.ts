import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { canonicalFormula } from "../ts/config/formula.js";

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

// The table the Rust core checks too (batching/formula_tests.rs): both sides must agree byte for byte.
const table = JSON.parse(readFileSync(new URL("../crates/core/tests/fixtures/formulas.json", import.meta.url), "utf8")) as Table;

describe("formula canonicalisation", () => {
  it("reproduces the shared case table, texts and errors", () => {
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
});
