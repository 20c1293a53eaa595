import type { Command } from "./command.js";

export const reportCommand: Command = {
  name: "report",
  summary: "draw a job's learning curves (SVG) and write a page with them and its results (HTML)",
  help: `usage: xpm-torch report JOB_DIR [--out DIR]

Reads the TensorBoard event files of a job (JOB_DIR/runs) and draws the curve of every logged
scalar tag into curves.svg, and a self-contained report.html with the job's state, its
listeners' best values and the curves. Works on running and failed jobs too.

options:
  --out DIR   where to write them (default: JOB_DIR/report)`,
  options: { out: { type: "string" } },
  positionals: [1, 1],
  run: async ({ values, positionals }, io) => {
    const { writeReport } = await import("../report/report.js");
    const { isJobDir } = await import("../report/job.js");
    const dir = positionals[0]!;
    if (!isJobDir(dir)) {
      io.err(`xpm-torch report: ${dir} is not a job directory (no params.json); list jobs with \`npx xpm-torch jobs\``);
      return 1;
    }
    const written = writeReport(dir, typeof values.out === "string" ? values.out : undefined);
    io.out(`${written.curves.length} curves (${written.curves.map((c) => c.tag).join(", ") || "none logged"})`);
    io.out(`svg:  ${written.svg}`);
    io.out(`html: ${written.html}`);
    return 0;
  },
};
