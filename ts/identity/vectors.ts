/**
 * Reader and runner of identifier test vectors, schema `xpm-identifier-vectors/1`
 * (reference/identifiers.md §1).
 */
import { readFileSync } from "node:fs";

import { z } from "zod";

import { applyDefaults } from "./defaults.js";
import { identifierHex } from "./hash.js";
import { createNode, parseValueType, type ArgumentDecl, type ConfigNode, type TypeDecl, type TypedValue } from "./values.js";

export const VECTORS_SCHEMA = "xpm-identifier-vectors/1";

/** The file cannot be read or does not follow the schema; the message names the file. */
export class VectorsFileError extends Error {
  readonly file: string;

  constructor(file: string, message: string) {
    super(`${file}: ${message}`);
    this.name = "VectorsFileError";
    this.file = file;
  }
}

/** One case, ready to run: its value graph is built and defaults are applied. */
export interface VectorCase {
  name: string;
  description: string;
  expected: string;
  root: ConfigNode;
  /** Every object of the case by id. */
  objects: ReadonlyMap<string, ConfigNode>;
}

export interface CaseResult {
  name: string;
  expected: string;
  /** The computed identifier, `null` when computing it failed. */
  actual: string | null;
  /** Why computing the identifier failed, `null` when it succeeded. */
  error: string | null;
  passed: boolean;
}

export interface VectorsReport {
  results: CaseResult[];
  passed: number;
  failed: number;
}

type RawValue =
  | { kind: "int"; value: string }
  | { kind: "float"; value?: number | null | undefined; bits: string }
  | { kind: "bool"; value: boolean }
  | { kind: "str"; value: string }
  | { kind: "none" }
  | { kind: "path"; value: string }
  | { kind: "enum"; enum: string; member: string }
  | { kind: "list"; items: RawValue[] }
  | { kind: "set"; items: RawValue[] }
  | { kind: "dict"; entries: { key: RawValue; value: RawValue }[] }
  | { kind: "config"; ref: string };

const rawValue: z.ZodType<RawValue> = z.lazy(() =>
  z.discriminatedUnion("kind", [
    z.object({ kind: z.literal("int"), value: z.string().regex(/^-?[0-9]+$/, "an int value is a decimal string") }),
    z.object({
      kind: z.literal("float"),
      value: z.number().nullable().optional(),
      bits: z.string().regex(/^[0-9a-fA-F]{16}$/, "float bits are 16 hex digits"),
    }),
    z.object({ kind: z.literal("bool"), value: z.boolean() }),
    z.object({ kind: z.literal("str"), value: z.string() }),
    z.object({ kind: z.literal("none") }),
    z.object({ kind: z.literal("path"), value: z.string() }),
    z.object({ kind: z.literal("enum"), enum: z.string(), member: z.string() }),
    z.object({ kind: z.literal("list"), items: z.array(rawValue) }),
    z.object({ kind: z.literal("set"), items: z.array(rawValue) }),
    z.object({ kind: z.literal("dict"), entries: z.array(z.object({ key: rawValue, value: rawValue })) }),
    z.object({ kind: z.literal("config"), ref: z.string() }),
  ]),
);

const rawArgument = z.object({
  name: z.string(),
  annotation: z.enum(["param", "meta", "constant", "datapath", "generated-path"]),
  valueType: z.string(),
  ignored: z.boolean(),
  required: z.boolean(),
  default: rawValue.nullable(),
  ignoreDefault: z.boolean(),
  generator: z.enum(["path", "factory"]).nullable(),
  constant: z.boolean(),
});

const rawType = z.object({
  declaredId: z.string(),
  kind: z.enum(["config", "task", "lightweight-task"]),
  instance: z.boolean(),
  arguments: z.array(rawArgument),
});

const rawObject = z.object({
  type: z.string(),
  values: z.record(z.string(), rawValue),
  meta: z.boolean().nullable(),
  producer: z.string().nullable(),
  submitted: z.boolean(),
  initTasks: z.array(z.string()),
});

