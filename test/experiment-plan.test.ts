// What a plan's submissions depend on, found without running anything.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { ModuleLoader } from "../ts/config/classes/module.js";
import { markAsOutputOf, setInitTasks } from "../ts/config/identity.js";
import { ConfigError } from "../ts/errors.js";
import { cycleThrough, dependenciesOf } from "../ts/experiment/dependencies.js";
import { experiment } from "../ts/experiment/experiment.js";
import { finetuneFrom, smallLearner } from "./helpers/experiments.js";

const outputOf = (task: ReturnType<typeof smallLearner>) => markAsOutputOf(ModuleLoader.C({ value: task.model, path: "/m.safetensors" }), task);

describe("a plan's dependencies", () => {
  it("are the producers of the outputs a task uses, in its init tasks or its parameters", () => {
    const a = smallLearner(1e-2);
    const b = smallLearner(2e-2);
    expect(dependenciesOf(a)).toEqual([]);
    const stage2 = finetuneFrom(outputOf(a));
    expect(dependenciesOf(stage2)).toEqual([a]);
    // Twice the same producer counts once; a producer's own inputs are not the task's.
    const both = setInitTasks(smallLearner(3e-3), [outputOf(a), outputOf(b), outputOf(a)]);
    expect(dependenciesOf(both)).toEqual([a, b]);
    expect(dependenciesOf(finetuneFrom(outputOf(stage2)))).toEqual([stage2]);
  });

  it("finds a cycle made by hand, and submit() refuses it before anything runs", async () => {
    const a = smallLearner(1e-2);
    const b = setInitTasks(smallLearner(2e-2), [outputOf(a)]);
    expect(cycleThrough(b)).toBeUndefined();
    setInitTasks(a, [outputOf(b)]);
    expect(cycleThrough(b)).toEqual([b, a, b]);
    const workspace = mkdtempSync(join(tmpdir(), "xpm-plan-"));
    const run = experiment("cycle", (xp) => void xp.submit(b), { workspace, log: null, handleSignals: false });
    await expect(run).rejects.toThrow(ConfigError);
    await expect(run).rejects.toThrow(/a cycle of dependencies/);
  });
});
