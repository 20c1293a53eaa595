// The experimaestro identifier of a configuration object: its class and values, with the marks
// it carries (identifier-marks.ts), as the typed graph that ../identity hashes.
import { identifierHex } from "../identity/hash.js";
import type { ArgumentDecl, ConfigNode, TypeDecl, TypedValue } from "../identity/values.js";
import { type AnyConfigClass, configClassOf } from "./class.js";
import type { ParamSpec } from "./declare.js";
import { initTasksOf, metaMarkOf, producerOf } from "./identifier-marks.js";

const declarations = new WeakMap<AnyConfigClass, TypeDecl>();

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
    meta: metaMarkOf(config),
    producer: null,
    submitted: false,
    initTasks: [],
    sealed: true,
  };
  memo.set(config, node);
  const producer = producerOf(config);
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