const rawCase = z.object({
  name: z.string().min(1),
  source: z.string().optional(),
  description: z.string().optional(),
  notes: z.string().optional(),
  types: z.record(z.string(), rawType),
  enums: z.record(z.string(), z.object({ members: z.array(z.string()) })).optional(),
  objects: z.record(z.string(), rawObject),
  root: z.string(),
  expected: z.string().regex(/^[0-9a-f]{64}$/, "expected is 64 lowercase hex characters"),
});

const rawFile = z.object({
  schema: z.string(),
  title: z.string().optional(),
  description: z.string().optional(),
  caseCount: z.number().int().nonnegative(),
  cases: z.array(z.unknown()),
});

type RawCase = z.infer<typeof rawCase>;

function zodMessage(error: z.ZodError, prefix: readonly PropertyKey[] = []): string {
  const issue = error.issues[0];
  if (!issue) return "invalid";
  const path = [...prefix, ...issue.path].map((key) => (typeof key === "number" ? `[${key}]` : `.${String(key)}`)).join("");
  return `${path ? `at ${path.replace(/^\./, "")}: ` : ""}${issue.message}`;
}

/** Builds the cases of an already parsed vectors document; `source` names it in errors. */
export function parseVectors(data: unknown, source: string): VectorCase[] {
  const file = rawFile.safeParse(data);
  if (!file.success) throw new VectorsFileError(source, `invalid vectors file ${zodMessage(file.error)}`);
  const { schema, caseCount, cases } = file.data;
  if (schema !== VECTORS_SCHEMA) {
    throw new VectorsFileError(source, `unsupported schema ${JSON.stringify(schema)} (expected ${JSON.stringify(VECTORS_SCHEMA)})`);
  }
  if (caseCount !== cases.length) {
    throw new VectorsFileError(source, `caseCount is ${caseCount} but the file has ${cases.length} cases`);
  }
  const names = new Set<string>();
  return cases.map((data, index) => {
    const parsed = rawCase.safeParse(data);
    if (!parsed.success) throw new VectorsFileError(source, `invalid case ${zodMessage(parsed.error, ["cases", index])}`);
    const raw = parsed.data;
    if (names.has(raw.name)) throw new VectorsFileError(source, `duplicate case name ${JSON.stringify(raw.name)}`);
    names.add(raw.name);
    try {
      return buildCase(raw);
    } catch (error) {
      if (error instanceof CaseError) throw new VectorsFileError(source, `case ${JSON.stringify(raw.name)}: ${error.message}`);
      throw error;
    }
  });
}

/** Reads and builds the cases of a vectors file. Throws `VectorsFileError`. */
export function readVectorsFile(path: string): VectorCase[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new VectorsFileError(path, `cannot read the file (${(error as Error).message})`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new VectorsFileError(path, `not valid JSON (${(error as Error).message})`);
  }
  return parseVectors(data, path);
}

/** Computes the identifier of a case's root and compares it with the expected one. */
export function runCase(vectorCase: VectorCase): CaseResult {
  const { name, expected } = vectorCase;
  try {
    const actual = identifierHex(vectorCase.root);
    return { name, expected, actual, error: null, passed: actual === expected };
  } catch (error) {
    return { name, expected, actual: null, error: error instanceof Error ? error.message : String(error), passed: false };
  }
}

export function runVectors(cases: readonly VectorCase[]): VectorsReport {
  const results = cases.map(runCase);
  const passed = results.filter((result) => result.passed).length;
  return { results, passed, failed: results.length - passed };
}

/** Reads a vectors file and runs every case. Throws `VectorsFileError` for an unusable file. */
export function runVectorsFile(path: string): VectorsReport {
  return runVectors(readVectorsFile(path));
}

/** A structural error inside one case (dangling reference, undeclared argument, ...). */
class CaseError extends Error {}

