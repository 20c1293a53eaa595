// Where `xpm-torch learn` places a `.C()` call's ConfigError in the module's text: the offending
// key's line and column, and the path from the outermost `.C(` literally around the call.
import { describe, expect, it } from "vitest";

import { placeInSource } from "../ts/cli/config-source.js";

/** The 1-based line and column of the `n`-th (0-based) occurrence of `needle` in `text`. */
function where(text: string, needle: string, n = 0): { line: number; column: number } {
  let at = -1;
  for (let i = 0; i <= n; i++) at = text.indexOf(needle, at + 1);
  if (at < 0) throw new Error(`${needle} is not in the text`);
  const before = text.slice(0, at).split("\n");
  return { line: before.length, column: before[before.length - 1]!.length + 1 };
}

/** The `C` of the `n`-th `NAME.C(` of the text, as a stack frame names the call. */
const call = (text: string, name: string, n = 0) => {
  const p = where(text, `${name}.C(`, n);
  return { line: p.line, column: p.column + name.length + 1 };
};

const MODULE = `import { Learner, LossTrainer, HingeLoss, Random } from "xpm-torch";
// A comment with a brace { and a call Fake.C({ margn: 1 }) in it.
const note = "a string with } and Other.C({ margn: 2 })";
const re = /[}{]/g;
const label = \`t \${note.length} {\`;

export default Learner.C({
  random: Random.C({ seed: 0 }),
  trainer: LossTrainer.C({
    batch_size: 8,
    hooks: [
      HingeLoss.C({ margin: 1 }),
      HingeLoss.C({
        margn: 1,
      }) as never,
    ],
  }),
  max_epoch: 4,
});
`;

describe("placing a ConfigError in the module's text", () => {
  it("points at the key, with the path from the outermost .C(", () => {
    expect(placeInSource(MODULE, call(MODULE, "HingeLoss", 1), "hingeLoss.margn")).toEqual({
      ...where(MODULE, "margn: 1,"),
      path: "learner.trainer.hooks[1].margn",
    });
    expect(placeInSource(MODULE, call(MODULE, "Learner"), "learner.max_epoch")).toEqual({ ...where(MODULE, "max_epoch:"), path: "learner.max_epoch" });
    expect(placeInSource(MODULE, call(MODULE, "Random"), "random.sed")).toEqual({ ...call(MODULE, "Random"), path: "learner.random.sed" });
  });

  it("tells calls of one line apart by the column, else by the key they hold", () => {
    const text = `const t = Trainer.C({ hooks: [Hinge.C({ margin: 1 }), Hinge.C({ margn: 2 })] });\n`;
    expect(placeInSource(text, call(text, "Hinge", 1), "hinge.margn")).toEqual({ ...where(text, "margn"), path: "trainer.hooks[1].margn" });
    expect(placeInSource(text, { line: 1, column: 999 }, "hinge.margn")).toEqual({ ...where(text, "margn"), path: "trainer.hooks[1].margn" });
  });

  it("follows keys and items inside the call's own literal (rules of the class)", () => {
    const text = [
      "const l = Learner.C({",
      "  listeners: [",
      "    first,",
      "    Listener.C({ id: 'x' }),",
      "  ],",
      '  "metrics": { "ndcg@10": true, mrr: 3 },',
      "});",
    ].join("\n");
    const learner = call(text, "Learner");
    expect(placeInSource(text, learner, "learner.listeners[1].id")).toEqual({ ...where(text, "id:"), path: "learner.listeners[1].id" });
    expect(placeInSource(text, learner, "learner.metrics.mrr")).toEqual({ ...where(text, "mrr"), path: "learner.metrics.mrr" });
    // A key the text does not show (from a spread, say): the call's place.
    expect(placeInSource(text, learner, "learner.random")).toEqual({ ...learner, path: "learner.random" });
  });

  it("keeps the error's path where the text does not show where the value goes", () => {
    const text = [
      "const data = (seed: number) => Dataset.C({ seed, num_feature: 8 });",
      "const hooks = [Hinge.C({ margn: 1 })];",
      "const l = Learner.C({ data: wrap(Dataset.C({ sed: 1 })), items: [...more, Hinge.C({ margn: 2 })], x: Hinge.C({ margn: 3 }).y });",
    ].join("\n");
    expect(placeInSource(text, call(text, "Dataset"), "dataset.num_feature")).toEqual({ ...where(text, "num_feature"), path: "dataset.num_feature" });
    expect(placeInSource(text, call(text, "Hinge"), "hinge.margn")).toEqual({ ...where(text, "margn"), path: "hinge.margn" });
    expect(placeInSource(text, call(text, "Dataset", 1), "dataset.sed")).toEqual({ ...where(text, "sed:"), path: "dataset.sed" });
    expect(placeInSource(text, call(text, "Hinge", 1), "hinge.margn")).toEqual({ ...where(text, "margn", 1), path: "hinge.margn" });
    expect(placeInSource(text, call(text, "Hinge", 2), "hinge.margn")).toEqual({ ...where(text, "margn", 2), path: "hinge.margn" });
  });

  it("finds nothing on a line without a .C( call", () => {
    expect(placeInSource(MODULE, { line: 1, column: 1 }, "learner.max_epoch")).toBeUndefined();
    expect(placeInSource(MODULE, where(MODULE, "Fake.C("), "fake.margn")).toBeUndefined();
  });
});
