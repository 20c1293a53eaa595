// The progress bar and the user's own output: what a terminal shows when a run's callbacks print
// while the bar is drawn (issue #41, item 4), checked on a pseudo-terminal and on fake streams.
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { createProgressDisplay } from "../ts/progress/display.js";
import { repoRoot } from "./helpers/node.js";
import { hasScript, inTerminal, screenOf } from "./helpers/terminal.js";

const CHILD = join("test", "helpers", "progress-child.mjs");
const BAR = /^\[[#-]+\] epoch \d\/\d /;

describe("the screen interpreter", () => {
  it("applies carriage returns, erasures and overwrites as a terminal does", () => {
    expect(screenOf("abc\rX\n")).toEqual(["Xbc", ""]);
    expect(screenOf("bar 50%\r\x1b[2Kline\r\nbar 60%")).toEqual(["line", "bar 60%"]);
    expect(screenOf("hello\rhe\x1b[K\r\n\x1b[33mok\x1b[39m")).toEqual(["he", "ok"]);
  });
});

/** Two streams (stdout, stderr) that write to one recorded terminal; `isTTY` as given. */
function fakeTerminal(isTTY: boolean) {
  const chunks: string[] = [];
  const stream = () => ({
    isTTY,
    columns: 100,
    write(text: string | Uint8Array, ...rest: unknown[]): boolean {
      // As a terminal's driver sends it on: each newline also returns the carriage.
      chunks.push((typeof text === "string" ? text : Buffer.from(text).toString()).replace(/\n/g, "\r\n"));
      const callback = rest.find((r) => typeof r === "function") as (() => void) | undefined;
      callback?.();
      return true;
    },
  });
  return { out: stream(), err: stream(), chunks };
}

describe("writes while the bar is shown", () => {
  it("go above the bar as whole lines, the bar drawn again below them", async () => {
    const { out, err, chunks } = fakeTerminal(true);
    const [outWrite, errWrite] = [out.write, err.write];
    const display = createProgressDisplay(err, { maxEpochs: 1, stepsPerEpoch: 10 }, { capture: [out, err], now: () => 0 });
    out.write("before the bar\n");
    display.step({ epoch: 1, step: 3, totalSteps: 10 });
    out.write("user ");
    err.write("a warning\n");
    let called = false;
    out.write(Buffer.from("line\nrest"), () => (called = true));
    display.step({ epoch: 1, step: 5, totalSteps: 10 });
    display.finish();
    expect(screenOf(chunks.join(""))).toEqual([
      "before the bar",
      "a warning",
      "user line",
      expect.stringMatching(/^\[#{20}-{20}\] epoch 1\/1 step 5\/10 /),
      "rest",
    ]);
    // A write's callback is called, as the stream would, after the write returns.
    expect(called).toBe(false);
    await new Promise((resolve) => setImmediate(resolve));
    expect(called).toBe(true);
    expect([out.write, err.write]).toEqual([outWrite, errWrite]);
  });

  it("pass through untouched when the display prints lines (no terminal)", () => {
    const { out, err } = fakeTerminal(false);
    const outWrite = out.write;
    const display = createProgressDisplay(err, { maxEpochs: 1, stepsPerEpoch: 10 }, { capture: [out, err], now: () => 0 });
    display.step({ epoch: 1, step: 3, totalSteps: 10 });
    expect(out.write).toBe(outWrite);
    display.finish();
  });
});

describe.runIf(hasScript())("a run printing in onEpoch, on a terminal", () => {
  const env: NodeJS.ProcessEnv = { ...process.env, FORCE_COLOR: "1" };
  delete env.NO_COLOR;

  it("shows each printed line whole on its own line, above the bar, which ends the screen", () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-pty-"));
    const { status, output } = inTerminal(`node ${CHILD} ${workspace}`, { cwd: repoRoot, env });
    expect(status, output).toBe(0);
    const screen = screenOf(output).filter((l) => l !== "");
    for (const epoch of [1, 2, 3]) {
      expect(screen, output).toContainEqual(expect.stringMatching(new RegExp(`^user epoch ${epoch} loss [0-9.]+ \\{ mrr: [0-9.]+ \\}$`)));
      expect(screen).toContain(`user stderr ${epoch}`);
      expect(screen).toContain(`partial line ${epoch}`);
      expect(screen).toContain(`and a rest ${epoch}`);
      expect(screen).toContainEqual(expect.stringMatching(new RegExp(`^xpm-torch: epoch ${epoch}/3: loss `)));
    }
    expect(screen.at(-1)).toMatch(BAR);
    expect(screen.at(-1)).toMatch(/epoch 3\/3 step 300\/300/);
    // The bar shows once, at the end: every other line is the user's or the display's own.
    expect(screen.filter((l) => BAR.test(l))).toHaveLength(1);
  });

  it("leaves the built-in epoch line out with epochLines: false", () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-pty-"));
    const { status, output } = inTerminal(`node ${CHILD} ${workspace}`, { cwd: repoRoot, env: { ...env, XPM_TEST_EPOCH_LINES: "0" } });
    expect(status, output).toBe(0);
    const screen = screenOf(output).filter((l) => l !== "");
    expect(screen.filter((l) => l.startsWith("xpm-torch: epoch"))).toEqual([]);
    expect(screen).toContainEqual(expect.stringMatching(/^user epoch 3 loss /));
    expect(screen.at(-1)).toMatch(BAR);
  });

  it("gives stdout and stderr their own writes back when the run fails", () => {
    const workspace = mkdtempSync(join(tmpdir(), "xpm-pty-"));
    const { status, output } = inTerminal(`node ${CHILD} ${workspace}`, { cwd: repoRoot, env: { ...env, XPM_TEST_THROW_AT: "2" } });
    expect(status, output).toBe(0);
    const screen = screenOf(output).filter((l) => l !== "");
    expect(screen.at(-1)).toBe("thrown at epoch 2; writes restored: true");
    expect(screen.at(-2)).toMatch(BAR);
    expect(screen).toContain("partial line 2");
  });
});

describe("a run printing in onEpoch, into a file", () => {
  it("prints the epoch lines unless epochLines is false", () => {
    const run = (epochLines: string) => {
      const workspace = mkdtempSync(join(tmpdir(), "xpm-lines-"));
      const result = spawnSync(process.execPath, [CHILD, workspace], {
        cwd: repoRoot,
        env: { ...process.env, XPM_TEST_EPOCH_LINES: epochLines },
        encoding: "utf8",
        timeout: 90_000,
      });
      expect(result.status, result.stderr).toBe(0);
      return result.stderr.split("\n");
    };
    expect(run("1").filter((l) => l.startsWith("xpm-torch: epoch 1/3: loss"))).toHaveLength(1);
    const quiet = run("0");
    expect(quiet.filter((l) => /^xpm-torch: epoch \d\/3: /.test(l))).toEqual([]);
    // The periodic progress lines stay.
    expect(quiet.some((l) => l.startsWith("xpm-torch: epoch 3/3 step"))).toBe(true);
  });
});
