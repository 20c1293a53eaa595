import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, describe, expect, it } from "vitest";

import { checkIdentifiers } from "../ts/identity/check-identifiers.js";
import {
  applyDefaults,
  compareCodePoints,
  createNode,
  IdentifierError,
  identifier,
  identifierHex,
  isIdentifierCached,
  ownRecordBytes,
  parseValueType,
  formatValueType,
  parseVectors,
  readVectorsFile,
  runVectorsFile,
  valuesEqual,
  VectorsFileError,
  type ArgumentDecl,
  type ConfigNode,
  type TypeDecl,
  type TypedValue,
  type ValueType,
  type VectorCase,
} from "../ts/identity/index.js";

// The project's copy of the experimaestro identifier-stability vectors (origin: test/fixtures/README.md).
const VECTORS = join(dirname(fileURLToPath(import.meta.url)), "fixtures", "experimaestro-identifiers.json");

// ---------------------------------------------------------------------------------------------
// Builders

const INT: ValueType = { kind: "int" };
const STR: ValueType = { kind: "str" };

function arg(name: string, valueType: ValueType = INT, options: Partial<ArgumentDecl> = {}): ArgumentDecl {
  return {
    name,
    annotation: "param",
    valueType,
    ignored: false,
    required: true,
    default: null,
    ignoreDefault: false,
    generator: null,
    constant: false,
    ...options,
  };
}

function type(declaredId: string, args: ArgumentDecl[], options: Partial<TypeDecl> = {}): TypeDecl {
  return { id: declaredId.toLowerCase(), declaredId, kind: "config", instance: false, arguments: args, ...options };
}

const int = (value: number | bigint): TypedValue => ({ kind: "int", value: BigInt(value) });
const float = (value: number): TypedValue => ({ kind: "float", value });
const bool = (value: boolean): TypedValue => ({ kind: "bool", value });
const str = (value: string): TypedValue => ({ kind: "str", value });
const none = (): TypedValue => ({ kind: "none" });
const path = (value: string): TypedValue => ({ kind: "path", value });
const list = (...items: TypedValue[]): TypedValue => ({ kind: "list", items });
const set = (...items: TypedValue[]): TypedValue => ({ kind: "set", items });
const dict = (...entries: [TypedValue, TypedValue][]): TypedValue => ({
  kind: "dict",
  entries: entries.map(([key, value]) => ({ key, value })),
});
const cfg = (node: ConfigNode): TypedValue => ({ kind: "config", node });

function node(t: TypeDecl, values: Record<string, TypedValue> = {}, marks: Partial<ConfigNode> = {}): ConfigNode {
  const n = Object.assign(createNode(t, Object.entries(values)), marks);
  applyDefaults(n);
  return n;
}

/** Bytes from hex strings (spaces allowed) and `u(text)` UTF-8 runs. */
function bytes(...parts: (string | Uint8Array)[]): string {
  return parts.map((part) => (typeof part === "string" ? part.replace(/\s+/g, "") : Buffer.from(part).toString("hex"))).join("");
}
const u = (text: string): Uint8Array => Buffer.from(text, "utf8");
const hex = (data: Uint8Array): string => Buffer.from(data).toString("hex");
const sha = (hexBytes: string): string => createHash("sha256").update(Buffer.from(hexBytes, "hex")).digest("hex");
const record = (n: ConfigNode): string => hex(ownRecordBytes(n));
const i64 = (n: bigint | number): string => {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(n));
  return b.toString("hex");
};
const f64 = (x: number): string => {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(x);
  return b.toString("hex");
};

const ConfigInt = type("test.stability.ConfigInt", [arg("x")]);

// ---------------------------------------------------------------------------------------------

