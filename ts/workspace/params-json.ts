import { readFileSync } from "node:fs";
import { relative } from "node:path";

import { type AnyConfigClass, classById, configClassOf } from "../config/class.js";
import { initTasksOf, markAsOutputOf, producerOf, setInitTasks } from "../config/identifier-marks.js";
import { type GeneratedPaths, identifierOf } from "../config/identifiers.js";
import { sealedSet } from "../config/types.js";
import { ConfigError } from "../errors.js";
import type { ValueType } from "../identity/values.js";

/** The params.json format version written and the highest one read. */
export const PARAMS_VERSION = 3;
const WRITER = "xpm-torch-ts";

// A float kept apart from ints so that it is written with a fractional part (`1.0`), as the
// Python reader expects.
class Float {
  constructor(readonly value: number) {}
}
type Json = null | boolean | number | string | Float | Json[] | { [key: string]: Json };

function render(value: Json): string {
  if (value instanceof Float) {
    const text = JSON.stringify(value.value);
    return /^-?\d+$/.test(text) ? `${text}.0` : text;
  }
  if (Array.isArray(value)) return `[${value.map(render).join(",")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}:${render(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

interface WriteContext {
  readonly ids: Map<object, number>;
  readonly objects: Json[];
  readonly paths: GeneratedPaths | undefined;
  readonly jobDir: string;
  readonly task: object;
  /** The tasks whose outputs the file holds: submitted tasks, written with their own id as `task`. */
  readonly producers: ReadonlySet<object>;
}

function encodeValue(value: unknown, type: ValueType, ctx: WriteContext): Json {
  if (value === undefined || value === null) return null;
  switch (type.kind) {
    case "int":
    case "bool":
    case "str":
      return value as number | boolean | string;
    case "float":
      return new Float(value as number);
    case "path":
      return { type: "path", value: value as string };
    case "optional":
      return encodeValue(value, type.inner, ctx);
    case "list":
      return (value as unknown[]).map((v) => encodeValue(v, type.item, ctx));
    case "set":
      return { type: "set", items: [...(value as Set<unknown>)].map((v) => encodeValue(v, type.item, ctx)) };
    case "dict":
      return Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, encodeValue(v, type.value, ctx)]));
    case "config":
      return { type: "python", value: writeObject(value as object, ctx) };
    default:
      throw new TypeError(`cannot write a value of kind ${type.kind} to params.json`);
  }
}

function writeObject(config: object, ctx: WriteContext): number {
  const known = ctx.ids.get(config);
  if (known !== undefined) return known;
  const cls = configClassOf(config) as AnyConfigClass;
  const record = config as Record<string, unknown>;
  const fields: Record<string, Json> = {};
  for (const [name, { spec }] of Object.entries(cls.params)) {
    if (spec.kind === "generated") {
      const path = ctx.paths?.get(config)?.get(name);
      if (path !== undefined) fields[name] = { type: "path", value: relative(ctx.jobDir, path), base: "job" };
      continue;
    }
    fields[name] = encodeValue(record[name], spec.value.type, ctx);
  }
  // experimaestro writes the producer of a marked output, then the initialisation tasks, before
  // the object itself, and refers to them by id.
  const producer = producerOf(config);
  const producerId = producer ? writeObject(producer, ctx) : undefined;
  const initTasks = initTasksOf(config).map((task) => writeObject(task, ctx));
  const id = ctx.objects.length + 1;
  ctx.ids.set(config, id);
  const dot = cls.typeId.lastIndexOf(".");
  const object: Record<string, Json> = {
    id,
    module: cls.typeId.slice(0, dot),
    type: cls.typeId.slice(dot + 1),
    typename: cls.typeId,
    identifier: identifierOf(config),
  };
  if (initTasks.length > 0) object["init-tasks"] = initTasks;
  if (producerId !== undefined) object.task = producerId;
  else if (config === ctx.task || ctx.producers.has(config)) object.task = id;
  object.fields = fields;
  ctx.objects.push(object);
  return id;
}

/** The producers of every marked output reachable from `task`. */
function producersIn(task: object): Set<object> {
  const found = new Set<object>();
  const seen = new Set<object>();
  const visit = (value: unknown): void => {
    if (typeof value !== "object" || value === null || seen.has(value)) return;
    seen.add(value);
    const producer = configClassOf(value) ? producerOf(value) : undefined;
    if (producer) {
      found.add(producer);
      visit(producer);
    }
    if (configClassOf(value)) initTasksOf(value).forEach(visit);
    Object.values(value instanceof Set ? [...value] : value).forEach(visit);
  };
  visit(task);
  return found;
}

/** The params.json of a task (identifiers.md §12): every configuration once, dependencies first. */
export function writeParamsJson(task: object, options: { workspace: string; jobDir: string; paths?: GeneratedPaths }): string {
  const ctx: WriteContext = { ids: new Map(), objects: [], paths: options.paths, jobDir: options.jobDir, task, producers: producersIn(task) };
  writeObject(task, ctx);
  return render({
    workspace: options.workspace,
    version: PARAMS_VERSION,
    experimaestro: WRITER,
    objects: ctx.objects,
    carbon: { enabled: false },
  });
}

type RawObject = { id: number; typename?: string; module: string; type: string; fields: Record<string, unknown>; task?: unknown; "init-tasks"?: unknown };

function decodeValue(raw: unknown, type: ValueType, objects: Map<number, object>, where: string): unknown {
  if (raw === null) return undefined;
  const tagged = typeof raw === "object" && !Array.isArray(raw) ? (raw as { type?: unknown; value?: unknown; items?: unknown }) : undefined;
  switch (type.kind) {
    case "optional":
      return decodeValue(raw, type.inner, objects, where);
    case "list":
      if (!Array.isArray(raw)) throw new ConfigError(where, "expected a list");
      return raw.map((v, i) => decodeValue(v, type.item, objects, `${where}[${i}]`));
    case "set":
      if (tagged?.type !== "set" || !Array.isArray(tagged.items)) throw new ConfigError(where, "expected a set");
      return sealedSet(...tagged.items.map((v, i) => decodeValue(v, type.item, objects, `${where}[${i}]`)));
    case "dict":
      if (!tagged) throw new ConfigError(where, "expected a dict");
      return Object.fromEntries(Object.entries(raw as object).map(([k, v]) => [k, decodeValue(v, type.value, objects, `${where}.${k}`)]));
    case "config": {
      const ref = tagged?.type === "python" ? objects.get(tagged.value as number) : undefined;
      if (!ref) throw new ConfigError(where, "refers to an object that is not defined before it");
      return ref;
    }
    case "path":
      return tagged?.type === "path" ? tagged.value : raw;
    default:
      return raw;
  }
}

/**
 * Rebuilds the task of a params.json (the last object), running each class's validation.
 * @throws ConfigError naming the file's object and field on anything it cannot read.
 */
export function readParamsJson(text: string, file = "params.json"): object {
  const doc = JSON.parse(text) as { version?: unknown; objects?: unknown };
  if (typeof doc.version !== "number" || doc.version > PARAMS_VERSION) {
    throw new ConfigError(file, `params.json version ${String(doc.version)} is not supported (at most ${PARAMS_VERSION})`);
  }
  if (!Array.isArray(doc.objects) || doc.objects.length === 0) throw new ConfigError(file, "has no objects");
  const built = new Map<number, object>();
  let last: object | undefined;
  for (const raw of doc.objects as RawObject[]) {
    const typename = raw.typename ?? `${raw.module}.${raw.type}`;
    const cls = classById(typename) as (AnyConfigClass & { C(v: object): object }) | undefined;
    const where = `${file}: object ${raw.id} (${typename})`;
    if (!cls) throw new ConfigError(where, "unknown configuration type");
    const values: Record<string, unknown> = {};
    for (const [name, { spec }] of Object.entries(cls.params)) {
      if (spec.kind === "generated" || spec.kind === "constant" || !(name in raw.fields)) continue;
      const value = decodeValue(raw.fields[name], spec.value.type, built, `${where}.${name}`);
      if (value !== undefined) values[name] = value;
    }
    last = cls.C(values);
    built.set(raw.id, last);
    if (raw.task !== undefined && raw.task !== raw.id) {
      const producer = built.get(raw.task as number);
      if (!producer) throw new ConfigError(`${where}.task`, `refers to object ${String(raw.task)}, which is not defined before it`);
      markAsOutputOf(last, producer);
    }
    const initTasks = raw["init-tasks"] ?? [];
    if (!Array.isArray(initTasks)) throw new ConfigError(`${where}.init-tasks`, "expected a list of object ids");
    if (initTasks.length > 0) {
      setInitTasks(
        last,
        initTasks.map((ref, i) => {
          const task = built.get(ref as number);
          if (!task) throw new ConfigError(`${where}.init-tasks[${i}]`, `refers to object ${String(ref)}, which is not defined before it`);
          return task;
        }),
      );
    }
  }
  return last as object;
}

/**
 * The identifier of the task a params.json file describes, as a job process reads it back.
 * @throws ConfigError (or an I/O error) when the file cannot be read as a task.
 */
export function paramsIdentifier(file: string): string {
  return identifierOf(readParamsJson(readFileSync(file, "utf8"), file));
}
