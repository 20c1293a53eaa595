import type { JobInfo } from "../report/job.js";
import type { Command } from "./command.js";

function bestText(job: JobInfo): string {
  if (job.state !== "done") return job.error ? job.error.split("\n")[0]!.slice(0, 80) : "-";
  return job.best.map((b) => `${b.listener}/${b.metric}=${Number(b.value.toPrecision(4))}@${b.epoch}`).join(" ") || "-";
}

/** The jobs as an aligned table. */
export function jobsTable(jobs: readonly JobInfo[], workspace: string): string[] {
  const rows = jobs.map((j) => [`${j.typeId}/${j.identifier.slice(0, 12)}`, j.state, String(j.epochs), j.modified.toISOString().slice(0, 16).replace("T", " "), bestText(j)]);
  const header = ["job", "state", "epochs", "modified", "best values"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return [line(header), ...rows.map(line)];
}

export const jobsCommand: Command = {
  name: "jobs",
  summary: "list a workspace's jobs: state, epochs and best values",
  help: `usage: xpm-torch jobs [WORKSPACE] [--json]

Lists the jobs under WORKSPACE/jobs (default: XPM_TORCH_WORKSPACE, else ./xpm-workspace),
newest first, with their state (done, running, failed, interrupted, incomplete), the epochs done
and, for finished ones, each listener's best values as listener/metric=value@epoch.

options:
  --json   print them as JSON`,
  options: { json: { type: "boolean" } },
  positionals: [0, 1],
  run: async ({ values, positionals }, io) => {
    const { listJobs } = await import("../report/job.js");
    const { defaultWorkspace } = await import("../workspace/job.js");
    const { resolve } = await import("node:path");
    const workspace = positionals[0] === undefined ? defaultWorkspace() : resolve(positionals[0]);
    const jobs = listJobs(workspace);
    if (values.json === true) {
      io.out(JSON.stringify(jobs, null, 2));
      return 0;
    }
    if (jobs.length === 0) {
      io.out(`no jobs in ${workspace}`);
      return 0;
    }
    io.out(`workspace ${workspace}`);
    jobsTable(jobs, workspace).forEach((l) => io.out(l));
    return 0;
  },
};
