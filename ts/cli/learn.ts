import type { LearnResult } from "../learn-types.js";
import type { Command } from "./command.js";

export const learnCommand: Command = {
  name: "learn",
  summary: "run a script that calls learn(), the Learner a .ts/.js module exports (default or `learner`), or a params.json",
  help: `usage: xpm-torch learn FILE [--workspace DIR] [--quiet] [--import MODULE ...]

Runs the Learner configuration in FILE in its job directory, as learn() does:
  - a TypeScript or JavaScript script that calls learn() itself: it runs as it is (with
    --workspace and --quiet as the defaults of its learn() calls), then each job it ran is
    reported; what it exports is not run;
  - a TypeScript or JavaScript module exporting it as \`default\` or as \`learner\` (a
    configuration, or a function returning one); .ts files need no build step;
  - a params.json (for example a job's own, to run it again in another workspace).
A finished job prints its stored result; an interrupted one resumes. Invalid configurations are
reported with the file and the parameter path, and exit with status 1.

options:
  --workspace DIR   where jobs go (default: XPM_TORCH_WORKSPACE, else the nearest
                    xpm-workspace folder here or above, else ./xpm-workspace)
  --quiet           no progress display
  --import MODULE   a module to load first, that defines configuration classes of the
                    params.json (listeners or hooks written in TypeScript); repeatable`,
  options: { workspace: { type: "string" }, quiet: { type: "boolean" }, import: { type: "string", multiple: true } },
  positionals: [1, 1],
  run: async ({ values, positionals }, io) => {
    const { importModules, loadLearnTarget } = await import("./load-config.js");
    await importModules(Array.isArray(values.import) ? values.import : []);
    const workspace = typeof values.workspace === "string" ? values.workspace : undefined;
    const options = { ...(workspace ? { workspace } : {}), quiet: values.quiet === true };
    const target = await loadLearnTarget(positionals[0]!, options);
    const { learn } = await import("../learn.js");
    const results = "learner" in target ? [await learn(target.learner, options)] : await scriptResults(target.script);
    const { jobSummary } = await import("../job-summary.js");
    for (const result of results) {
      const last = result.epochs[result.epochs.length - 1];
      io.out(result.cached ? "this job had already run; its stored result:" : `trained ${last?.epoch ?? 0} epochs, ${last?.step ?? 0} steps; final loss ${last?.loss.toPrecision(4) ?? "-"}`);
      jobSummary(result).forEach((line) => io.out(line));
    }
    return 0;
  },
};

/**
 * What a script's learn() calls resolved to, once they and its experiment plans have all ended
 * (one it did not await may still run); the first that failed fails the command, with its error.
 */
async function scriptResults(script: { readonly calls: readonly Promise<LearnResult>[]; readonly plans: readonly Promise<unknown>[] }): Promise<LearnResult[]> {
  const [plans, calls] = await Promise.all([Promise.allSettled(script.plans), Promise.allSettled(script.calls)]);
  const failed = [...calls, ...plans].find((s) => s.status === "rejected");
  if (failed) throw failed.reason;
  return calls.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
}

export const demoCommand: Command = {
  name: "demo",
  summary: "train the demo ranking model, then print where everything is and a summary",
  help: `usage: xpm-torch demo [--workspace DIR] [--quiet]

Trains an MLP to rank synthetic documents (a planted signal) from preference pairs with the
hinge loss and Adam, validating on held-out queries after each epoch with early stopping,
checkpoints and TensorBoard logs. Prints one line per epoch, then the job directory, logs,
checkpoints and best values. Running it again prints the stored result.

options:
  --workspace DIR   where the job goes (default: XPM_TORCH_WORKSPACE, else the nearest
                    xpm-workspace folder here or above, else ./xpm-workspace)
  --quiet           no progress bar`,
  options: { workspace: { type: "string" }, quiet: { type: "boolean" } },
  run: async ({ values }, io) => {
    const { runDemo } = await import("../demo.js");
    await runDemo({
      print: io.out,
      quiet: values.quiet === true,
      ...(typeof values.workspace === "string" ? { workspace: values.workspace } : {}),
    });
    return 0;
  },
};
