import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

/** The raw bytes, dtype and shape of each tensor of a safetensors file. */
export function readSafetensors(file: string): Map<string, { dtype: string; shape: number[]; data: Buffer }> {
  const bytes = readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString("utf8")) as Record<
    string,
    { dtype: string; shape: number[]; data_offsets: [number, number] }
  >;
  const body = bytes.subarray(8 + headerLength);
  const tensors = new Map<string, { dtype: string; shape: number[]; data: Buffer }>();
  for (const [name, t] of Object.entries(header)) {
    if (name === "__metadata__") continue;
    tensors.set(name, { dtype: t.dtype, shape: t.shape, data: body.subarray(t.data_offsets[0], t.data_offsets[1]) });
  }
  return tensors;
}

/** Writes tensors as `readSafetensors` returns them into a safetensors file. */
export function writeSafetensors(file: string, tensors: ReadonlyMap<string, { dtype: string; shape: number[]; data: Buffer }>): void {
  const header: Record<string, { dtype: string; shape: number[]; data_offsets: [number, number] }> = {};
  let offset = 0;
  for (const [name, t] of tensors) {
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.length] };
    offset += t.data.length;
  }
  const json = Buffer.from(JSON.stringify(header), "utf8");
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(json.length));
  writeFileSync(file, Buffer.concat([length, json, ...[...tensors.values()].map((t) => t.data)]));
}

/** The tiny BERT fixture of the core's tests. */
export const TINY_BERT = resolve("crates/core/tests/fixtures/hf/bert");

/** A copy of the tiny BERT in `dir` without its classification head: a cross-encoder on it draws one. */
export function headlessTinyBert(dir: string): string {
  const headless = join(dir, "bert");
  cpSync(TINY_BERT, headless, { recursive: true });
  const tensors = readSafetensors(join(headless, "model.safetensors"));
  for (const name of [...tensors.keys()]) if (name.startsWith("classifier.")) tensors.delete(name);
  writeSafetensors(join(headless, "model.safetensors"), tensors);
  return headless;
}
