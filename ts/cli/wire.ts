import { writeFileSync } from "node:fs";

import type { Command } from "./command.js";

export const wireCommand: Command = {
  name: "wire",
  summary: "write the JSON the core runs for a Learner, for xpm-torch-run on a machine without Node",
  help: `usage: xpm-torch wire FILE [--out CONFIG.json]

Writes the configuration learn() hands the Rust core for the Learner in FILE (a module or a
params.json, as for \`learn\`), with its generated paths relative to the job directory. The
xpm-torch-run binary runs it without Node: \`xpm-torch-run CONFIG.json --job-dir DIR\`.
Learners with parts written in TypeScript (listeners, hooks, samplers) need learn() and are
refused.

options:
  --out FILE   where to write it (default: stdout)`,
  options: { out: { type: "string" } },
  positionals: [1, 1],
  run: async ({ values, positionals }, io) => {
    const { loadLearnerConfig } = await import("./load-config.js");
    const { coreConfigJson } = await import("../learn.js");
    const json = coreConfigJson(await loadLearnerConfig(positionals[0]!));
    if (typeof values.out === "string") writeFileSync(values.out, `${json}\n`);
    else io.out(json);
    return 0;
  },
};
