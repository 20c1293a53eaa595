// The run's progress reports, also written where experimaestro's monitor reads them (the job's
// status.json and event files): level 0 the run, `epoch E/N`; level 1 the epoch, `training` or
// `validation <listener>`.
import type { LearnOptions, LearnerConfig } from "../learn-types.js";
import { JobProgress } from "../workspace/job-progress.js";
import type { Job } from "../workspace/job.js";

/** `options` whose progress callbacks also record the job's progress. */
export function withJobProgress(config: LearnerConfig, job: Job, options: LearnOptions): LearnOptions {
  const progress = new JobProgress({ jobDir: job.dir, identifier: job.identifier, taskId: job.typeId });
  const epochs = config.max_epochs;
  const epochText = (epoch: number) => `epoch ${Math.min(epoch, epochs)}/${epochs}`;
  let totalSteps = 0;
  return {
    ...options,
    onProgress: (p) => {
      totalSteps = p.totalSteps;
      const perEpoch = p.totalSteps / epochs;
      progress.set(0, p.totalSteps > 0 ? p.step / p.totalSteps : 0, epochText(p.epoch));
      progress.set(1, perEpoch > 0 ? (p.step - (p.epoch - 1) * perEpoch) / perEpoch : 0, "training");
      options.onProgress?.(p);
    },
    onValidation: (v) => {
      progress.set(1, v.total > 0 ? v.done / v.total : 0, `validation ${v.listener}`);
      options.onValidation?.(v);
    },
    onEpoch: (report) => {
      progress.set(0, totalSteps > 0 ? report.step / totalSteps : report.epoch / epochs, epochText(report.epoch));
      options.onEpoch?.(report);
    },
  };
}
