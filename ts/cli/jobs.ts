import type { JobInfo } from "../report/job.js";
import { stateLabel } from "../workspace/job-state.js";
import { type Command, UsageError } from "./command.js";

function bestText(job: JobInfo): string {
  return job.best.map((b) => `${b.listener}/${b.metric}=${Number(b.value.toPrecision(4))}@${b.epoch}`).join(" ") || "-";
}

/** Why a job is in error, whole, on one line (an interruption says where its checkpoint is). */
const messageText = (job: JobInfo): string => job.error?.replace(/\s*\n\s*/g, " ").trim() || "-";

const tagsText = (job: JobInfo): string => Object.entries(job.tags).map(([k, v]) => `${k}=${String(v)}`).join(" ") || "-";

/**
 * The jobs as an aligned table. The last column, `message`, holds what jobs in error said, whole;
 * it is there only when some job has a message.
 */
export function jobsTable(jobs: readonly JobInfo[]): string[] {
  const withMessage = jobs.some((j) => messageText(j) !== "-");
  const rows = jobs.map((j) => [
    `${j.typeId}/${j.identifier.slice(0, 12)}`,
    stateLabel(j.state, j.failureReason),
    String(j.epochs),
    j.modified.toISOString().slice(0, 16).replace("T", " "),
    j.experiments.join(",") || "-",
    tagsText(j),
    bestText(j),
    ...(withMessage ? [messageText(j)] : []),
  ]);
  const header = ["job", "state", "epochs", "modified", "experiment", "tags", "best values", ...(withMessage ? ["message"] : [])];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join("  ");
  return [line(header), ...rows.map(line)];
}

/**
 * The jobs that pass every filter: `tag` as `key=value` (compared as text), `state` (a state, or
 * a failure reason: `cancelled` picks the interrupted jobs), `experiment`.
 */
export function filterJobs(jobs: readonly JobInfo[], filters: { tags?: readonly string[]; states?: readonly string[]; experiment?: string }): JobInfo[] {
  const wanted = (filters.tags ?? []).map((t) => {
    const at = t.indexOf("=");
    if (at <= 0) throw new UsageError(`--tag ${JSON.stringify(t)}: expected KEY=VALUE`);
    return [t.slice(0, at), t.slice(at + 1)] as const;
  });
  return jobs.filter(
    (j) =>
      wanted.every(([k, v]) => k in j.tags && String(j.tags[k]) === v) &&
      (!filters.states?.length || filters.states.some((s) => s === j.state || s === j.failureReason)) &&
      (filters.experiment === undefined || j.experiments.includes(filters.experiment)),
  );
}

const list = (value: unknown): string[] => (Array.isArray(value) ? (value as string[]) : []);

export const jobsCommand: Command = {
  name: "jobs",
  summary: "list a workspace's jobs (state, experiment, tags, best values), or stop one",
  help: `usage: xpm-torch jobs [WORKSPACE] [--json] [--tag KEY=VALUE ...] [--state STATE ...] [--experiment NAME]
       xpm-torch jobs kill ID [--workspace DIR]

Lists the jobs under WORKSPACE/jobs, newest first (default: XPM_TORCH_WORKSPACE, else the nearest
xpm-workspace folder in the current folder or above it, else ./xpm-workspace; its first line says
which), with their state (experimaestro's: unscheduled, waiting, ready, scheduled, running,
done, or error with its reason: failed, memory, timeout, cancelled when interrupted, dependency
when a dependency failed and it never ran), the epochs done, the experiments that submitted them
and their tags, for finished ones each listener's best values as listener/metric=value@epoch, and
for jobs in error what they said (an interrupted one: where its checkpoint is), whole.

\`jobs kill ID\` stops the job whose identifier starts with ID: SIGTERM to its process here (it
writes a checkpoint, and running it again resumes), \`scancel\` for a SLURM job.

options:
  --json               print them as JSON
  --tag KEY=VALUE      only jobs with this tag (repeatable; values compared as text)
  --state STATE        only jobs in this state, or in error for this reason (repeatable)
  --experiment NAME    only jobs of this experiment
  --workspace DIR      the workspace (for kill)`,
  options: {
    json: { type: "boolean" },
    tag: { type: "string", multiple: true },
    state: { type: "string", multiple: true },
    experiment: { type: "string" },
    workspace: { type: "string" },
  },
  positionals: [0, 2],
  run: async ({ values, positionals }, io) => {
    const { listJobs } = await import("../report/job.js");
    const { defaultWorkspace } = await import("../workspace/job.js");
    const { resolve } = await import("node:path");
    if (positionals[0] === "kill") {
      if (positionals[1] === undefined) throw new UsageError("kill: which job? give (the start of) its identifier");
      const workspace = typeof values.workspace === "string" ? resolve(values.workspace) : defaultWorkspace();
      const { killJob } = await import("../experiment/kill.js");
      io.out(await killJob(listJobs(workspace), positionals[1]));
      return 0;
    }
    if (positionals.length > 1) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[1])}`);
    const workspace = positionals[0] === undefined ? (typeof values.workspace === "string" ? resolve(values.workspace) : defaultWorkspace()) : resolve(positionals[0]);
    const jobs = filterJobs(listJobs(workspace), {
      tags: list(values.tag),
      states: list(values.state),
      ...(typeof values.experiment === "string" ? { experiment: values.experiment } : {}),
    });
    // Which workspace: the one named, else the nearest xpm-workspace upward (stderr under --json).
    if (values.json === true) {
      io.err(`workspace: ${workspace}`);
      io.out(JSON.stringify(jobs, null, 2));
      return 0;
    }
    io.out(`workspace: ${workspace}`);
    if (jobs.length === 0) {
      io.out(`no jobs in this workspace${values.tag || values.state || values.experiment ? " that pass the filters" : ""}`);
      return 0;
    }
    jobsTable(jobs).forEach((l) => io.out(l));
    return 0;
  },
};