/** §1.6: create every object, resolve declarations, fill values and marks, apply defaults. */
function buildCase(raw: RawCase): VectorCase {
  const types = new Map<string, TypeDecl>();
  for (const [id, type] of Object.entries(raw.types)) {
    if (id !== type.declaredId.toLowerCase()) {
      throw new CaseError(`type key ${JSON.stringify(id)} is not the lowercased declaredId ${JSON.stringify(type.declaredId)}`);
    }
    types.set(id, { id, declaredId: type.declaredId, kind: type.kind, instance: type.instance, arguments: [] });
  }

  const objects = new Map<string, ConfigNode>();
  for (const [id, object] of Object.entries(raw.objects)) {
    const type = types.get(object.type);
    if (!type) throw new CaseError(`object ${id} has undeclared type ${JSON.stringify(object.type)}`);
    objects.set(id, createNode(type));
  }
  const node = (ref: string, where: string): ConfigNode => {
    const found = objects.get(ref);
    if (!found) throw new CaseError(`${where}: unknown object ${JSON.stringify(ref)}`);
    return found;
  };
  const value = (rawValue: RawValue, where: string): TypedValue => toTypedValue(rawValue, where, node);

  for (const [id, type] of Object.entries(raw.types)) {
    const decl = types.get(id) as TypeDecl;
    decl.arguments = type.arguments.map((argument): ArgumentDecl => {
      const where = `type ${id} argument ${argument.name}`;
      let valueType;
      try {
        valueType = parseValueType(argument.valueType);
      } catch (error) {
        throw new CaseError(`${where}: ${(error as Error).message}`);
      }
      const defaultValue = argument.default === null ? null : value(argument.default, `${where} default`);
      if (defaultValue?.kind === "none") throw new CaseError(`${where}: a default is never none`);
      return { ...argument, valueType, default: defaultValue };
    });
  }

  for (const [id, object] of Object.entries(raw.objects)) {
    const target = node(id, "objects");
    const declared = new Set(target.type.arguments.map((argument) => argument.name));
    for (const [name, rawArg] of Object.entries(object.values)) {
      if (!declared.has(name)) throw new CaseError(`object ${id}: ${name} is not an argument of ${target.type.id}`);
      target.values.set(name, value(rawArg, `object ${id} value ${name}`));
    }
    target.meta = object.meta;
    target.submitted = object.submitted;
    if (object.producer !== null) {
      if (object.submitted) throw new CaseError(`object ${id} is both submitted and the output of ${object.producer}`);
      const producer = node(object.producer, `object ${id} producer`);
      if (!raw.objects[object.producer]?.submitted) throw new CaseError(`object ${id}: producer ${object.producer} is not submitted`);
      target.producer = producer;
    }
    target.initTasks = object.initTasks.map((ref) => node(ref, `object ${id} initTasks`));
  }

  for (const object of objects.values()) applyDefaults(object);

  return {
    name: raw.name,
    description: raw.description ?? "",
    expected: raw.expected,
    root: node(raw.root, "root"),
    objects,
  };
}

function toTypedValue(raw: RawValue, where: string, node: (ref: string, where: string) => ConfigNode): TypedValue {
  const convert = (item: RawValue): TypedValue => toTypedValue(item, where, node);
  switch (raw.kind) {
    case "int":
      return { kind: "int", value: BigInt(raw.value) };
    case "float": {
      const value = Buffer.from(raw.bits, "hex").readDoubleBE(0);
      // `bits` is authoritative; a JSON `value` must agree with it (NaN cannot be written in JSON).
      if (typeof raw.value === "number" && !Object.is(raw.value, value)) {
        throw new CaseError(`${where}: float value ${raw.value} disagrees with bits ${raw.bits}`);
      }
      return { kind: "float", value };
    }
    case "bool":
    case "str":
    case "path":
      return { ...raw };
    case "none":
      return { kind: "none" };
    case "enum":
      return { kind: "enum", enum: raw.enum, member: raw.member };
    case "list":
    case "set":
      return { kind: raw.kind, items: raw.items.map(convert) };
    case "dict":
      return { kind: "dict", entries: raw.entries.map((entry) => ({ key: convert(entry.key), value: convert(entry.value) })) };
    case "config":
      return { kind: "config", node: node(raw.ref, where) };
  }
}
