// Tests the event-file reader on files built here by hand (and on bytes the Python `tensorboard`
// package wrote), so that it checks the Rust writer independently of it.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { crc32c, maskedCrc32c, readEventFiles, readEvents, readScalars } from "./helpers/tfevents.js";

const ascii = (s: string) => new TextEncoder().encode(s);
const fromHex = (hex: string) => Uint8Array.from(Buffer.from(hex, "hex"));

// A minimal protobuf encoder, for building events field by field.
function varint(v: bigint): number[] {
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}
const key = (field: number, wire: number) => varint(BigInt((field << 3) | wire));
const uintField = (field: number, v: bigint) => [...key(field, 0), ...varint(v)];
const bytesField = (field: number, bytes: Uint8Array | number[]) => [
  ...key(field, 2),
  ...varint(BigInt(bytes.length)),
  ...bytes,
];
function doubleField(field: number, v: number): number[] {
  const b = Buffer.alloc(8);
  b.writeDoubleLE(v);
  return [...key(field, 1), ...b];
}
function floatField(field: number, v: number): number[] {
  const b = Buffer.alloc(4);
  b.writeFloatLE(v);
  return [...key(field, 5), ...b];
}

function record(payload: number[] | Uint8Array): Buffer {
  const header = Buffer.alloc(12);
  header.writeBigUInt64LE(BigInt(payload.length));
  header.writeUInt32LE(maskedCrc32c(header.subarray(0, 8)), 8);
  const trailer = Buffer.alloc(4);
  trailer.writeUInt32LE(maskedCrc32c(Uint8Array.from(payload)));
  return Buffer.concat([header, Buffer.from(payload), trailer]);
}

const versionEvent = (wallTime: number) => record([...doubleField(1, wallTime), ...bytesField(3, ascii("brain.Event:2"))]);

function scalarEvent(wallTime: number, step: bigint, values: [string, number][], extra: number[] = []): Buffer {
  const summary = values.flatMap(([tag, v]) => bytesField(1, [...bytesField(1, ascii(tag)), ...floatField(2, v)]));
  const stepField = step === 0n ? [] : uintField(2, step);
  return record([...doubleField(1, wallTime), ...stepField, ...bytesField(5, summary), ...extra]);
}

describe("tfevents reader", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "xpm-tfevents-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("computes CRC32C and its TFRecord mask", () => {
    expect(crc32c(ascii(""))).toBe(0);
    expect(crc32c(ascii("123456789"))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa);
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43);
    // Values from the Python tensorboard package's masked_crc32c.
    expect(maskedCrc32c(ascii("123456789"))).toBe(0xc78ab0e5);
    expect(maskedCrc32c(new Uint8Array(8))).toBe(0x07980329);
  });

  it("reads a record the Python tensorboard package wrote", () => {
    // RecordWriter.write(Event(wall_time=1.5, step=3, summary=[Value(tag="loss", simple_value=0.25)]))
    const file = join(dir, "events.out.tfevents.1.host.1.0");
    writeFileSync(
      file,
      Buffer.concat([
        versionEvent(1.25),
        fromHex("1a00000000000000129bd82d09000000000000f83f10032a0d0a0b0a046c6f7373150000803ed054b255"),
      ]),
    );
    expect(readScalars(file)).toEqual([{ tag: "loss", step: 3, value: 0.25, wallTime: 1.5 }]);
    expect(readEvents(file)[0]).toEqual({ wallTime: 1.25, step: 0, fileVersion: "brain.Event:2", scalars: [] });
  });

  it("decodes steps, several values per summary, and skips what is not a simple value", () => {
    const file = join(dir, "events.out.tfevents.2.host.1.0");
    const tensorValue = bytesField(1, [...bytesField(1, ascii("hist")), ...bytesField(8, [1, 2, 3])]);
    const big = (1n << 40n) + 7n;
    writeFileSync(
      file,
      Buffer.concat([
        versionEvent(100),
        scalarEvent(100.5, 0n, [["train/loss", 2]]),
        scalarEvent(101.5, 1n, [
          ["train/loss", 1.5],
          ["train/accuracy", -0.25],
        ]),
        // A tensor value and an unknown Event field (source_metadata, 10) are ignored.
        record([...doubleField(1, 102), ...uintField(2, 2n), ...bytesField(5, tensorValue), ...bytesField(10, [0])]),
        scalarEvent(103.5, big, [["x", 3e38]]),
      ]),
    );
    expect(readScalars(file)).toEqual([
      { tag: "train/loss", step: 0, value: 2, wallTime: 100.5 },
      { tag: "train/loss", step: 1, value: 1.5, wallTime: 101.5 },
      { tag: "train/accuracy", step: 1, value: -0.25, wallTime: 101.5 },
      { tag: "x", step: Number(big), value: Math.fround(3e38), wallTime: 103.5 },
    ]);
  });

  it("detects a corrupted byte anywhere in a record", () => {
    const good = Buffer.concat([versionEvent(1), scalarEvent(2, 5n, [["train/loss", 0.5]])]);
    const file = join(dir, "events.out.tfevents.3.host.1.0");
    const start = versionEvent(1).length;
    const cases: [number, RegExp][] = [
      [start + 2, /length CRC mismatch at byte/], // length
      [start + 9, /length CRC mismatch at byte/], // length CRC
      [start + 20, /payload CRC mismatch/], // payload
      [good.length - 1, /payload CRC mismatch/], // payload CRC
    ];
    for (const [at, message] of cases) {
      const bad = Buffer.from(good);
      bad[at] = bad[at]! ^ 0x01;
      writeFileSync(file, bad);
      expect(() => readScalars(file), `byte ${at}`).toThrow(message);
    }
    writeFileSync(file, good.subarray(0, good.length - 2));
    expect(() => readScalars(file)).toThrow(/truncated record/);
    writeFileSync(file, good);
    expect(readScalars(file)).toEqual([{ tag: "train/loss", step: 5, value: 0.5, wallTime: 2 }]);
  });

  it("reads every event file of a directory in name order", () => {
    writeFileSync(join(dir, "events.out.tfevents.20.host.1.0"), scalarEvent(2, 2n, [["a", 2]]));
    writeFileSync(join(dir, "events.out.tfevents.10.host.1.0"), scalarEvent(1, 1n, [["a", 1]]));
    writeFileSync(join(dir, "notes.txt"), "not an event file");
    expect(readEventFiles(dir).map((s) => s.value)).toEqual([1, 2]);
  });
});
