// How an experiment names its jobs and launchers to people, in refusals and log lines: a job by
// its class, the start of its identifier and its tags; a launcher by its class and the settings
// given to it, as they were written (`LocalLauncher(max_jobs=2)`), never as raw JSON.
import { TYPE_KEY, configClassOf } from "../config/class.js";
import type { JobState } from "../workspace/job-state.js";
import type { ProcessRecord } from "./backend.js";
import { LocalLauncher, SlurmLauncher } from "./launchers.js";

/** Tags as `key=value` words: `lr=0.001 seed=0`. */
export function tagsText(tags: Readonly<Record<string, unknown>>): string {
  return Object.entries(tags).map(([k, v]) => `${k}=${String(v)}`).join(" ");
}

/** The last part of a configuration's type: `Learner` for `xpm_torch.learner.Learner`. */
function className(config: object): string {
  const typeId = configClassOf(config)?.typeId ?? "task";
  return typeId.slice(typeId.lastIndexOf(".") + 1);
}

/** A job as people read it: `Learner 3f2a9c1b2d4e [lr=0.001 seed=0]`. */
export function jobLabel(config: object, identifier: string, tags: Readonly<Record<string, unknown>> = {}): string {
  const words = tagsText(tags);
  return `${className(config)} ${identifier.slice(0, 12)}${words ? ` [${words}]` : ""}`;
}

function settingText(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(settingText).join(", ")}]`;
  if (typeof value === "string" && /^[\w.:/@+-]+$/.test(value)) return value;
  return JSON.stringify(value);
}

/** A launcher as its class and the settings that differ from its defaults: `SlurmLauncher(partition=gpu, time=4:00:00)`. */
export function launcherText(launcher: object): string {
  const defaults: Record<string, unknown> = LocalLauncher.is(launcher) ? LocalLauncher.C({}) : SlurmLauncher.is(launcher) ? SlurmLauncher.C({}) : {};
  const settings = Object.entries(launcher)
    .filter(([key, value]) => key !== TYPE_KEY && value !== undefined && JSON.stringify(value) !== JSON.stringify(defaults[key]))
    .map(([key, value]) => `${key}=${settingText(value)}`);
  return `${className(launcher)}(${settings.join(", ")})`;
}

/** How a job came to its state in this plan: its stored result, or a process it did not start. */
export type StateHow = "cached" | "followed";

/**
 * What a log line says of a move: the state; `cached` for a job done before; `followed
 * (scheduled, pid 12 on host)` when the plan takes up a process it did not start, then
 * `running (followed)`.
 */
export function stateWords(state: JobState, detail: { failure?: string; how?: StateHow }, record: ProcessRecord | undefined, followed: boolean): string {
  if (state === "done" && detail.how === "cached") return "cached";
  if (detail.how === "followed") return `followed (${state}, ${processText(record)})`;
  const words = followed && (state === "scheduled" || state === "running") ? `${state} (followed)` : state;
  return `${words}${detail.failure ? `: ${detail.failure.split("\n")[0]}` : ""}`;
}

function processText(record: ProcessRecord | undefined): string {
  if (record?.type === "local") return `pid ${record.pid} on ${record.host}`;
  if (record?.type === "slurm") return `SLURM job ${record.id}`;
  return "another process holds its lock";
}
