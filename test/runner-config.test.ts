// The configuration `xpm-torch wire` writes for xpm-torch-run, the runner without Node. The Rust
// tests of crates/runner run the demo's fixture with a few fields changed; this test keeps that
// what wire writes today.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { ConfigError, defineListener, demoLearner, Learner, ModuleLoader, Random, setInitTasks } from "../ts/index.js";
import { coreConfigJson } from "../ts/learn.js";
import { repoRoot } from "./helpers/node.js";

/** The demo's one JSON copy (test/demo-fixture.test.ts keeps it current). */
const FIXTURE = join(repoRoot, "crates", "core", "tests", "fixtures", "demo.json");

/** The Learner the runner's test runs: the fixture with the fields `runner_demo` (run.rs) changes. */
const runnerDemo = () => demoLearner({ seed: 3, max_epochs: 2, steps_per_epoch: 20 });

function runnerFixture(): unknown {
  const wire = JSON.parse(readFileSync(FIXTURE, "utf8")) as { random: { seed: number }; max_epochs: number; steps_per_epoch: number };
  return { ...wire, random: { ...wire.random, seed: 3 }, max_epochs: 2, steps_per_epoch: 20 };
}

describe("xpm-torch wire", () => {
  it("writes what the runner's test runs, with generated paths relative to the job directory", () => {
    const json = coreConfigJson(runnerDemo());
    expect(JSON.parse(json)).toEqual(runnerFixture());
    const wire = JSON.parse(json) as { logpath: string; checkpointspath: string };
    expect([wire.logpath, wire.checkpointspath]).toEqual(["runs", "checkpoints"]);
  });

  it("refuses a Learner with a part written in TypeScript", () => {
    const Vote = defineListener("tests.Vote", {}, { call: () => "NO_DECISION" });
    const config = Learner.C({ ...runnerDemo(), listeners: [Vote.C({ id: "vote" })] });
    expect(() => coreConfigJson(config)).toThrow(ConfigError);
    expect(() => coreConfigJson(config)).toThrow(/runs parts in JavaScript \(listener tests\.Vote\)/);
  });

  it("sends ModuleLoader initialisation tasks as __init_tasks__ and refuses other tasks", () => {
    const config = runnerDemo();
    const loader = ModuleLoader.C({ value: config.model, path: "/runs/a/model.safetensors" });
    const wire = JSON.parse(coreConfigJson(setInitTasks(config, [loader]))) as { model: unknown; __init_tasks__: { value: unknown; path: string }[] };
    expect(wire.__init_tasks__).toHaveLength(1);
    expect(wire.__init_tasks__[0]!.value).toEqual(wire.model);
    expect(wire.__init_tasks__[0]!.path).toBe("/runs/a/model.safetensors");
    setInitTasks(config, [Random.C({ seed: 1 })]);
    expect(() => coreConfigJson(config)).toThrow("learner.__init_tasks__[0]: is a xpm_torch.base.Random: a Learner runs ModuleLoader initialisation tasks only");
    expect(JSON.parse(coreConfigJson(setInitTasks(config, [])))).toEqual(runnerFixture());
  });
});
