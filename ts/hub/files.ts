// Which files of a repository make a model xpm-torch reads.
import { readFileSync } from "node:fs";
import { join } from "node:path";

import type { RepoCache } from "./cache.js";

/** Needed, besides the weights. */
export const REQUIRED_FILES = ["config.json", "tokenizer.json"] as const;
export const WEIGHTS = "model.safetensors";
export const WEIGHTS_INDEX = "model.safetensors.index.json";
/** The weights Python's transformers would take instead, which xpm-torch does not read. */
export const PICKLED_WEIGHTS = "pytorch_model.bin";
/** Fetched when the repository has them: the tokenizer's settings and the sentence-transformers files. */
export const OPTIONAL_FILES = [
  "tokenizer_config.json",
  "special_tokens_map.json",
  "vocab.txt",
  "modules.json",
  "sentence_bert_config.json",
  "config_sentence_transformers.json",
  "1_Pooling/config.json",
] as const;

const SHARD = /^[\w.-]+(?:\/[\w.-]+)*$/;

/** The shard files a `model.safetensors.index.json` names in its `weight_map`, each once, in order. */
export function shardsOf(indexText: string): string[] {
  const index = JSON.parse(indexText) as { weight_map?: unknown };
  const map = index.weight_map;
  if (typeof map !== "object" || map === null) throw new Error("no weight_map");
  const shards = [...new Set(Object.values(map))];
  const bad = shards.find((s) => typeof s !== "string" || !SHARD.test(s) || s.split("/").some((part) => part === "." || part === ".."));
  if (bad !== undefined) throw new Error(`the weight_map names ${JSON.stringify(bad)}, which is no file of the repository`);
  return shards as string[];
}

/** Whether the snapshot `commit` holds the weights: `model.safetensors`, or an index and every shard it names. */
export function hasCachedWeights(cache: RepoCache, commit: string): boolean {
  if (cache.hasFile(commit, WEIGHTS)) return true;
  if (!cache.hasFile(commit, WEIGHTS_INDEX)) return false;
  try {
    return shardsOf(readFileSync(join(cache.snapshot(commit), WEIGHTS_INDEX), "utf8")).every((shard) => cache.hasFile(commit, shard));
  } catch {
    return false;
  }
}
