// The package's declarations use Node's types (streams, AbortSignal, process.env): they come with
// it, as its dependency @types/node, so that a project with only typescript compiles against them.
/// <reference types="node" preserve="true" />
// Loading the package loads libtorch and the addon at once, so that a missing libtorch is
// reported at import with the command that fixes it.
import { loadNative } from "./native.js";

loadNative();

export * from "./config/classes/index.js";
export { TYPE_KEY, type Config, type ConfigClass, type ConfigOf, type InstanceOf, configOf, defineConfig } from "./config/class.js";
export { param, meta, constant, generated, type ParamKind } from "./config/declare.js";
export { sealedSet } from "./config/types.js";
export * as types from "./config/types.js";
export { markAsOutputOf, setInitTasks, setMeta } from "./config/identifier-marks.js";
export { identifierOf } from "./config/identifiers.js";
export * from "./errors.js";
export { defineBatchDimsProvider, type DimsCombine, type DimsProviderBehaviour } from "./dims-providers.js";
export {
  defineSampler,
  inMemoryLtrDataset,
  type InMemoryArrays,
  type PairwiseRecord,
  type PointwiseRecord,
  type RecordOf,
  type SamplerBehaviour,
  type SamplerContext,
  type SamplerKind,
  type TripletRecord,
} from "./samplers.js";
export {
  learn,
  type BestCheckpoint,
  type DroppedTrainingState,
  type ListenerBests,
  type EpochReport,
  type LearnOptions,
  type LearnResult,
  type LearnerLoaders,
  type ModuleLoaderConfig,
  type LearnerConfig,
  type PretrainedModel,
  type RunStart,
  type StepProgress,
  type ValidationProgress,
} from "./learn.js";
// Modules of extension points written in TypeScript export only what users write against, whole:
// a kind added to one of them needs no line here.
export * from "./hooks.js";
export * from "./listeners.js";
export { JobLockedError, defaultWorkspace } from "./workspace/job.js";
export { readParamsJson, writeParamsJson } from "./workspace/params-json.js";
export {
  downloadModel,
  loadModel,
  type FeatureRecords,
  type HubModel,
  type LoadModelOptions,
  type ModelConfig,
  type TextPair,
  type TokenPair,
  type TokenTriplet,
  type TrainedModel,
} from "./model.js";
export { demoLearner, type DemoOptions } from "./demo-config.js";
export { TORCH_VERSION } from "./paths.js";
export {
  createProgressDisplay,
  type ProgressDisplay,
  type ProgressDisplayOptions,
  type ProgressStream,
} from "./progress/display.js";
export { writeReport, type WrittenReport } from "./report/report.js";
export {
  experiment,
  Experiment,
  ExperimentInterruptedError,
  type ExperimentOptions,
  type ExperimentSummary,
  type JobHandle,
  type LauncherConfig,
  type SubmitOptions,
  type Tags,
} from "./experiment/experiment.js";
export { ExperimentError, JobFailedError } from "./experiment/errors.js";
export { Launcher, LocalLauncher, SlurmLauncher } from "./experiment/launchers.js";
export type { PlannedLoaders } from "./experiment/outputs.js";
export { listJobs, readJob, type JobInfo, type BestValue } from "./report/job.js";
export { type FailureReason, type JobState, TRANSITIONS as JOB_TRANSITIONS } from "./workspace/job-state.js";
