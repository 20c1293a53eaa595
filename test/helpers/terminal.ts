// What a terminal shows after some output: a small screen interpreter for the control sequences
// our progress display and Node's console write (`\r`, `\n`, `\b`, erase in line, colours), and a
// way to run a command in a pseudo-terminal (util-linux `script`) to get that output.
import { spawnSync } from "node:child_process";

/**
 * The lines a terminal shows after `raw`: `\r` goes back to the first column, `\n` down a line
 * (in the same column, as a terminal does; a pseudo-terminal sends `\r\n` for `\n`), `\b` back one
 * column; `ESC[2K` clears the line, `ESC[K` (`ESC[0K`) to its end, `ESC[1K` to the cursor; other
 * CSI sequences (colours) change nothing. Text overwrites what is under the cursor. Trailing
 * spaces are dropped.
 */
export function screenOf(raw: string): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  const line = (): string[] => (lines[row] ??= []);
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === "\x1b" && raw[i + 1] === "[") {
      const match = /^\x1b\[([0-9;?]*)([A-Za-z])/.exec(raw.slice(i));
      if (!match) continue;
      i += match[0].length - 1;
      if (match[2] !== "K") continue;
      const mode = match[1] === "" ? 0 : Number(match[1]);
      const current = line();
      if (mode === 2) current.length = 0;
      else if (mode === 0) current.length = Math.min(current.length, col);
      else for (let k = 0; k <= col && k < current.length; k++) current[k] = " ";
    } else if (c === "\r") col = 0;
    else if (c === "\n") {
      row++;
      line();
    } else if (c === "\b") col = Math.max(0, col - 1);
    else {
      const current = line();
      while (current.length < col) current.push(" ");
      current[col++] = c;
    }
  }
  return lines.map((l) => l.join("").replace(/\s+$/, ""));
}

/** Whether util-linux `script` is here to give a command a pseudo-terminal. */
export function hasScript(): boolean {
  return spawnSync("script", ["--version"], { encoding: "utf8" }).status === 0;
}

/**
 * Runs the shell command `command` with stdin, stdout and stderr on one pseudo-terminal of
 * `columns` columns, and returns everything the terminal received, as it received it.
 */
export function inTerminal(command: string, options: { cwd: string; env: NodeJS.ProcessEnv; columns?: number; timeoutMs?: number }) {
  const columns = options.columns ?? 120;
  const result = spawnSync("script", ["-qfec", `stty cols ${columns} rows 50; ${command}`, "/dev/null"], {
    cwd: options.cwd,
    env: options.env,
    encoding: "utf8",
    timeout: options.timeoutMs ?? 90_000,
  });
  return { status: result.status, output: result.stdout, error: result.stderr };
}
