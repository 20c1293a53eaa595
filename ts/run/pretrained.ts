// The Hub models a run starts from: found in the Hugging Face cache or downloaded into it before
// the core reads them, and recorded with their commits in the job and its result.
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

import { type InstanceOf, configClassOf } from "../config/class.js";
import { HFEncoder } from "../config/classes/models.js";
import { resolveHubModel } from "../hub/resolve.js";
import type { PretrainedModel } from "../learn-types.js";
import type { JobFiles } from "../workspace/job.js";

type HFEncoderConfig = InstanceOf<typeof HFEncoder>;

/** Every encoder of `config` named by Hub id rather than by path, once per id and revision. */
export function hubEncodersOf(config: object): HFEncoderConfig[] {
  const found = new Map<string, HFEncoderConfig>();
  const seen = new Set<object>();
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== "object" || seen.has(value)) return;
    seen.add(value);
    if (HFEncoder.is(value) && value.path === undefined) found.set(`${value.id}@${value.revision ?? "main"}`, value);
    const children = value instanceof Set || Array.isArray(value) ? [...value] : Object.values(value);
    if (configClassOf(value) || children.length > 0) children.forEach(visit);
  };
  visit(config);
  return [...found.values()];
}

/**
 * Resolves the Hub models of `config` (downloading what the cache lacks, a progress bar on a
 * terminal unless `quiet`) and records them in the job's `.experimaestro/pretrained.json`.
 */
export async function resolvePretrained(config: object, job: JobFiles, quiet: boolean): Promise<PretrainedModel[]> {
  const models: PretrainedModel[] = [];
  for (const encoder of hubEncodersOf(config)) {
    const model = await resolveHubModel(encoder.id, encoder.revision, quiet ? { progress: false } : {});
    models.push({ id: model.id, revision: model.revision, commit: model.commit });
  }
  if (models.length === 0) return models;
  mkdirSync(dirname(job.pretrainedFile), { recursive: true });
  writeFileSync(job.pretrainedFile, `${JSON.stringify(models, null, 2)}\n`);
  return models;
}
