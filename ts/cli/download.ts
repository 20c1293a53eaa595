import { Writable } from "node:stream";

import { type CliIo, type Command, UsageError } from "./command.js";

/** The command's stderr as a stream: the terminal itself (for a redrawn bar), else a line writer. */
function progressStream(io: CliIo): NodeJS.WritableStream {
  if (process.stderr.isTTY) return process.stderr;
  return new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      for (const line of String(chunk).split("\n")) if (line !== "") io.err(line);
      done();
    },
  });
}

export const downloadCommand: Command = {
  name: "download",
  summary: "download a Hugging Face Hub model into Python's Hugging Face cache",
  help: `usage: xpm-torch download ORG/NAME [--revision R]

Downloads the Hugging Face Hub model ORG/NAME (config.json, tokenizer.json, safetensors weights,
the tokenizer's and sentence-transformers' files it has) into Python's Hugging Face cache,
exactly as huggingface_hub lays it out, so that Python and xpm-torch each use what the other
downloaded. Asks the Hub what the revision points at now and fetches only the missing files;
prints the snapshot folder and its commit.

Run it ahead of a plan: nodes without network then find the model with HF_HUB_OFFLINE=1, and
the jobs of a plan started at once do not each download it.

options:
  --revision R   a branch, a tag or a commit (default main)

environment (huggingface_hub's own):
  HF_HUB_CACHE, HF_HOME   the cache (default ~/.cache/huggingface/hub)
  HF_TOKEN                the token for private and gated models (else the file
                          HF_TOKEN_PATH, else $HF_HOME/token, as \`huggingface-cli login\` writes)
  HF_ENDPOINT             the server (default https://huggingface.co)`,
  options: { revision: { type: "string" } },
  positionals: [1, 1],
  run: async ({ values, positionals }, io) => {
    const { downloadHubModel, isHubId } = await import("../hub/model.js");
    const id = positionals[0] as string;
    if (!isHubId(id)) throw new UsageError(`${JSON.stringify(id)} is not a Hugging Face Hub id (NAME or ORG/NAME)`);
    const revision = typeof values.revision === "string" ? values.revision : "main";
    const model = await downloadHubModel(id, revision, { progress: progressStream(io) });
    io.out(`${model.id}@${model.revision}: commit ${model.commit}`);
    io.out(model.directory);
    return 0;
  },
};
