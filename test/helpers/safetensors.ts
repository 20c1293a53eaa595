import { readFileSync } from "node:fs";

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
