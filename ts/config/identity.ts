import { identifierHex } from "../identity/hash.js";
import type { ArgumentDecl, ConfigNode, TypeDecl, TypedValue } from "../identity/values.js";
import { type AnyConfigClass, configClassOf } from "./class.js";
import type { ParamSpec } from "./declare.js";

const declarations = new WeakMap<AnyConfigClass, TypeDecl>();
const metaMarks = new WeakMap<object, boolean>();
const producers = new WeakMap<object, object>();

/**
 * Marks `config` as an output of the task `task` (experimaestro's `dep`): its identifier then
 * depends on the task's.
 */
export function markAsOutputOf<C extends object>(config: C, task: object): C {
  if (!configClassOf(config) || !configClassOf(task)) throw new TypeError("markAsOutputOf() takes configuration objects");
  if (config === task) throw new TypeError("a task cannot be its own output");
  producers.set(config, task);
  return config;
}

/** The task `config` was marked an output of (see {@link markAsOutputOf}), if any. */
export function producerOf(config: object): object | undefined {
  return producers.get(config);
}

const initTaskLists = new WeakMap<object, readonly object[]>();

/**
 * Gives the task `config` initialisation tasks (experimaestro's `init_tasks` of `submit()`):
 * for a Learner, ModuleLoaders whose weights the fresh model takes before training (a trained
 * Learner's output, a checkpoint). They enter the task's identifier as in Python, after its
 * parameters; an empty list removes them. Returns `config`.
 */
export function setInitTasks<C extends object>(config: C, tasks: readonly object[]): C {
  if (!configClassOf(config) || tasks.some((t) => !configClassOf(t))) throw new TypeError("setInitTasks() takes configuration objects");
  if (tasks.includes(config)) throw new TypeError("a task cannot be its own initialisation task");
  initTaskLists.set(config, [...tasks]);
  return config;
}

/** The initialisation tasks given to `config` by {@link setInitTasks}. */
export function initTasksOf(config: object): readonly object[] {
  return initTaskLists.get(config) ?? [];
}

/**
 * Marks a configuration as meta (`true`: left out of every identifier it appears in) or forces
 * it into identifiers where it sits in an ignored parameter (`false`).
 */
export function setMeta<C extends object>(config: C, mark: boolean): C {
  if (!configClassOf(config)) throw new TypeError("setMeta() takes a configuration object");
  metaMarks.set(config, mark);
  return config;
}

function annotationOf(spec: ParamSpec): ArgumentDecl["annotation"] {
  if (spec.kind === "generated") return "generated-path";
  return spec.kind;
}

function isPathType(spec: ParamSpec): boolean {
  const t = spec.value.type;
  return t.kind === "path" || (t.kind === "optional" && t.inner.kind === "path");
}

/** The identifier view of a class (computed once). */
export function typeDeclOf(cls: AnyConfigClass): TypeDecl {
  const cached = declarations.get(cls);
  if (cached) return cached;
  const decl: TypeDecl = {
    id: cls.typeId.toLowerCase(),
    declaredId: cls.typeId,
    kind: cls.options.kind ?? "config",
    instance: cls.options.instance ?? false,
    arguments: [],
  };
  declarations.set(cls, decl);
  for (const [name, { spec }] of Object.entries(cls.params)) {
    const makeDefault = spec.kind === "generated" ? undefined : spec.makeDefault;
    let defaultValue: TypedValue | null = null;
    if (makeDefault) {
      const parsed = spec.value.zod.parse(makeDefault());
      defaultValue = spec.value.toTyped(parsed, (c) => ({ kind: "config", node: nodeOf(c, new Map()) }));
    }
    decl.arguments.push({
      name,
      annotation: annotationOf(spec),
      valueType: spec.value.type,
      ignored: spec.kind === "meta" || spec.kind === "generated" || isPathType(spec),
      required: !makeDefault && !spec.optional,
      default: defaultValue,
      ignoreDefault: spec.ignoreDefault,
      generator: spec.kind === "generated" ? "path" : spec.factory ? "factory" : null,
      constant: spec.kind === "constant",
    });
  }
  return decl;
}

/** Paths generated for configurations once their job exists (see workspace/job.ts). */
export type GeneratedPaths = ReadonlyMap<object, ReadonlyMap<string, string>>;

/**
 * The identifier graph of a configuration tree. Shared objects map to one node, so instance
 * configurations and cycles are seen as such.
 */
export function nodeOf(config: object, memo: Map<object, ConfigNode>, paths?: GeneratedPaths): ConfigNode {
  const existing = memo.get(config);
  if (existing) return existing;
  const cls = configClassOf(config);
  if (!cls) throw new TypeError("not a configuration object");
  const node: ConfigNode = {
    type: typeDeclOf(cls),
    values: new Map(),
    meta: metaMarks.get(config) ?? null,
    producer: null,
    submitted: false,
    initTasks: [],
    sealed: true,
  };
  memo.set(config, node);
  const producer = producers.get(config);
  if (producer) {
    node.producer = nodeOf(producer, memo, paths);
    // A submitted task's mark is itself: it changes nothing in its own identifier.
    node.producer.submitted = true;
  }
  const child = (c: object): TypedValue => ({ kind: "config", node: nodeOf(c, memo, paths) });
  node.initTasks = initTasksOf(config).map((task) => nodeOf(task, memo, paths));
  const record = config as Record<string, unknown>;
  for (const [name, { spec }] of Object.entries(cls.params)) {
    if (spec.kind === "generated") {
      const generatedPath = paths?.get(config)?.get(name);
      if (generatedPath !== undefined) node.values.set(name, { kind: "path", value: generatedPath });
      continue;
    }
    node.values.set(name, spec.value.toTyped(record[name], child));
  }
  return node;
}

/** The experimaestro-compatible identifier of a configuration (64 hex characters). */
export function identifierOf(config: object): string {
  return identifierHex(nodeOf(config, new Map()));
}