describe("test vectors", () => {
  const cases = readVectorsFile(VECTORS);
  const byName = new Map(cases.map((c) => [c.name, c]));
  const getCase = (name: string): VectorCase => {
    const found = byName.get(name);
    if (!found) throw new Error(`no case ${name}`);
    return found;
  };

  it("has the 61 cases", () => {
    expect(cases).toHaveLength(61);
  });

  it.each(cases.map((c) => [c.name, c] as const))("%s", (_name, c) => {
    expect(identifierHex(c.root)).toBe(c.expected);
  });

  it("runVectorsFile reports 61 passed, 0 failed", () => {
    const report = runVectorsFile(VECTORS);
    expect(report.passed).toBe(61);
    expect(report.failed).toBe(0);
    expect(report.results.every((r) => r.passed && r.error === null)).toBe(true);
  });

  describe("worked byte-level examples (§10)", () => {
    const examples: [string, string, string][] = [
      [
        "int_positive",
        bytes("00", u("test.stability.configint"), "03", u("x"), "05", "01 00 00 00 00 00 00 00 2a"),
        "dddd2297650a3601b683248175a6ff15ccdc97c49a151f185b14a7c260cdebc8",
      ],
      [
        "int_negative",
        bytes("00", u("test.stability.configint"), "03", u("x"), "05", "01 ff ff ff ff ff ff ff f6"),
        "bed90d5f80113f1cd8c61958b34689991aa1a85a89d8f1ec0a24bb89be92618f",
      ],
      [
        "float_simple",
        bytes("00", u("test.stability.configfloat"), "03", u("f"), "05", "02 40 09 1e b8 51 eb 85 1f"),
        "ffc667ce1243f8e175113ca29a5a376966006e45beb13b13a5230b1530c7fa8b",
      ],
      [
        "bool_true",
        bytes("00", u("test.stability.configbool"), "03", u("b"), "05", "01 00 00 00 00 00 00 00 01"),
        "0d4efdb48a2e365a0923907b3c7d0bd3a10a8f6ee28bfdc65b66e201780eb281",
      ],
      [
        "str_empty",
        bytes("00", u("test.stability.configstr"), "03", u("s"), "05", "03"),
        "9653bc81da527a53d112c6e86b0d8f8efadd70c59c93a9f37b3942e2d64aa5ce",
      ],
      [
        "str_unicode",
        bytes("00", u("test.stability.configstr"), "03", u("s"), "05", "03 68 c3 a9 6c 6c 6f 20 77 c3 b6 72 6c 64 20 f0 9f 8c 8d"),
        "3bc74da0bdf3df81db5e158b9e3d6a3d555b7101f3f34074eaed601cda0876a5",
      ],
      [
        "enum_value_a",
        bytes("00", u("test.stability.configenum"), "03", u("e"), "05", "0a", u("test_identifier_stability.MyEnum:VALUE_A")),
        "7b2dcfdfbfe4ac686fb2257a817d7647f418da56d726258a529679d85bdcbfd6",
      ],
      [
        "list_multiple",
        bytes(
          "00",
          u("test.stability.configlist"),
          "03",
          u("items"),
          "05",
          "07 40 14 00 00 00 00 00 00",
          ...[1, 2, 3, 4, 5].map((n) => `01${i64(n)}`),
        ),
        "a5ac5787814b782a1017adf9de848e14b58fd459fa7a056136f37d554aba5812",
      ],
      [
        "dict_multiple",
        bytes(
          "00",
          u("test.stability.configdict"),
          "03",
          u("mapping"),
          "05",
          "09",
          "03",
          u("a"),
          `01${i64(1)}`,
          "03",
          u("b"),
          `01${i64(2)}`,
          "03",
          u("c"),
          `01${i64(3)}`,
        ),
        "1956fbf23e86b88ceacd0e237e872f7f202d3539337ddf88924d6f4a5c931033",
      ],
      [
        "set_multiple",
        bytes(
          "00",
          u("test.stability.configset"),
          "03",
          u("items"),
          "05",
          "0e 40 14 00 00 00 00 00 00",
          ...[5, 4, 2, 3, 1].map((n) => `01${i64(n)}`),
        ),
        "836dcd8f7c34e680a695c69e181c8f2963eba2a3b663e20a9a3186841a18ba23",
      ],
      [
        "nested_simple",
        bytes("00", u("test.stability.confignested"), "03", u("inner"), "05", "00 faf0eb824e2d67c0be8ad31a55ee63a400f17d1b4f4af1cd1f42cbd63caddc6e"),
        "d958cded439ee491aaa93ac5f718533c25b6f5f24909fd8a63b619a59401cb71",
      ],
      [
        "field_default_implicit",
        bytes("00", u("test.stability.configfielddefault"), "03", u("a"), "05", `01${i64(10)}`, "03", u("b"), "05", `01${i64(5)}`),
        "36a5c46f7071e7f852d5ec1a1bd54c12fa4663919189ea7dd75899957f7d3fe1",
      ],
      [
        "field_default_ignore_implicit",
        bytes("00", u("test.stability.configfielddefaultignore"), "03", u("b"), "05", `01${i64(5)}`),
        "8ff53d47b42366b2075a35229242d5f658a4289f82c80b09c017f053ac4fbd07",
      ],
      [
        "task_with_init",
        bytes(
          "00",
          u("test.stability.simpletask"),
          "03",
          u("x"),
          "05",
          `01${i64(20)}`,
          "0c",
          "00 b5933858643b1b33a00349036129f0a6efd86191d1bbdff9d2fcf195ab49d107",
        ),
        "9e3a48dc47f547de847a587318606b70c5eead9a5a34590bc5a2eb07a972a873",
      ],
      [
        "cycle_simple",
        bytes("00", u("test.stability.cyclea"), "03", u("b"), "05", "00 9df52d05a2641868a60e19236b548677427a4286549643a07fd9901de5397c6d"),
        "bd89e333566e9f7404e25b21eed23dd631735f029107db17054e7e2b781b2291",
      ],
      [
        "instance_separate",
        bytes(
          "00",
          u("test.stability.modelcontainer"),
          "03",
          u("m1"),
          "05",
          "00 f1a2183fc4d2c343f1c4f000f023c42ff416049d0b0d434df623cdb0e0cd8ae9",
          "03",
          u("m2"),
          "05",
          "00 f1a2183fc4d2c343f1c4f000f023c42ff416049d0b0d434df623cdb0e0cd8ae9",
          "0d 00 00 00 00 00 00 00 01",
        ),
        "9e10fcaed7e2bb375c5140e43faf5a8460978c321b8c305bfd46b11a1feb7e91",
      ],
    ];

    it.each(examples)("%s", (name, expectedBytes, digest) => {
      const c = getCase(name);
      expect(record(c.root)).toBe(expectedBytes);
      expect(sha(expectedBytes)).toBe(digest);
      expect(identifierHex(c.root)).toBe(digest);
    });

    it("nested_simple: the inner record", () => {
      const inner = getCase("nested_simple").root.values.get("inner");
      if (inner?.kind !== "config") throw new Error("inner is not a config");
      const expected = bytes("00", u("test.stability.configint"), "03", u("x"), "05", `01${i64(100)}`);
      expect(record(inner.node)).toBe(expected);
      expect(identifierHex(inner.node)).toBe("faf0eb824e2d67c0be8ad31a55ee63a400f17d1b4f4af1cd1f42cbd63caddc6e");
    });

    it("cycle_simple: B alone hashes differently than inside A's computation", () => {
      const b = getCase("cycle_simple").objects.get("o2");
      if (!b) throw new Error("no o2");
      expect(identifierHex(b)).not.toBe("9df52d05a2641868a60e19236b548677427a4286549643a07fd9901de5397c6d");
    });

    it("instance_shared: no suffix", () => {
      expect(identifierHex(getCase("instance_shared").root)).toBe("ded6831ddd8b82ece91a74985921c6964bee24c194168e06c5a8c86b82718f9e");
    });

    it("10.15: a marked task output", () => {
      const Emit = type("example.Emit", [arg("n")], { kind: "task" });
      const task = node(Emit, { n: int(1) }, { submitted: true });
      expect(record(task)).toBe(bytes("00", u("example.emit"), "03", u("n"), "05", `01${i64(1)}`));
      expect(identifierHex(task)).toBe("cf71a586807596f4a8daf769e9f01b388537fb5737cb825ef2e706595e41fd93");
      const output = node(ConfigInt, { x: int(1) }, { producer: task });
      expect(record(output)).toBe(
        bytes(
          "00 08 00 cf71a586807596f4a8daf769e9f01b388537fb5737cb825ef2e706595e41fd93",
          u("test.stability.configint"),
          "03",
          u("x"),
          "05",
          `01${i64(1)}`,
        ),
      );
      expect(identifierHex(output)).toBe("7f322b5f326f70a70542fcd5ab5aff7077d9de652bc1a30356b5e1ea42495c24");
      expect(identifierHex(node(ConfigInt, { x: int(1) }))).not.toBe(identifierHex(output));
    });

    it("10.16: FabricConfiguration and a factory default that is a configuration", () => {
      const meta = (name: string, valueType: ValueType, def: TypedValue): ArgumentDecl =>
        arg(name, valueType, { annotation: "meta", ignored: true, required: false, default: def, ignoreDefault: true });
      const Fabric = type("xpm_torch.configuration.FabricConfiguration", [
        arg("precision", STR, { required: false, default: str("32-true"), ignoreDefault: true }),
        arg("torch_fp32_precision", { kind: "optional", inner: STR }, { required: false }),
        meta("num_nodes", INT, int(1)),
        meta("devices", STR, str("auto")),
        meta("strategy", STR, str("auto")),
        meta("accelerator", STR, str("auto")),
      ]);
      const fabric = node(Fabric);
      expect(record(fabric)).toBe(bytes("00", u("xpm_torch.configuration.fabricconfiguration")));
      expect(identifierHex(fabric)).toBe("4e7957a6b4af557f11d6ae6c79a6102b4b3175129410501e9a195fab1ef0d8bd");
      expect(identifierHex(node(Fabric, { num_nodes: int(4), precision: str("32-true") }))).toBe(identifierHex(fabric));

      const Learner = type("demo.Learner", [
        arg("fabric_config", { kind: "config", typeId: Fabric.id }, { required: false, default: cfg(fabric), generator: "factory" }),
      ]);
      const learner = node(Learner);
      expect(record(learner)).toBe(
        bytes("00", u("demo.learner"), "03", u("fabric_config"), "05", "00 4e7957a6b4af557f11d6ae6c79a6102b4b3175129410501e9a195fab1ef0d8bd"),
      );
    });
  });
});

