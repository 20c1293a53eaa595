// A TensorBoard event-file reader written from the format description alone, independent of the
// Rust writer: it checks the TFRecord framing and both masked CRC32C values of every record, and
// decodes the protobuf wire format by hand. Tests use it to check the writer; `xpm-torch report`
// uses it to draw the curves.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/** One scalar as TensorBoard stores it. */
export interface Scalar {
  tag: string;
  step: number;
  value: number;
  wallTime: number;
}

/** A decoded `Event` message (only the fields event files of scalars use). */
export interface DecodedEvent {
  wallTime: number;
  step: number;
  fileVersion?: string;
  /** `Summary.Value`s carrying a `simple_value`; other kinds (tensors, images) are skipped. */
  scalars: { tag: string; value: number }[];
}

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
    table[i] = crc >>> 0;
  }
  return table;
})();

/** CRC32C (Castagnoli) of `bytes`, as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) crc = CRC_TABLE[(crc ^ b) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** The CRC32C as TFRecord stores it: rotated right by 15 bits, plus 0xa282ead8. */
export function maskedCrc32c(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** The payloads of a TFRecord file; throws on a truncated record or a CRC mismatch. */
export function readRecords(data: Uint8Array, name = "<buffer>"): Uint8Array[] {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const records: Uint8Array[] = [];
  let pos = 0;
  while (pos < data.length) {
    if (pos + 12 > data.length) throw new Error(`${name}: truncated record header at byte ${pos}`);
    const lengthBytes = data.subarray(pos, pos + 8);
    const lengthCrc = view.getUint32(pos + 8, true);
    if (lengthCrc !== maskedCrc32c(lengthBytes)) {
      throw new Error(`${name}: length CRC mismatch at byte ${pos}`);
    }
    const length = view.getBigUint64(pos, true);
    const start = pos + 12;
    if (BigInt(start) + length + 4n > BigInt(data.length)) {
      throw new Error(`${name}: truncated record at byte ${pos} (length ${length})`);
    }
    const end = start + Number(length);
    const payload = data.subarray(start, end);
    if (view.getUint32(end, true) !== maskedCrc32c(payload)) {
      throw new Error(`${name}: payload CRC mismatch in the record at byte ${pos}`);
    }
    records.push(payload);
    pos = end + 4;
  }
  return records;
}

type FieldValue =
  | { wire: 0; value: bigint }
  | { wire: 1; view: DataView }
  | { wire: 2; bytes: Uint8Array }
  | { wire: 5; view: DataView };

/** The fields of one protobuf message, in order. */
function* fields(msg: Uint8Array): Generator<[number, FieldValue]> {
  let pos = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (pos >= msg.length) throw new Error("protobuf: truncated varint");
      const b = msg[pos++]!;
      value |= BigInt(b & 0x7f) << shift;
      if (b < 0x80) return BigInt.asUintN(64, value);
    }
    throw new Error("protobuf: varint longer than 10 bytes");
  };
  const take = (n: number): Uint8Array => {
    if (pos + n > msg.length) throw new Error("protobuf: field runs past the message");
    const bytes = msg.subarray(pos, pos + n);
    pos += n;
    return bytes;
  };
  const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  while (pos < msg.length) {
    const key = varint();
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) yield [field, { wire, value: varint() }];
    else if (wire === 1) yield [field, { wire, view: view(take(8)) }];
    else if (wire === 2) yield [field, { wire, bytes: take(Number(varint())) }];
    else if (wire === 5) yield [field, { wire, view: view(take(4)) }];
    else throw new Error(`protobuf: unsupported wire type ${wire} (field ${field})`);
  }
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decodes one `Summary.Value`; `undefined` unless it carries a `simple_value`. */
function decodeValue(msg: Uint8Array): { tag: string; value: number } | undefined {
  let tag = "";
  let value: number | undefined;
  for (const [field, v] of fields(msg)) {
    if (field === 1 && v.wire === 2) tag = utf8.decode(v.bytes);
    else if (field === 2 && v.wire === 5) value = v.view.getFloat32(0, true);
  }
  return value === undefined ? undefined : { tag, value };
}

/** Decodes an `Event` payload: wall_time 1 (double), step 2 (int64), file_version 3, summary 5. */
export function decodeEvent(payload: Uint8Array): DecodedEvent {
  const event: DecodedEvent = { wallTime: 0, step: 0, scalars: [] };
  for (const [field, v] of fields(payload)) {
    if (field === 1 && v.wire === 1) event.wallTime = v.view.getFloat64(0, true);
    else if (field === 2 && v.wire === 0) event.step = Number(BigInt.asIntN(64, v.value));
    else if (field === 3 && v.wire === 2) event.fileVersion = utf8.decode(v.bytes);
    else if (field === 5 && v.wire === 2) {
      for (const [sf, sv] of fields(v.bytes)) {
        if (sf !== 1 || sv.wire !== 2) continue;
        const scalar = decodeValue(sv.bytes);
        if (scalar) event.scalars.push(scalar);
      }
    }
  }
  return event;
}

/** Every event of one event file, in file order; throws on any framing or CRC error. */
export function readEvents(file: string): DecodedEvent[] {
  return readRecords(readFileSync(file), file).map(decodeEvent);
}

/** Every scalar of one event file, in file order; throws on any framing or CRC error. */
export function readScalars(file: string): Scalar[] {
  const out: Scalar[] = [];
  for (const event of readEvents(file)) {
    for (const { tag, value } of event.scalars) {
      out.push({ tag, step: event.step, value, wallTime: event.wallTime });
    }
  }
  return out;
}

/** The scalars of every `*tfevents*` file directly in `logdir`, files taken in name order. */
export function readEventFiles(logdir: string): Scalar[] {
  return readdirSync(logdir)
    .filter((name) => name.includes("tfevents"))
    .sort()
    .flatMap((name) => readScalars(join(logdir, name)));
}
