/**
 * `node dist/identity/check-identifiers.js <vectors.json>`: runs every identifier test
 * vector, prints one line per failing case and a final `N passed, M failed`.
 * Exit status: 0 when every case passes, 1 when some fail, 2 when the file is unusable.
 */
import { realpathSync } from "node:fs";
import { pathToFileURL } from "node:url";

import { runVectorsFile, VectorsFileError } from "./vectors.js";

export interface CheckOutput {
  out(line: string): void;
  err(line: string): void;
}

/** Runs the checker on `args` (the command-line arguments) and returns the exit status. */
export function checkIdentifiers(args: readonly string[], output: CheckOutput): number {
  if (args.length !== 1 || args[0] === undefined) {
    output.err("usage: check-identifiers <vectors.json>");
    return 2;
  }
  const file = args[0];
  let report;
  try {
    report = runVectorsFile(file);
  } catch (error) {
    if (error instanceof VectorsFileError) {
      output.err(`check-identifiers: ${error.message}`);
      return 2;
    }
    throw error;
  }
  for (const result of report.results) {
    if (result.passed) continue;
    const got = result.actual ?? `error: ${result.error ?? "unknown"}`;
    output.out(`FAIL ${result.name}: expected ${result.expected}, got ${got}`);
  }
  output.out(`${report.passed} passed, ${report.failed} failed`);
  return report.failed === 0 ? 0 : 1;
}

function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return pathToFileURL(realpathSync(script)).href === import.meta.url;
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  process.exitCode = checkIdentifiers(process.argv.slice(2), {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  });
}