describe("encoding", () => {
  it("orders argument names by code point, not UTF-16 unit", () => {
    const names = ["\u{1F600}", "b", "\uFFFD", "a", "B"];
    const T = type("t.Names", names.map((name) => arg(name)));
    const n = node(T, Object.fromEntries(names.map((name, i) => [name, int(i)])));
    const ordered = ["B", "a", "b", "\uFFFD", "\u{1F600}"];
    expect(record(n)).toBe(
      bytes("00", u("t.names"), ...ordered.map((name) => bytes("03", u(name), "05", `01${i64(names.indexOf(name))}`))),
    );
  });

  it("orders dict string keys by code point and int keys numerically", () => {
    const T = type("t.Dict", [arg("d", { kind: "dict", key: STR, value: INT })]);
    const keys = ["\u{1F600}", "\uFFFD", "a", "B"];
    const n = node(T, { d: dict(...keys.map((k, i): [TypedValue, TypedValue] => [str(k), int(i)])) });
    const ordered = ["B", "a", "\uFFFD", "\u{1F600}"];
    expect(record(n)).toBe(
      bytes("00", u("t.dict"), "03", u("d"), "05", "09", ...ordered.map((k) => bytes("03", u(k), `01${i64(keys.indexOf(k))}`))),
    );

    const I = type("t.IntDict", [arg("d", { kind: "dict", key: INT, value: INT })]);
    const m = node(I, { d: dict([int(10), int(0)], [int(2), int(1)], [int(-1), int(2)]) });
    expect(record(m)).toBe(
      bytes("00", u("t.intdict"), "03", u("d"), "05", "09", `01${i64(-1)}01${i64(2)}`, `01${i64(2)}01${i64(1)}`, `01${i64(10)}01${i64(0)}`),
    );
  });

  it("compareCodePoints", () => {
    expect(compareCodePoints("B", "a")).toBeLessThan(0);
    expect(compareCodePoints("\uFFFD", "\u{1F600}")).toBeLessThan(0);
    expect(compareCodePoints("\u{1F600}", "\uE000")).toBeGreaterThan(0);
    expect(compareCodePoints("\uD7FF", "\u{10000}")).toBeLessThan(0);
    expect(compareCodePoints("ab", "a")).toBeGreaterThan(0);
    expect(compareCodePoints("x", "x")).toBe(0);
  });

  it("rejects a dict mixing str and int keys", () => {
    const T = type("t.Mixed", [arg("d", { kind: "dict", key: { kind: "any" }, value: INT })]);
    expect(() => identifier(node(T, { d: dict([str("a"), int(1)], [int(1), int(2)]) }))).toThrow(/cannot mix str and numeric keys/);
  });

  it("checks the signed 64-bit range of ints", () => {
    const max = 2n ** 63n - 1n;
    const min = -(2n ** 63n);
    expect(record(node(ConfigInt, { x: int(max) }))).toContain(`01${"7fffffffffffffff"}`);
    expect(record(node(ConfigInt, { x: int(min) }))).toContain(`01${"8000000000000000"}`);
    expect(() => identifier(node(ConfigInt, { x: int(max + 1n) }))).toThrow(IdentifierError);
    expect(() => identifier(node(ConfigInt, { x: int(min - 1n) }))).toThrow(/configInt: argument "x": integer -9223372036854775809 is outside the signed 64-bit range/);
  });

  it("encodes floats bit for bit, integral and negative zero included", () => {
    const F = type("t.F", [arg("f", { kind: "float" })]);
    expect(record(node(F, { f: float(1) }))).toBe(bytes("00", u("t.f"), "03", u("f"), "05", `02${f64(1)}`));
    expect(record(node(F, { f: float(-0) }))).toBe(bytes("00", u("t.f"), "03", u("f"), "05", "02 80 00 00 00 00 00 00 00"));
    expect(record(node(F, { f: float(Number.NaN) }))).toBe(bytes("00", u("t.f"), "03", u("f"), "05", "02 7f f8 00 00 00 00 00 00"));
  });

  it("rejects lone surrogates in strings, dict keys and argument names", () => {
    const S = type("t.S", [arg("s", STR)]);
    expect(() => identifier(node(S, { s: str("a\uD800b") }))).toThrow(/argument "s": a string contains a lone surrogate/);
    expect(() => identifier(node(S, { s: str("\uDC00") }))).toThrow(IdentifierError);
    expect(record(node(S, { s: str("\u{1F600}") }))).toBe(bytes("00", u("t.s"), "03", u("s"), "05", "03 f0 9f 98 80"));
    const D = type("t.D", [arg("d", { kind: "dict", key: STR, value: INT })]);
    expect(() => identifier(node(D, { d: dict([str("\uD83D"), int(1)]) }))).toThrow(/lone surrogate/);
    const N = type("t.N", [arg("x\uD800")]);
    expect(() => identifier(node(N, { "x\uD800": int(1) }))).toThrow(/argument name contains a lone surrogate/);
  });

  it("orders set elements by SHA-256 of their independent encodings and ignores the given order", () => {
    const S = type("t.Set", [arg("s", { kind: "set", item: INT })]);
    const keyOf = (n: number) => sha(`01${i64(n)}`);
    const values = [3, 1, 4, 5, 2];
    const sorted = [...values].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));
    expect(sorted).toEqual([5, 4, 2, 3, 1]);
    const expected = bytes("00", u("t.set"), "03", u("s"), "05", `0e${f64(5)}`, ...sorted.map((n) => `01${i64(n)}`));
    expect(record(node(S, { s: set(...values.map(int)) }))).toBe(expected);
    expect(record(node(S, { s: set(...[...values].reverse().map(int)) }))).toBe(expected);
    // Elements with the same encoding are one element.
    expect(record(node(S, { s: set(...values.map(int), int(3)) }))).toBe(expected);
  });

  it("orders sets of configurations by SHA-256(00 ‖ identifier)", () => {
    const S = type("t.ConfigSet", [arg("s", { kind: "set", item: { kind: "config", typeId: ConfigInt.id } })]);
    const elements = [1, 2, 3, 7].map((x) => node(ConfigInt, { x: int(x) }));
    const encoded = elements.map((e) => `00${identifierHex(e)}`).sort((a, b) => (sha(a) < sha(b) ? -1 : 1));
    const expected = bytes("00", u("t.configset"), "03", u("s"), "05", `0e${f64(4)}`, ...encoded);
    expect(record(node(S, { s: set(...elements.map(cfg)) }))).toBe(expected);
    expect(record(node(S, { s: set(...[...elements].reverse().map(cfg)) }))).toBe(expected);
  });

  it("removes meta-marked configurations from lists, sets, dicts and argument values", () => {
    const L = type("t.L", [arg("l", { kind: "list", item: { kind: "config", typeId: ConfigInt.id } })]);
    const kept = node(ConfigInt, { x: int(2) });
    const dropped = node(ConfigInt, { x: int(1) }, { meta: true });
    expect(record(node(L, { l: list(cfg(dropped), cfg(kept)) }))).toBe(record(node(L, { l: list(cfg(kept)) })));
    expect(record(node(L, { l: list(cfg(dropped), cfg(kept)) }))).toBe(
      bytes("00", u("t.l"), "03", u("l"), "05", `07${f64(1)}`, `00${identifierHex(kept)}`),
    );

    const S = type("t.S", [arg("s", { kind: "set", item: { kind: "config", typeId: ConfigInt.id } })]);
    expect(record(node(S, { s: set(cfg(kept), cfg(dropped)) }))).toBe(record(node(S, { s: set(cfg(kept)) })));

    const D = type("t.D", [arg("d", { kind: "dict", key: STR, value: { kind: "config", typeId: ConfigInt.id } })]);
    expect(record(node(D, { d: dict([str("a"), cfg(dropped)], [str("b"), cfg(kept)]) }))).toBe(
      bytes("00", u("t.d"), "03", u("d"), "05", "09 03", u("b"), `00${identifierHex(kept)}`),
    );

    const A = type("t.A", [arg("c", { kind: "config", typeId: ConfigInt.id }), arg("y")]);
    expect(record(node(A, { c: cfg(dropped), y: int(1) }))).toBe(bytes("00", u("t.a"), "03", u("y"), "05", `01${i64(1)}`));
  });

  it("hashes a configuration marked meta=false in an ignored argument, only directly", () => {
    const M = type("t.M", [
      arg("c", { kind: "config", typeId: ConfigInt.id }, { annotation: "meta", ignored: true, required: false }),
      arg("l", { kind: "list", item: { kind: "config", typeId: ConfigInt.id } }, { annotation: "meta", ignored: true, required: false }),
    ]);
    const forced = node(ConfigInt, { x: int(3) }, { meta: false });
    expect(record(node(M, { c: cfg(forced), l: list(cfg(forced)) }))).toBe(
      bytes("00", u("t.m"), "03", u("c"), "05", `00${identifierHex(forced)}`),
    );
    expect(record(node(M, { c: cfg(node(ConfigInt, { x: int(3) })) }))).toBe(bytes("00", u("t.m")));
  });

  it("treats none according to the declaration", () => {
    const T = type("t.None", [
      arg("withDefault", INT, { required: false, default: int(3) }),
      arg("optional", { kind: "optional", inner: INT }, { required: false }),
      arg("factory", INT, { required: false, default: int(10), generator: "factory" }),
    ]);
    expect(record(node(T, { withDefault: none(), optional: none(), factory: none() }))).toBe(
      bytes("00", u("t.none"), "03", u("factory"), "05", `01${i64(10)}`, "03", u("withDefault"), "05", "06"),
    );
  });

  it("skips ignoreDefault arguments equal to the default across numeric kinds and meta-marked elements", () => {
    const T = type("t.Ignore", [
      arg("f", { kind: "float" }, { required: false, default: float(1), ignoreDefault: true }),
      arg("l", { kind: "list", item: { kind: "config", typeId: ConfigInt.id } }, { required: false, default: list(), ignoreDefault: true }),
    ]);
    const metaConfig = node(ConfigInt, { x: int(1) }, { meta: true });
    expect(record(node(T, { f: float(1), l: list(cfg(metaConfig)) }))).toBe(bytes("00", u("t.ignore")));
    expect(record(node(T, { f: float(1.5) }))).toBe(bytes("00", u("t.ignore"), "03", u("f"), "05", `02${f64(1.5)}`));
  });

  it("hashes constants even when equal to their default", () => {
    const T = type("t.Const", [arg("c", INT, { annotation: "constant", constant: true, required: false, default: int(1), ignoreDefault: true })]);
    expect(record(node(T))).toBe(bytes("00", u("t.const"), "03", u("c"), "05", `01${i64(1)}`));
  });

  it("never hashes ignored paths or path-generated arguments", () => {
    const T = type("t.Paths", [
      arg("logpath", { kind: "path" }, { annotation: "generated-path", ignored: true, required: false, generator: "path" }),
      arg("data", { kind: "path" }, { ignored: true }),
      arg("x"),
    ]);
    expect(record(node(T, { logpath: path("/ws/runs"), data: path("/data"), x: int(1) }))).toBe(
      bytes("00", u("t.paths"), "03", u("x"), "05", `01${i64(1)}`),
    );
  });
});

