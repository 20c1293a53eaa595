// The progress display: bar on terminals, periodic lines elsewhere, driven by fake events and clock.
import { describe, expect, it } from "vitest";

import type { RunStart, ValidationProgress } from "../ts/learn-types.js";
import { createProgressDisplay, type ProgressDisplay } from "../ts/progress/display.js";
import { formatDuration } from "../ts/progress/format.js";

function fakeStream(isTTY: boolean) {
  const chunks: string[] = [];
  return { stream: { isTTY, columns: 120, write: (t: string) => chunks.push(t) }, chunks };
}

const shape = { maxEpochs: 2, stepsPerEpoch: 100 };

describe("progress display", () => {
  it("prints a plain line at most every interval, and a last one, when not on a terminal", () => {
    let now = 0;
    const { stream, chunks } = fakeStream(false);
    const display = createProgressDisplay(stream, shape, { intervalMs: 1000, now: () => now });
    for (let step = 1; step <= 200; step++) {
      now += 25; // 40 steps/s: a line every 40 steps
      display.step({ epoch: step <= 100 ? 1 : 2, step, totalSteps: 200, runningLoss: 1 / step });
    }
    display.finish();
    const lines = chunks.join("").split("\n").filter(Boolean);
    expect(lines.length).toBe(5 + 1); // the first event, then one a second (steps 41, 81, 121, 161), the last
    expect(lines[0]).toBe("xpm-torch: epoch 1/2 step 1/100 (1/200, 0%) - steps/s ETA --:-- loss 1.000");
    expect(lines[2]).toBe("xpm-torch: epoch 1/2 step 81/100 (81/200, 40%) 40.0 steps/s ETA 0:03 loss 0.01235");
    expect(lines[5]).toMatch(/^xpm-torch: epoch 2\/2 step 100\/100 \(200\/200, 100%\) 40\.0 steps\/s ETA 0:00 loss 0\.005000, 0:05 elapsed$/);
    expect(chunks.join("")).not.toContain("\r");
  });

  it("redraws one bar line on a terminal, with epoch, step, rate, ETA and loss", () => {
    let now = 0;
    const { stream, chunks } = fakeStream(true);
    const display = createProgressDisplay(stream, shape, { now: () => now });
    display.step({ epoch: 1, step: 10, totalSteps: 200 });
    now += 1000;
    display.step({ epoch: 1, step: 60, totalSteps: 200, runningLoss: 0.5 });
    display.log("epoch 1 done");
    display.finish();
    const text = chunks.join("");
    expect(chunks[0]!.startsWith("\r\x1b[2K[")).toBe(true);
    expect(text).toContain(`[${"#".repeat(12)}${"-".repeat(28)}] epoch 1/2 step 60/100 | 50.0 steps/s | ETA 0:03 | loss 0.5000`);
    // The logged line goes above the bar, which is drawn again below it.
    expect(text).toMatch(/\r\x1b\[2Kepoch 1 done\n\r\x1b\[2K\[#+-+\] epoch 1\/2 step 60\/100/);
    expect(text.endsWith("\n")).toBe(true);
    for (const chunk of chunks) expect(chunk.replace(/\x1b\[2K/g, "").length).toBeLessThan(120 + 20);
  });

  it("uses the last epoch's loss until a step reports a running one", () => {
    const { stream, chunks } = fakeStream(false);
    const display = createProgressDisplay(stream, shape, { intervalMs: 0, now: () => 0 });
    display.epoch({ epoch: 1, step: 100, loss: 0.25, train: {}, metrics: {}, stepsPerSecond: 1, validationSeconds: 0 });
    expect(chunks.join("")).toContain("loss 0.2500");
  });

  it("shows validation as a phase of its own, with training speed from training time only and an ETA that counts validations", () => {
    let now = 0;
    const { stream, chunks } = fakeStream(false);
    const display = createProgressDisplay(stream, shape, { intervalMs: 0, now: () => now });
    const lines = () => chunks.join("").split("\n").filter(Boolean);
    display.start({ epochsDone: 0, step: 0, totalSteps: 200, listenerIntervals: [1], resumedFrom: null, newWeights: [] });
    for (let step = 1; step <= 100; step++) {
      now += 100; // 10 steps/s
      display.step({ epoch: 1, step, totalSteps: 200 });
    }
    // 100 steps left (10 s) and two validations, neither timed yet: the ETA says it leaves them out.
    expect(lines().at(-1)).toMatch(/step 100\/100 \(100\/200, 50%\) 10\.0 steps\/s ETA >0:10/);
    display.validation({ epoch: 1, listener: "dev", done: 0, total: 0, unit: "" });
    expect(lines().at(-1)).toMatch(/^xpm-torch: epoch 1\/2 validating dev \(100\/200, 50%\) 10\.0 steps\/s/);
    now += 5000;
    display.validation({ epoch: 1, listener: "dev", done: 10, total: 40, unit: "queries" });
    // 15 s left of this validation, 20 s for epoch 2's (as long as this one), 10 s of steps.
    expect(lines().at(-1)).toMatch(/validating dev 10\/40 queries .* 10\.0 steps\/s ETA 0:45 /);
    now += 15_000;
    display.epoch({ epoch: 1, step: 100, loss: 0.5, train: {}, metrics: { "dev/mrr@10": 0.81234, "dev/loss": 0.4 }, stepsPerSecond: 10, validationSeconds: 20 });
    expect(lines().at(-1)).toBe("xpm-torch: epoch 1/2: loss 0.5000, dev/loss 0.4000, dev/mrr@10 0.8123 (10.0 steps/s, validation 0:20)");
    // The next epoch's first step counts from there, not across the 20 s of validation.
    now += 3000;
    display.step({ epoch: 2, step: 101, totalSteps: 200 });
    now += 1000;
    display.step({ epoch: 2, step: 111, totalSteps: 200 });
    expect(lines().at(-1)).toMatch(/step 11\/100 \(111\/200, 55%\) 10\.0 steps\/s ETA 0:29 /);
    display.epoch({ epoch: 2, step: 200, loss: 0.4, train: {}, metrics: {}, stepsPerSecond: 10, validationSeconds: 20 });
    display.finish();
    expect(lines().at(-1)).toMatch(/ETA 0:00 loss 0\.4000, 0:\d\d elapsed$/);
  });

  it("draws the validation in the bar and keeps the epoch lines above it", () => {
    let now = 0;
    const { stream, chunks } = fakeStream(true);
    const display = createProgressDisplay(stream, shape, { now: () => now });
    display.start({ epochsDone: 0, step: 0, totalSteps: 200, listenerIntervals: [1], resumedFrom: null, newWeights: [] });
    display.step({ epoch: 1, step: 1, totalSteps: 200 });
    now += 1000;
    display.step({ epoch: 1, step: 100, totalSteps: 200 });
    display.validation({ epoch: 1, listener: "dev", done: 3, total: 8, unit: "queries" });
    const text = chunks.join("");
    expect(text).toContain("epoch 1/2 step 100/100 | 99.0 steps/s | ETA >0:01 |");
    // A validation under way times the ones to come (this one took no time on the fake clock).
    expect(text).toContain("epoch 1/2 validating dev 3/8 queries | 99.0 steps/s | ETA 0:01 |");
    display.epoch({ epoch: 1, step: 100, loss: 0.5, train: {}, metrics: {}, stepsPerSecond: 99, validationSeconds: 0 });
    expect(chunks.join("")).toMatch(/\r\x1b\[2Kxpm-torch: epoch 1\/2: loss 0\.5000 \(99\.0 steps\/s\)\n\r\x1b\[2K\[/);
  });

  it("says where a resumed run starts", () => {
    const { stream, chunks } = fakeStream(false);
    const display = createProgressDisplay(stream, shape, { now: () => 0 });
    display.start({ epochsDone: 1, step: 145, totalSteps: 200, listenerIntervals: [], resumedFrom: "/ws/checkpoints/epoch-0001", newWeights: [] });
    expect(chunks.join("")).toBe("xpm-torch: resumed at step 145 (epoch 2, 45/100 steps done) from checkpoint /ws/checkpoints/epoch-0001\n");
    chunks.length = 0;
    display.start({ epochsDone: 1, step: 100, totalSteps: 200, listenerIntervals: [], resumedFrom: "/ws/checkpoints/epoch-0001", newWeights: [] });
    expect(chunks.join("")).toContain("resumed at step 100 (after epoch 1 of 2) from checkpoint");
    chunks.length = 0;
    display.start({ epochsDone: 0, step: 0, totalSteps: 200, listenerIntervals: [], resumedFrom: null, newWeights: [] });
    expect(chunks.join("")).toBe("");
  });

  it("says which weights a fresh run drew new rather than read from the model's files", () => {
    const { stream, chunks } = fakeStream(false);
    const display = createProgressDisplay(stream, shape, { now: () => 0 });
    display.start({ epochsDone: 0, step: 0, totalSteps: 200, listenerIntervals: [], resumedFrom: null, newWeights: ["classifier.weight", "classifier.bias"] });
    expect(chunks.join("")).toBe("xpm-torch: weights not in the model's files, newly drawn from the run's seed: classifier.weight, classifier.bias\n");
  });

  it("formats durations as a clock", () => {
    expect([formatDuration(5), formatDuration(75), formatDuration(3723), formatDuration(Number.NaN)]).toEqual(["0:05", "1:15", "1:02:03", "--:--"]);
  });
});

describe("run events", () => {
  it("report where a run starts, its validations, and where a resumed run continues", async () => {
    const { learn } = await import("../ts/learn.js");
    const { demoLearner } = await import("../ts/demo-config.js");
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const workspace = mkdtempSync(join(tmpdir(), "xpm-events-"));
    const config = demoLearner({ max_epochs: 2, steps_per_epoch: 20, seed: 4 });
    const starts: RunStart[] = [];
    const validations: ValidationProgress[] = [];
    const recorder = (): ProgressDisplay => ({
      start: (s) => starts.push(s),
      step: () => {},
      validation: (v) => validations.push(v),
      epoch: () => {},
      log: () => {},
      finish: () => {},
    });
    const abort = new AbortController();
    const first = learn(config, { workspace, handleSignals: false, signal: abort.signal, progress: recorder(), onEpoch: () => abort.abort() });
    await expect(first).rejects.toThrow();
    expect(starts).toEqual([{ epochsDone: 0, step: 0, totalSteps: 40, listenerIntervals: [1], resumedFrom: null, newWeights: [] }]);
    expect(validations[0]).toEqual({ epoch: 1, listener: "heldout", done: 0, total: 0, unit: "" });
    // The demo's 100 held-out queries, counted as they are scored.
    expect(validations.at(-1)).toEqual({ epoch: 1, listener: "heldout", done: 100, total: 100, unit: "queries" });
    const result = await learn(config, { workspace, progress: recorder() });
    expect(starts[1]).toEqual(expect.objectContaining({ epochsDone: 1, step: 20 }));
    expect(starts[1]!.resumedFrom).toBe(result.resumed_from);
    expect(result.resumed_from).toMatch(/checkpoints/);
    expect(result.epochs.every((e) => e.validationSeconds > 0)).toBe(true);
  });
});

describe("the validation before the first step and the losses of every step", () => {
  it("are in the result, and survive an interruption inside an epoch", async () => {
    const { learn } = await import("../ts/learn.js");
    const { demoLearner } = await import("../ts/demo-config.js");
    const { Learner } = await import("../ts/index.js");
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const config = Learner.C({ ...demoLearner({ max_epochs: 2, steps_per_epoch: 3000, seed: 9 }), validate_at_start: true, step_losses: true });
    const plain = await learn(config, { workspace: mkdtempSync(join(tmpdir(), "xpm-start-")), quiet: true });
    const start = plain.start_metrics!["heldout/pairwise_accuracy"]!;
    // The untrained model ranks about as well as chance; training does better.
    expect(start).toBeGreaterThan(0);
    expect(plain.epochs[1]!.metrics["heldout/pairwise_accuracy"]!).toBeGreaterThan(start);
    for (const epoch of plain.epochs) {
      expect(epoch.stepLosses).toHaveLength(3000);
      const mean = epoch.stepLosses!.reduce((a, b) => a + b, 0) / 3000;
      expect(mean).toBeCloseTo(epoch.loss, 5);
    }

    const workspace = mkdtempSync(join(tmpdir(), "xpm-start-resumed-"));
    const abort = new AbortController();
    const first = learn(config, {
      workspace,
      quiet: true,
      handleSignals: false,
      signal: abort.signal,
      // Inside the second epoch, which is long enough to stop in on a fast machine.
      onProgress: (p) => p.step > 3000 && abort.abort(),
    });
    await expect(first).rejects.toThrow();
    const resumed = await learn(config, { workspace, quiet: true });
    expect(resumed.resumed_from).not.toBeNull();
    expect(resumed.start_metrics).toEqual(plain.start_metrics);
    expect(resumed.epochs.map((e) => e.stepLosses)).toEqual(plain.epochs.map((e) => e.stepLosses));
  });
});

describe("step events", () => {
  it("carry the epoch's running loss, which ends at the epoch's loss", async () => {
    const { learn } = await import("../ts/learn.js");
    const { demoLearner } = await import("../ts/demo-config.js");
    const { mkdtempSync } = await import("node:fs");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const progress: { step: number; runningLoss?: number }[] = [];
    const result = await learn(demoLearner({ max_epochs: 1, steps_per_epoch: 400, seed: 7 }), {
      workspace: mkdtempSync(join(tmpdir(), "xpm-progress-")),
      quiet: true,
      onProgress: (p) => progress.push(p),
    });
    const withLoss = progress.filter((p) => p.runningLoss !== undefined);
    expect(withLoss.length).toBeGreaterThan(0);
    for (const p of withLoss) expect(p.runningLoss).toBeGreaterThan(0);
    // The first event is sent at once and asks for the loss of the single step so far.
    expect(progress[0]).toEqual(expect.objectContaining({ step: 1, runningLoss: expect.any(Number) }));
    const epochLoss = result.epochs[0]!.loss;
    const last = withLoss[withLoss.length - 1]!;
    if (last.step === 400) expect(last.runningLoss).toBeCloseTo(epochLoss, 5);
  });
});
