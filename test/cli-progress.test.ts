// The progress display: bar on terminals, periodic lines elsewhere, driven by fake events and clock.
import { describe, expect, it } from "vitest";

import { createProgressDisplay } from "../ts/progress/display.js";
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
    display.epoch({ epoch: 1, step: 100, loss: 0.25, train: {}, metrics: {}, stepsPerSecond: 1 });
    expect(chunks.join("")).toContain("loss 0.2500");
  });

  it("formats durations as a clock", () => {
    expect([formatDuration(5), formatDuration(75), formatDuration(3723), formatDuration(Number.NaN)]).toEqual(["0:05", "1:15", "1:02:03", "--:--"]);
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
