// Every configuration class, by kind; dataset-unions.ts, the unions that samplers and listeners
// take, stays out.
export * from "./base.js";
export * from "./batchers.js";
export * from "./configuration.js";
export * from "./datasets.js";
export * from "./hooks.js";
export * from "./learner.js";
export * from "./listwise.js";
export * from "./losses.js";
export * from "./models.js";
export * from "./module.js";
export * from "./optim.js";
export * from "./samplers.js";
export * from "./trainers.js";
export * from "./validation.js";