describe("errors name the argument", () => {
  it("unset required argument of a nested configuration", () => {
    const Sampler = type("t.Sampler", []);
    const Trainer = type("xpm_torch.trainers.LossTrainer", [arg("sampler", { kind: "config", typeId: Sampler.id })]);
    const Learner = type("xpm_torch.learner.Learner", [arg("trainer", { kind: "config", typeId: Trainer.id })]);
    const learner = node(Learner, { trainer: cfg(node(Trainer)) });
    expect(() => identifier(learner)).toThrow(IdentifierError);
    expect(() => identifier(learner)).toThrow('learner.trainer: unset required argument "sampler"');
    try {
      identifier(learner);
    } catch (error) {
      expect(error).toBeInstanceOf(IdentifierError);
      expect((error as IdentifierError).path).toBe("learner.trainer");
    }
  });

  it("a path that would be hashed", () => {
    const T = type("demo.Learner", [arg("logpath", { kind: "list", item: { kind: "path" } })]);
    expect(() => identifier(node(T, { logpath: list(path("runs")) }))).toThrow('learner: argument "logpath" at [0]: a path cannot be hashed');
    const U = type("demo.Learner", [arg("logpath", { kind: "path" })]);
    expect(() => identifier(node(U, { logpath: path("runs") }))).toThrow('learner: argument "logpath": a path cannot be hashed');
    // An empty list of paths contains no path.
    expect(() => identifier(node(T, { logpath: list() }))).not.toThrow();
  });

  it("nested positions in error paths", () => {
    const T = type("t.Outer", [arg("items", { kind: "list", item: { kind: "config", typeId: ConfigInt.id } })]);
    const bad = createNode(ConfigInt);
    expect(() => identifier(node(T, { items: list(cfg(node(ConfigInt, { x: int(1) })), cfg(bad)) }))).toThrow(
      'outer.items[1]: unset required argument "x"',
    );
  });

  it("unknown argument values", () => {
    expect(() => identifier(node(ConfigInt, { x: int(1), y: int(2) }))).toThrow(/unknown argument "y"/);
  });
});

