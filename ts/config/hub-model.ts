// The configuration a Hub model describes in its own files: a cross-encoder when it carries a
// sequence-classification head, else a bi-encoder pooled as its sentence-transformers files say.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { ModelDirectoryError } from "../errors.js";
import { hubModelDirectory } from "../hub/resolve.js";
import { BiEncoder, CrossEncoder, HFEncoder } from "./classes/models.js";

type Json = Record<string, unknown>;

function readJson(file: string): Json | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Json;
  } catch (error) {
    throw new ModelDirectoryError(`${file}: not JSON (${(error as Error).message})`, file);
  }
}

function isCrossEncoder(config: Json): boolean {
  const architectures = Array.isArray(config.architectures) ? (config.architectures as unknown[]) : [];
  const labels = config.id2label && typeof config.id2label === "object" ? Object.keys(config.id2label).length : 1;
  return architectures.some((a) => typeof a === "string" && a.endsWith("ForSequenceClassification")) && labels === 1;
}

/**
 * The model of the Hub model `id` at `revision`, read from the Hugging Face cache: a
 * {@link CrossEncoder} when its `config.json` names a one-label `…ForSequenceClassification`,
 * else a {@link BiEncoder} pooled (`cls` or `mean`), normalised and cut as its
 * sentence-transformers files (`1_Pooling/config.json`, `modules.json`,
 * `sentence_bert_config.json`) say.
 */
export function hubModelConfig(id: string, revision?: string): ReturnType<typeof CrossEncoder.C> | ReturnType<typeof BiEncoder.C> {
  const directory = hubModelDirectory(id, revision);
  const encoder = HFEncoder.C({ id, ...(revision ? { revision } : {}) });
  const config = readJson(join(directory, "config.json")) ?? {};
  const sentence = readJson(join(directory, "sentence_bert_config.json"));
  const maxLength = typeof sentence?.max_seq_length === "number" ? { max_length: sentence.max_seq_length } : {};
  if (isCrossEncoder(config)) return CrossEncoder.C({ encoder, ...maxLength });
  const pooling = readJson(join(directory, "1_Pooling", "config.json"));
  const modules = readJson(join(directory, "modules.json"));
  const normalize = Array.isArray(modules) && modules.some((m: { type?: unknown }) => typeof m.type === "string" && m.type.endsWith("Normalize"));
  return BiEncoder.C({
    encoder,
    pooling: pooling?.pooling_mode_cls_token === true ? "cls" : "mean",
    normalize,
    ...maxLength,
  });
}
