#!/usr/bin/env node
import { XpmTorchError } from "./errors.js";
import { provisionLibtorch } from "./libtorch/provision.js";
import { TORCH_VERSION } from "./paths.js";

const USAGE = `usage: xpm-torch <command>

commands:
  setup [--cuda] [--force]   make libtorch ${TORCH_VERSION} available (downloads the torch wheel into the cache)
  libtorch-path              print the directory xpm-torch loads libtorch from
  demo                       train the demo model and print per-epoch loss and held-out accuracy
  schema                     print the JSON Schema of every configuration class (for editors)
  check-identifiers FILE     run identifier test vectors (xpm-identifier-vectors/1) from FILE
`;

async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "setup":
      provisionLibtorch({ cuda: rest.includes("--cuda"), force: rest.includes("--force") });
      return 0;
    case "libtorch-path": {
      const { locateLibtorch, notFoundMessage } = await import("./libtorch/locate.js");
      const search = locateLibtorch();
      if (!search.found) {
        console.error(notFoundMessage(search));
        return 1;
      }
      console.log(search.found.root);
      return 0;
    }
    case "demo": {
      const { runDemo } = await import("./demo.js");
      await runDemo();
      return 0;
    }
    case "schema": {
      await import("./config/classes/index.js");
      const { configJsonSchema } = await import("./config/json-schema.js");
      console.log(JSON.stringify(configJsonSchema(), null, 2));
      return 0;
    }
    case "check-identifiers": {
      const { checkIdentifiers } = await import("./identity/check-identifiers.js");
      return checkIdentifiers(rest, { out: (l) => console.log(l), err: (l) => console.error(l) });
    }
    case undefined:
    case "help":
    case "--help":
      console.log(USAGE);
      return command === undefined ? 1 : 0;
    default:
      console.error(`xpm-torch: unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    if (error instanceof XpmTorchError) console.error(`xpm-torch: ${error.message}`);
    else console.error(error);
    process.exit(1);
  },
);
