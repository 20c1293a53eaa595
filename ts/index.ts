// Loading the package loads libtorch and the addon at once, so that a missing libtorch is
// reported at import with the command that fixes it.
import { loadNative } from "./native.js";

loadNative();

export * from "./config/classes.js";
export { TYPE_KEY, type Config, type ConfigClass, type ConfigOf } from "./config/base.js";
export * from "./errors.js";
export { learn, type EpochReport, type LearnOptions, type LearnResult, type LearnerConfig, type StepProgress } from "./learn.js";
export { demoLearner, type DemoOptions } from "./demo-config.js";
export { TORCH_VERSION } from "./paths.js";
