// The Hub models of this process: each id and revision resolved once, so that a run's wire and
// its record name the same commit, and a configuration sent again does not look again.
import { HubError } from "../errors.js";
import { type HubModel, type HubOptions, cachedHubModel, hubCacheDir, hubModel } from "./model.js";

export { isHubId } from "./model.js";

const resolved = new Map<string, HubModel>();

function keyOf(id: string, revision: string, env: NodeJS.ProcessEnv): string {
  return `${hubCacheDir(env)}\0${id}\0${revision}`;
}

/** The model `id` at `revision`, from the cache or downloaded into it; remembered for this process. */
export async function resolveHubModel(id: string, revision = "main", options: HubOptions = {}): Promise<HubModel> {
  const env = options.env ?? process.env;
  const key = keyOf(id, revision, env);
  const known = resolved.get(key);
  if (known) return known;
  const model = await hubModel(id, revision, options);
  resolved.set(key, model);
  return model;
}

/**
 * The snapshot folder of the model `id` at `revision`: the one this process resolved, else the
 * cache's, without any request.
 * @throws HubError when the cache does not hold the whole model.
 */
export function hubModelDirectory(id: string, revision = "main", env: NodeJS.ProcessEnv = process.env): string {
  const key = keyOf(id, revision, env);
  const model = resolved.get(key) ?? cachedHubModel(id, revision, env);
  if (!model) {
    const cache = hubCacheDir(env);
    throw new HubError(
      `${id}@${revision}: not in the Hugging Face cache ${cache}; learn() downloads it, or fill the cache first with \`await downloadModel(${JSON.stringify(id)})\` or \`npx xpm-torch download ${id}\``,
      { id, revision, cache, reason: "not-downloaded" },
    );
  }
  resolved.set(key, model);
  return model.directory;
}
