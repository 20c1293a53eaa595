#!/usr/bin/env node
import { runCli } from "./cli/main.js";

runCli(process.argv.slice(2), { out: (line) => console.log(line), err: (line) => console.error(line) }).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
