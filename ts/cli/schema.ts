import type { Command } from "./command.js";

export const schemaCommand: Command = {
  name: "schema",
  summary: "print the JSON Schema of every configuration class (for editors)",
  help: `usage: xpm-torch schema

Prints a JSON Schema (draft 2020-12) describing every configuration class, keyed by type id.`,
  run: async (_args, io) => {
    await import("../config/classes/index.js");
    const { configJsonSchema } = await import("../config/json-schema.js");
    io.out(JSON.stringify(configJsonSchema(), null, 2));
    return 0;
  },
};

export const checkIdentifiersCommand: Command = {
  name: "check-identifiers",
  summary: "run identifier test vectors (xpm-identifier-vectors/1) from FILE",
  help: `usage: xpm-torch check-identifiers FILE

Computes the identifier of each configuration in FILE (format xpm-identifier-vectors/1) and
compares it with the expected one; exits 1 on any difference.`,
  positionals: [1, 1],
  run: async ({ positionals }, io) => {
    const { checkIdentifiers } = await import("../identity/check-identifiers.js");
    return checkIdentifiers(positionals, io);
  },
};
