import { formulaTerms } from "../../ts/config/formula.js";

/**
 * The value of XPM_TORCH_SIMULATED_MEMORY: a device of `capacity` bytes where a micro-batch costs
 * what `formula` (over `bs` and `l`, with the given coefficient values) says, on the `ranks`
 * given (all when left out).
 */
export function simulatedMemory(spec: { capacity: number; formula: string; coefficients: Record<string, number>; ranks?: number[] }): string {
  const { formula, ...rest } = spec;
  const terms = formulaTerms(formula, Object.keys(spec.coefficients), ["bs", "l"]);
  if (!Array.isArray(terms)) throw new Error(`simulated memory formula ${JSON.stringify(formula)}: ${terms.error}`);
  return JSON.stringify({ ...rest, formula_terms: terms });
}
