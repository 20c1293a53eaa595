import { ConfigError } from "../../errors.js";
import { configOf, defineConfig } from "../class.js";
import { param } from "../declare.js";
import { canonicalFormula, formulaTerms } from "../formula.js";
import { dict, float, int, set, str } from "../types.js";

/** `xpm_torch.batchers.Batcher`: no micro-batching. */
export const Batcher = defineConfig("xpm_torch.batchers.Batcher", {});

/** `xpm_torch.batchers.PowerAdaptativeBatcher`: halves, thirds, ... the batch on out-of-memory. */
export const PowerAdaptativeBatcher = defineConfig("xpm_torch.batchers.PowerAdaptativeBatcher", {}, { extends: Batcher });

/** `xpm_torch.batchers.ProbePoint`: one `{variable: value}` point to measure memory at. */
export const ProbePoint = defineConfig("xpm_torch.batchers.ProbePoint", {
  values: param(dict(int((s) => s.min(1)))).help("Variable name to value"),
});

/** `xpm_torch.batchers.BatchDimsProvider`: reads formula variables from batches, builds probes. */
export const BatchDimsProvider = defineConfig(
  "xpm_torch.batchers.BatchDimsProvider",
  { probe_dims: param(set(configOf(ProbePoint))).help("Points at which memory is probed") },
  { standIn: true },
);

/** `xpm_torch.batchers.MicroBatchPacker`: how an outer batch is split. */
export const MicroBatchPacker = defineConfig("xpm_torch.batchers.MicroBatchPacker", {}, { abstract: true });

/** `xpm_torch.batchers.UniformPacker`: one micro-batch size for the whole outer batch. */
export const UniformPacker = defineConfig("xpm_torch.batchers.UniformPacker", {}, { extends: MicroBatchPacker });

/** `xpm_torch.batchers.AdaptivePacker`: greedy packing, optionally heaviest records first. */
export const AdaptivePacker = defineConfig(
  "xpm_torch.batchers.AdaptivePacker",
  { sort_by: param(str((s) => s.min(1))).optional().help("Variable to sort records by, largest first (default: unsorted)") },
  { extends: MicroBatchPacker },
);

/** `xpm_torch.batchers.PredictiveBatcher`: fits a memory formula on probes, sizes micro-batches. */
export const PredictiveBatcher = defineConfig(
  "xpm_torch.batchers.PredictiveBatcher",
  {
    formula: param(str((s) => s.min(1))).help("Cost formula, linear in coefficients"),
    coefficient_names: param(set(str((s) => s.min(1)))).help("Unknown coefficients of the formula"),
    variable_names: param(set(str((s) => s.min(1)))).help("Input variables of the formula"),
    batch_size_variable: param(str((s) => s.min(1))).default("bs").help("The variable that is the micro-batch size"),
    memory_fraction: param(float((s) => s.gt(0).max(1))).default(0.75).help("Fraction of free memory the batches may use"),
    extra_overhead_bytes: param(int((s) => s.min(0))).default(0, { ignoreDefault: true }).help("Bytes kept out of the memory budget"),
    min_batch_size: param(int((s) => s.min(1))).default(1).help("Smallest micro-batch"),
    dims_provider: param(configOf(BatchDimsProvider)).help("Probe points and batch dimensions"),
    packer: param(configOf(MicroBatchPacker)).factory(() => UniformPacker.C({}), { ignoreDefault: true }).help("How outer batches are packed (default: one micro-batch size per batch)"),
  },
  {
    extends: Batcher,
    validate(v, issue) {
      const coefficients = v.coefficient_names;
      const variables = v.variable_names;
      for (const name of coefficients) {
        if (variables.has(name)) issue("coefficient_names", `"${name}" is also a variable`);
      }
      if (!variables.has(v.batch_size_variable)) {
        issue("batch_size_variable", `"${v.batch_size_variable}" is not one of variable_names`);
      }
      const probes = [...v.dims_provider.probe_dims];
      probes.forEach((probe, i) => {
        const keys = Object.keys(probe.values).sort();
        const expected = [...variables].sort();
        if (keys.join(",") !== expected.join(",")) {
          issue(`dims_provider.probe_dims[${i}]`, `probe variables {${keys.join(", ")}} must be exactly {${expected.join(", ")}}`);
        }
      });
      if (probes.length < coefficients.size) {
        issue("dims_provider.probe_dims", `${probes.length} probe points cannot fit ${coefficients.size} coefficients`);
      }
      // Checked, but kept as written: experimaestro hashes the text as given (xpm_torch 0.3.1's
      // canonicalising __validate__ is shadowed by experimaestro's own and never runs on a config).
      const canonical = canonicalFormula(v.formula, coefficients, variables);
      if (typeof canonical !== "string") issue("formula", canonical.error);
    },
    // The core fits and evaluates the formula from its expanded terms: it has no parser.
    wireSchema: {
      properties: {
        formula_terms: {
          type: "array",
          items: { $ref: "#/$defs/FormulaTerm" },
          description: "The formula expanded by TypeScript, its only parser, in canonical order",
        },
      },
      required: ["formula_terms"],
      defs: {
        FormulaTerm: {
          type: "object",
          description: "One term of an expanded cost formula: factor × Π variable^power, times the coefficient when there is one",
          properties: {
            coefficient: { type: "string", description: "The coefficient the term multiplies (none: a known part of the cost)" },
            factor: { type: "number", description: "A whole number" },
            powers: { type: "object", additionalProperties: { type: "integer", minimum: 0 }, description: "The power of each variable" },
          },
          required: ["factor", "powers"],
          additionalProperties: false,
        },
      },
    },
    wire(v) {
      const terms = formulaTerms(v.formula, v.coefficient_names, v.variable_names);
      if (!Array.isArray(terms)) throw new ConfigError("formula", terms.error);
      return { formula_terms: terms.map(({ coefficient, factor, powers }) => ({ ...(coefficient === undefined ? {} : { coefficient }), factor, powers: { ...powers } })) };
    },
  },
);