describe("cycles, instances and caching", () => {
  const A = type("t.A", [arg("b", { kind: "config", typeId: "t.b" })]);
  const B = type("t.B", [arg("a", { kind: "config", typeId: "t.a" })]);

  function cycle(sealed: boolean): [ConfigNode, ConfigNode] {
    const a = createNode(A);
    const b = createNode(B);
    a.values.set("b", cfg(b));
    b.values.set("a", cfg(a));
    a.sealed = sealed;
    b.sealed = sealed;
    return [a, b];
  }

  it("encodes a back-reference as a cycle reference with the stack distance", () => {
    const [a, b] = cycle(false);
    const bInside = sha(bytes("00", u("t.b"), "03", u("a"), "05", `00 0b ${i64(2)}`));
    expect(record(a)).toBe(bytes("00", u("t.a"), "03", u("b"), "05", `00${bInside}`));
    const self = type("t.Self", [arg("me", { kind: "config", typeId: "t.self" })]);
    const s = createNode(self);
    s.values.set("me", cfg(s));
    expect(record(s)).toBe(bytes("00", u("t.self"), "03", u("me"), "05", `00 0b ${i64(1)}`));
    expect(identifierHex(b)).toBe(sha(bytes("00", u("t.b"), "03", u("a"), "05", `00${sha(bytes("00", u("t.a"), "03", u("b"), "05", `00 0b ${i64(2)}`))}`)));
  });

  it("refuses a cycle through a set element (it would restart the independent sort-key computation forever)", () => {
    const E = type("t.E", [arg("p", { kind: "config", typeId: "t.p" })]);
    const P = type("t.P", [arg("s", { kind: "set", item: { kind: "config", typeId: E.id } })]);
    const e = createNode(E);
    const p = createNode(P);
    e.values.set("p", cfg(p));
    p.values.set("s", set(cfg(e)));
    expect(() => identifier(p)).toThrow(/a cycle passes through a set element/);
  });

  it("never caches identifiers computed with loops", () => {
    const [a, b] = cycle(true);
    const idA = identifierHex(a);
    expect(isIdentifierCached(a)).toBe(false);
    expect(isIdentifierCached(b)).toBe(false);
    // B started its own computation: its identifier is not the one seen inside A's.
    const idB = identifierHex(b);
    expect(idB).not.toBe(sha(bytes("00", u("t.b"), "03", u("a"), "05", `00 0b ${i64(2)}`)));
    expect(identifierHex(a)).toBe(idA);
  });

  it("caches sealed identifiers, nested ones included, and only those", () => {
    const inner = node(ConfigInt, { x: int(1) }, { sealed: true });
    const N = type("t.N", [arg("c", { kind: "config", typeId: ConfigInt.id })]);
    const outer = node(N, { c: cfg(inner) }, { sealed: true });
    const before = identifierHex(outer);
    expect(isIdentifierCached(inner)).toBe(true);
    expect(isIdentifierCached(outer)).toBe(true);
    // A sealed node is immutable; changing it anyway shows the cached value is reused.
    inner.values.set("x", int(2));
    expect(identifierHex(inner)).toBe(identifierHex(node(ConfigInt, { x: int(1) })));
    const other = node(N, { c: cfg(inner) });
    expect(identifierHex(other)).toBe(before);

    const unsealed = node(ConfigInt, { x: int(1) });
    identifier(unsealed);
    expect(isIdentifierCached(unsealed)).toBe(false);
    unsealed.values.set("x", int(5));
    expect(identifierHex(unsealed)).toBe(identifierHex(node(ConfigInt, { x: int(5) })));
  });

  it("returns a copy of the cached identifier", () => {
    const sealed = node(ConfigInt, { x: int(9) }, { sealed: true });
    const first = identifier(sealed);
    first.fill(0);
    expect(identifierHex(sealed)).toBe(identifierHex(node(ConfigInt, { x: int(9) })));
  });

  const SubModel = type("t.SubModel", [arg("value", INT, { required: false, default: int(100), ignoreDefault: true })], {
    instance: true,
  });

  it("adds instance suffixes by position among distinct equal objects: [s, t, s]", () => {
    const s = node(SubModel);
    const t = node(SubModel);
    const L = type("t.L", [arg("l", { kind: "list", item: { kind: "config", typeId: SubModel.id } })]);
    const id = sha(bytes("00", u("t.submodel")));
    expect(identifierHex(s)).toBe(id);
    expect(record(node(L, { l: list(cfg(s), cfg(t), cfg(s)) }))).toBe(
      bytes("00", u("t.l"), "03", u("l"), "05", `07${f64(3)}`, `00${id}`, `00${id} 0d ${i64(1)}`, `00${id}`),
    );
    expect(record(node(L, { l: list(cfg(s), cfg(s)) }))).toBe(bytes("00", u("t.l"), "03", u("l"), "05", `07${f64(2)}`, `00${id}`, `00${id}`));
  });

  it("shares the instance table with nested computations", () => {
    const s = node(SubModel);
    const t = node(SubModel);
    const Holder = type("t.Holder", [arg("m", { kind: "config", typeId: SubModel.id })]);
    const P = type("t.P", [arg("a", { kind: "config", typeId: SubModel.id }), arg("h", { kind: "config", typeId: Holder.id })]);
    const holder = node(Holder, { m: cfg(t) });
    const id = sha(bytes("00", u("t.submodel")));
    const holderInside = sha(bytes("00", u("t.holder"), "03", u("m"), "05", `00${id} 0d ${i64(1)}`));
    expect(record(node(P, { a: cfg(s), h: cfg(holder) }))).toBe(
      bytes("00", u("t.p"), "03", u("a"), "05", `00${id}`, "03", u("h"), "05", `00${holderInside}`),
    );
    expect(identifierHex(holder)).toBe(sha(bytes("00", u("t.holder"), "03", u("m"), "05", `00${id}`)));
  });

  it("hashes init tasks in order after the arguments", () => {
    const Init = type("t.Init", [arg("p")], { kind: "lightweight-task" });
    const Task = type("t.Task", [arg("x")], { kind: "task" });
    const i1 = node(Init, { p: int(1) });
    const i2 = node(Init, { p: int(2) });
    const task = node(Task, { x: int(1) }, { submitted: true, initTasks: [i2, i1] });
    expect(record(task)).toBe(
      bytes("00", u("t.task"), "03", u("x"), "05", `01${i64(1)}`, "0c", `00${identifierHex(i2)}`, `00${identifierHex(i1)}`),
    );
    expect(identifierHex(node(Task, { x: int(1) }, { submitted: true }))).toBe(identifierHex(node(Task, { x: int(1) })));
  });
});

