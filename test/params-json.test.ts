import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { ModuleLoader } from "../ts/config/classes/module.js";
import { initTasksOf, markAsOutputOf, setInitTasks } from "../ts/config/identifier-marks.js";
import { identifierOf } from "../ts/config/identifiers.js";
import { toWire } from "../ts/config/wire.js";
import { ConfigError } from "../ts/errors.js";
import { jobOf } from "../ts/workspace/job.js";
import { readParamsJson, writeParamsJson } from "../ts/workspace/params-json.js";
import { SAMPLES } from "./helpers/samples.js";

const workspace = mkdtempSync(join(tmpdir(), "xpm-params-"));

describe("params.json", () => {
  it.each(Object.keys(SAMPLES))("round-trips %s", (typeId) => {
    const config = SAMPLES[typeId]!();
    const text = writeParamsJson(config, { workspace, jobDir: join(workspace, "job") });
    const back = readParamsJson(text);
    expect(identifierOf(back)).toBe(identifierOf(config));
    expect(toWire(back)).toEqual(toWire(config));
  });

  it("writes the format experimaestro reads", () => {
    const learner = SAMPLES["xpm_torch.learner.Learner"]!();
    const job = jobOf(learner, workspace);
    const text = writeParamsJson(learner, { workspace, jobDir: job.dir, paths: job.paths });
    const doc = JSON.parse(text) as {
      version: number;
      workspace: string;
      objects: { id: number; module: string; type: string; typename: string; identifier: string; task?: number; fields: Record<string, unknown> }[];
    };
    expect(doc.version).toBe(3);
    expect(doc.workspace).toBe(workspace);
    const task = doc.objects[doc.objects.length - 1]!;
    expect(task).toMatchObject({ module: "xpm_torch.learner", type: "Learner", typename: "xpm_torch.learner.Learner", identifier: job.identifier, task: task.id });
    expect(task.fields.logpath).toEqual({ type: "path", value: "runs", base: "job" });
    expect(task.fields.checkpoint_interval).toBe(3);
    // Dependencies come first, each object once.
    const ids = doc.objects.map((o) => o.id);
    expect(new Set(ids).size).toBe(ids.length);
    const refs = JSON.stringify(task.fields).match(/"type":"python","value":\d+/g) ?? [];
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect(Number(ref.split(":").pop())).toBeLessThan(task.id);
    // Floats keep a fractional part; ints do not; sets are tagged.
    expect(text).toContain('"margin":2.0');
    expect(text).toContain('"max_epochs":12,');
    expect(text).toMatch(/"coefficient_names":\{"type":"set","items":\["a","b","c"\]\}/);
    const listener = doc.objects.find((o) => o.type === "TrainerValidationLoss")!;
    expect(listener.fields.bestpath).toEqual({ type: "path", value: "out/listeners/0/best", base: "job" });
    expect(listener.fields.info).toEqual({ type: "path", value: "out/listeners/0/info.json", base: "job" });
  });

  it("writes initialisation tasks before their task, as experimaestro's init-tasks, and reads them back", () => {
    const learner = SAMPLES["xpm_torch.learner.Learner"]!() as { model: object };
    const plain = identifierOf(learner);
    const loader = ModuleLoader.C({ value: learner.model as never, path: "/runs/a/model.safetensors" });
    setInitTasks(learner, [loader]);
    expect(identifierOf(learner)).not.toBe(plain);
    const text = writeParamsJson(learner, { workspace, jobDir: join(workspace, "job") });
    const doc = JSON.parse(text) as { objects: { id: number; type: string; "init-tasks"?: number[] }[] };
    const task = doc.objects[doc.objects.length - 1]!;
    const loaderId = doc.objects.find((o) => o.type === "SimpleModuleLoader")!.id;
    expect(task["init-tasks"]).toEqual([loaderId]);
    expect(loaderId).toBeLessThan(task.id);
    const back = readParamsJson(text);
    expect(initTasksOf(back)).toHaveLength(1);
    expect(identifierOf(back)).toBe(identifierOf(learner));
    expect(() => readParamsJson(text.replace(`"init-tasks":[${loaderId}]`, `"init-tasks":[${task.id + 5}]`))).toThrow("init-tasks[0]");
  });

  it("writes the producer of a marked output before it, as its task, and reads the mark back", () => {
    const upstream = SAMPLES["xpm_torch.learner.Learner"]!() as { model: object };
    const learner = SAMPLES["xpm_torch.learner.Learner"]!() as { model: object };
    const output = markAsOutputOf(ModuleLoader.C({ value: upstream.model as never, path: "/ws/jobs/a/model.safetensors" }), upstream);
    setInitTasks(learner, [output]);
    const text = writeParamsJson(learner, { workspace, jobDir: join(workspace, "job") });
    const doc = JSON.parse(text) as { objects: { id: number; type: string; task?: number }[] };
    const loader = doc.objects.find((o) => o.type === "SimpleModuleLoader")!;
    const producer = doc.objects.find((o) => o.id === loader.task)!;
    expect(producer.type).toBe("Learner");
    expect(producer.task).toBe(producer.id);
    expect(producer.id).toBeLessThan(loader.id);
    // Without the mark, the loader (and so the task) would hash as if no training produced it.
    expect(identifierOf(readParamsJson(text))).toBe(identifierOf(learner));
    expect(identifierOf(readParamsJson(JSON.stringify(doc)))).toBe(identifierOf(learner));
    delete (loader as { task?: number }).task;
    expect(identifierOf(readParamsJson(JSON.stringify(doc)))).not.toBe(identifierOf(learner));
  });

  it("refuses newer versions and unknown types, naming the file", () => {
    const text = writeParamsJson(SAMPLES["xpm_torch.optim.SGD"]!(), { workspace, jobDir: workspace });
    expect(() => readParamsJson(text.replace('"version":3', '"version":4'), "/x/params.json")).toThrow(
      "/x/params.json: params.json version 4 is not supported (at most 3)",
    );
    expect(() => readParamsJson(text.replace('"typename":"xpm_torch.optim.SGD"', '"typename":"a.B"'), "/x/params.json")).toThrow(ConfigError);
  });
});
