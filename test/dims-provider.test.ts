// What a BatchDimsProvider written in TypeScript hands the core: one column of values per
// variable, checked, and how each combines over a group of records.
import { describe, expect, it } from "vitest";

import { type DimsProviderBehaviour, defineBatchDimsProvider, dimsColumns } from "../ts/dims-providers.js";
import { registeredBehaviour } from "../ts/extensions.js";
import type { SamplerKind } from "../ts/samplers.js";

const Lengths = defineBatchDimsProvider(
  "tests.dims.Lengths",
  {},
  {
    kind: "pairwise",
    combine: { tokens: "sum" },
    recordDims: (_self, records) => records.map((r) => ({ l: r.positive.length, tokens: r.positive.length })),
    buildProbeBatch: () => [],
  },
);
const behaviour = registeredBehaviour(Lengths.C({ probe_dims: new Set() }))!.behaviour as DimsProviderBehaviour<object, SamplerKind>;

describe("dims providers written in TypeScript", () => {
  it("give the core one column per variable and how it combines", () => {
    expect(dimsColumns(behaviour, [{ l: 3, tokens: 3 }, { tokens: 5, l: 5 }], 2, "bs")).toEqual({
      columns: { l: [3, 5], tokens: [3, 5] },
      combine: { tokens: "sum" },
    });
  });

  it("refuse the batch-size variable, a record count that differs, uneven records and fractions", () => {
    expect(() => dimsColumns(behaviour, [{ bs: 1, l: 3, tokens: 3 }], 1, "bs")).toThrow(
      'recordDims gave the batch-size variable "bs": leave it out, a group\'s is always its record count',
    );
    expect(() => dimsColumns(behaviour, [{ l: 3, tokens: 3 }], 2, "bs")).toThrow("recordDims gave 1 objects for 2 records: give one object per record");
    expect(() => dimsColumns(behaviour, [{ l: 3, tokens: 3 }, { l: 3 }], 2, "bs")).toThrow(
      "recordDims gave {l} for record 1 but {l, tokens} for record 0: give every record the same variables",
    );
    expect(() => dimsColumns(behaviour, [{ l: 2.5, tokens: 3 }], 1, "bs")).toThrow("recordDims gave l = 2.5 for record 0, not a whole number");
    expect(() => dimsColumns(behaviour, [{ l: 3 }], 1, "bs")).toThrow('combine names "tokens", which recordDims does not give (it gives {l})');
  });

  it("refuse a combination other than max or sum when declared", () => {
    expect(() =>
      defineBatchDimsProvider(
        "tests.dims.Mean",
        {},
        { kind: "pairwise", combine: { l: "mean" as "max" }, recordDims: () => [], buildProbeBatch: () => [] },
      ),
    ).toThrow('tests.dims.Mean: combine.l is "mean": use "max" or "sum"');
  });
});