describe("defaults", () => {
  it("applies deep copies, none for optional arguments, and leaves required ones unset", () => {
    const Inner = type("t.Inner", [
      arg("v", INT, { required: false, default: int(1) }),
      arg("f", INT, { required: false, default: int(10), generator: "factory" }),
      arg("k", INT, { required: false, default: int(7), constant: true, annotation: "constant" }),
    ]);
    const declared = node(Inner, { v: int(5), f: int(20) }, { meta: true });
    const T = type("t.T", [
      arg("c", { kind: "config", typeId: Inner.id }, { required: false, default: cfg(declared) }),
      arg("l", { kind: "list", item: INT }, { required: false, default: list(int(1)) }),
      arg("o", { kind: "optional", inner: INT }, { required: false }),
      arg("r"),
    ]);
    const a = node(T);
    const b = node(T);
    const copy = a.values.get("c");
    if (copy?.kind !== "config") throw new Error("no copy");
    expect(copy.node).not.toBe(declared);
    expect(copy.node.meta).toBeNull();
    expect(copy.node.values.get("v")).toEqual(int(5));
    expect(copy.node.values.get("f")).toEqual(int(10)); // factory arguments get their own default
    expect(copy.node.values.get("k")).toEqual(int(7));
    expect(a.values.get("l")).not.toBe(b.values.get("l"));
    expect(a.values.get("l")).toEqual(list(int(1)));
    expect(a.values.get("o")).toEqual(none());
    expect(a.values.has("r")).toBe(false);
    const bc = b.values.get("c");
    expect(bc?.kind === "config" && bc.node).not.toBe(copy.node);
  });

  it("keeps objects shared inside a default shared in the copy", () => {
    const s = node(ConfigInt, { x: int(1) });
    const T = type("t.Shared", [arg("l", { kind: "list", item: { kind: "config", typeId: ConfigInt.id } }, { required: false, default: list(cfg(s), cfg(s)) })]);
    const copied = node(T).values.get("l");
    if (copied?.kind !== "list") throw new Error("no list");
    const [first, second] = copied.items;
    expect(first?.kind === "config" && second?.kind === "config" && first.node === second.node).toBe(true);
    expect(first?.kind === "config" && first.node !== s).toBe(true);
  });
});

