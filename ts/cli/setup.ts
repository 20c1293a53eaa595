import { TORCH_VERSION } from "../paths.js";
import type { Command } from "./command.js";

export const setupCommand: Command = {
  name: "setup",
  summary: `make libtorch ${TORCH_VERSION} available (downloads the torch wheel into the cache)`,
  help: `usage: xpm-torch setup [--cuda] [--force]

Downloads the torch==${TORCH_VERSION} wheel from the Python package index and unpacks its libtorch
into the xpm-torch cache (XPM_TORCH_CACHE, else ~/.cache/xpm-torch). Does nothing when it is
already there.

options:
  --cuda    make libtorch's CUDA libraries available, for GPU machines: reuses a torch
            ${TORCH_VERSION} that has them (XPM_TORCH_LIBTORCH, or the torch of XPM_TORCH_PYTHON),
            else installs torch with exactly the CUDA wheels its METADATA pins (about 2.5 GB)
  --force   download and unpack again`,
  options: { cuda: { type: "boolean" }, force: { type: "boolean" } },
  run: async ({ values }) => {
    const { provisionLibtorch } = await import("../libtorch/provision.js");
    provisionLibtorch({ cuda: values.cuda === true, force: values.force === true });
    return 0;
  },
};

export const libtorchPathCommand: Command = {
  name: "libtorch-path",
  summary: "print the directory xpm-torch loads libtorch from",
  help: `usage: xpm-torch libtorch-path

Prints the torch directory that importing xpm-torch would load libtorch from, or says what is
missing and exits 1.`,
  run: async (_args, io) => {
    const { locateLibtorch, notFoundMessage } = await import("../libtorch/locate.js");
    const search = locateLibtorch();
    if (!search.found) {
      io.err(notFoundMessage(search));
      return 1;
    }
    io.out(search.found.root);
    return 0;
  },
};
