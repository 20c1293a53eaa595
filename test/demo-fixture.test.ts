// The demo Learner's one JSON copy, crates/core/tests/fixtures/demo.json, which the Rust tests,
// benches, examples and the runner's test read: `npm run build` writes it from
// ts/demo-config.ts (scripts/dev.mjs, demoFixture), and this test fails when it is stale.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { demoLearner } from "../ts/demo-config.js";
import { coreConfigJson } from "../ts/learn.js";
import { repoRoot } from "./helpers/node.js";

const FIXTURE = join(repoRoot, "crates", "core", "tests", "fixtures", "demo.json");

describe("the demo configuration's fixture", () => {
  it("is the wire JSON of demoLearner(), as the build writes it (run `npm run build`)", () => {
    const expected = `${JSON.stringify(JSON.parse(coreConfigJson(demoLearner())), null, 2)}\n`;
    expect(readFileSync(FIXTURE, "utf8")).toBe(expected);
  });
});