describe("valuesEqual (§5.4)", () => {
  it("compares numbers across kinds exactly", () => {
    expect(valuesEqual(int(1), float(1))).toBe(true);
    expect(valuesEqual(int(1), bool(true))).toBe(true);
    expect(valuesEqual(float(0), bool(false))).toBe(true);
    expect(valuesEqual(int(2n ** 53n + 1n), float(2 ** 53))).toBe(false);
    expect(valuesEqual(float(Number.NaN), float(Number.NaN))).toBe(false);
    expect(valuesEqual(int(1), str("1"))).toBe(false);
    expect(valuesEqual(none(), none())).toBe(true);
  });

  it("compares containers", () => {
    expect(valuesEqual(list(int(1), int(2)), list(float(1), int(2)))).toBe(true);
    expect(valuesEqual(list(int(1), int(2)), list(int(2), int(1)))).toBe(false);
    expect(valuesEqual(set(int(1), int(2)), set(int(2), int(1)))).toBe(true);
    expect(valuesEqual(dict([str("a"), int(1)], [str("b"), int(2)]), dict([str("b"), int(2)], [str("a"), int(1)]))).toBe(true);
    expect(valuesEqual(dict([str("a"), int(1)]), dict([str("a"), int(1)], [str("b"), int(2)]))).toBe(false);
    expect(valuesEqual(list(), set())).toBe(false);
  });

  it("compares configurations by every value, Meta arguments included, or by identifier when sealed", () => {
    const T = type("t.WithMeta", [arg("x"), arg("m", INT, { annotation: "meta", ignored: true, required: false, default: int(0), ignoreDefault: true })]);
    const a = node(T, { x: int(1), m: int(1) });
    const b = node(T, { x: int(1), m: int(2) });
    expect(valuesEqual(cfg(a), cfg(b))).toBe(false);
    expect(valuesEqual(cfg(a), cfg(node(T, { x: int(1), m: int(1) })))).toBe(true);
    a.sealed = true;
    b.sealed = true;
    expect(valuesEqual(cfg(a), cfg(b))).toBe(true);
    expect(valuesEqual(cfg(node(ConfigInt, { x: int(1) })), cfg(node(type("t.Other", [arg("x")]), { x: int(1) })))).toBe(false);
  });

  it("a configuration default differing only in a Meta argument is hashed", () => {
    const T = type("t.WithMeta", [arg("x"), arg("m", INT, { annotation: "meta", ignored: true, required: false, default: int(0) })]);
    const declared = node(T, { x: int(1) });
    const P = type("t.P", [arg("c", { kind: "config", typeId: T.id }, { required: false, default: cfg(declared), ignoreDefault: true })]);
    expect(record(node(P))).toBe(bytes("00", u("t.p")));
    const changed = node(T, { x: int(1), m: int(3) });
    expect(record(node(P, { c: cfg(changed) }))).toBe(bytes("00", u("t.p"), "03", u("c"), "05", `00${identifierHex(changed)}`));
  });
});

