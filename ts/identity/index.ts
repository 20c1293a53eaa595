export * from "./values.js";
export * from "./hash.js";
export * from "./defaults.js";
export * from "./vectors.js";
