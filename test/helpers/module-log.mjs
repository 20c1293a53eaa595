// `node --import <this file> ...` writes the URL of every ES module the process resolves, one a
// line, to the file $XPM_MODULE_LOG: what a command loads, for tests of its imports.
import { register } from "node:module";

register("./module-log-hooks.mjs", import.meta.url, { data: { log: process.env.XPM_MODULE_LOG } });