describe("value types", () => {
  it("parses and formats the vectors notation", () => {
    for (const text of ["int", "optional<float>", "list<config<test.stability.configint>>", "dict<str,set<enum<a.B>>>", "any"]) {
      expect(formatValueType(parseValueType(text))).toBe(text);
    }
    expect(parseValueType("dict<str, int>")).toEqual({ kind: "dict", key: STR, value: INT });
    expect(() => parseValueType("list<int")).toThrow(SyntaxError);
    expect(() => parseValueType("tuple<int>")).toThrow(/unknown type "tuple"/);
  });
});

describe("vectors reader and checker", () => {
  const dir = mkdtempSync(join(tmpdir(), "xpm-identity-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const original = JSON.parse(readFileSync(VECTORS, "utf8")) as { schema: string; caseCount: number; cases: { name: string; expected: string }[] };
  const write = (name: string, data: unknown): string => {
    const file = join(dir, name);
    writeFileSync(file, typeof data === "string" ? data : JSON.stringify(data));
    return file;
  };
  const run = (args: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = checkIdentifiers(args, { out: (line) => out.push(line), err: (line) => err.push(line) });
    return { code, out, err };
  };

  it("rejects other schemas and a wrong caseCount", () => {
    expect(() => parseVectors({ ...original, schema: "xpm-identifier-vectors/2" }, "v.json")).toThrow(VectorsFileError);
    expect(() => parseVectors({ ...original, schema: "xpm-identifier-vectors/2" }, "v.json")).toThrow(/v\.json: unsupported schema/);
    expect(() => parseVectors({ ...original, caseCount: 60 }, "v.json")).toThrow(/caseCount is 60 but the file has 61 cases/);
    expect(() => parseVectors({ ...original, cases: [...original.cases, original.cases[0]], caseCount: 62 }, "v.json")).toThrow(/duplicate case name/);
  });

  it("the checker passes every case", () => {
    const { code, out, err } = run([VECTORS]);
    expect(out).toEqual(["61 passed, 0 failed"]);
    expect(err).toEqual([]);
    expect(code).toBe(0);
  });

  it("the checker lists failing cases and exits 1", () => {
    const cases = original.cases.map((c, i) => (i === 0 ? { ...c, expected: "0".repeat(64) } : c));
    const { code, out } = run([write("failing.json", { ...original, cases })]);
    expect(out).toHaveLength(2);
    expect(out[0]).toBe(
      `FAIL ${original.cases[0]?.name}: expected ${"0".repeat(64)}, got ${original.cases[0]?.expected}`,
    );
    expect(out[1]).toBe("60 passed, 1 failed");
    expect(code).toBe(1);
  });

  it("the checker exits 2 naming an unreadable or invalid file", () => {
    const missing = join(dir, "missing.json");
    expect(run([missing])).toMatchObject({ code: 2, err: [expect.stringContaining(missing)] });
    const garbage = write("garbage.json", "{not json");
    expect(run([garbage])).toMatchObject({ code: 2, err: [expect.stringContaining(garbage)] });
    const wrong = write("wrong.json", { ...original, schema: "other" });
    expect(run([wrong])).toMatchObject({ code: 2, err: [expect.stringContaining(`${wrong}: unsupported schema "other"`)] });
    expect(run([]).code).toBe(2);
  });
});
