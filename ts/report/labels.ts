// What a report calls each logged scalar, and how wide its labels are drawn.

/** The losses of the core by the name they log under (crates/core/src/losses). */
const LOSSES: Readonly<Record<string, string>> = {
  "pair-hinge": "pairwise hinge",
  "pair-cross-entropy": "pairwise cross-entropy",
  "pair-pointwise-cross-entropy": "pointwise cross-entropy",
  "list-net": "ListNet",
  "list-mle": "ListMLE",
  "list-ranknet": "RankNet",
  "list-lambdaloss": "LambdaLoss",
  "list-approx-ndcg": "ApproxNDCG",
  "list-neural-ndcg": "NeuralNDCG",
  "batch-bce": "batchwise BCE",
  "batch-infonce": "batchwise InfoNCE",
};

/** The training metrics that are not losses, by their key under `train/` (and a trainer's scope). */
const TRAINING: Readonly<Record<string, string>> = {
  accuracy: "training pairwise accuracy",
  iter_per_seconds: "training speed (steps/s)",
  "data/wait_seconds": "wait for data per step (s)",
  "data/truncated_fraction": "truncated training texts (fraction)",
  "batcher/micro_batches": "micro-batches per step",
  "gradient/scaler": "loss scale (mixed precision)",
};

/** A loss's name for people: `list-net` → `ListNet`, `a+b` → `A + B`; undefined when not a loss. */
function lossTitle(name: string): string | undefined {
  const parts = name.split("+");
  if (!parts.every((p) => p in LOSSES)) return undefined;
  return parts.map((p) => LOSSES[p]!).join(" + ");
}

/** A validation metric's name for people: `ndcg@10` → `NDCG@10`, `pairwise_accuracy` → `pairwise accuracy`. */
function metricTitle(name: string): string {
  const loss = /^loss(?:\/(.+))?$/.exec(name);
  if (loss) return loss[1] === undefined ? "loss" : `loss: ${lossTitle(loss[1]) ?? loss[1]}`;
  if (name === "truncated_fraction") return "truncated texts (fraction)";
  const ranked = /^(mrr|ndcg|map|err|precision|recall)(@\d+)?$/.exec(name);
  if (ranked) {
    const base = { mrr: "MRR", ndcg: "NDCG", map: "MAP", err: "ERR", precision: "P", recall: "Recall" }[ranked[1]!]!;
    return `${base}${ranked[2] ?? ""}`;
  }
  return name.replace(/_/g, " ");
}

const SCHEDULER = /^train\/gradient\/scheduler\/(\d+)\/(\d+)$/;

/**
 * The title of the curve of `tag`, for people. `tags` are every tag of the report: a learning
 * rate is qualified by its optimizer and group only when the run has several.
 *
 * - `train/gradient/scheduler/<o>/<g>` → `learning rate` (`learning rate (optimizer o, group g)`)
 * - `train/<loss>` → `training loss: pairwise hinge`; `train/accuracy`, `train/iter_per_seconds`, ...
 * - `<listener>/<metric>` → `NDCG@10 (heldout)`, `loss: ListNet (val)`
 * - anything else: the tag with `_` as spaces.
 */
export function curveTitle(tag: string, tags: readonly string[] = [tag]): string {
  const lr = SCHEDULER.exec(tag);
  if (lr) {
    const several = tags.filter((t) => SCHEDULER.test(t)).length > 1;
    return several ? `learning rate (optimizer ${lr[1]}, group ${lr[2]})` : "learning rate";
  }
  if (tag.startsWith("train/")) {
    const key = tag.slice("train/".length);
    // A MultipleTrainer logs each trainer's metrics under the trainer's name: try `key` whole,
    // then without its first segments.
    const starts = [0, ...[...key].flatMap((c, i) => (c === "/" ? [i + 1] : []))];
    for (const start of starts) {
      const scope = key.slice(0, Math.max(start - 1, 0));
      const rest = key.slice(start);
      const loss = lossTitle(rest);
      const named = TRAINING[rest] ?? (loss === undefined ? undefined : `training loss: ${loss}`);
      if (named !== undefined) return scope ? `${named} (trainer ${scope})` : named;
    }
    return `training: ${key.replace(/_/g, " ")}`;
  }
  const slash = tag.indexOf("/");
  if (slash > 0 && slash < tag.length - 1) return `${metricTitle(tag.slice(slash + 1))} (${tag.slice(0, slash)})`;
  if (tag === "gradient_norm") return "gradient norm";
  return tag.replace(/_/g, " ");
}

/**
 * Advance widths in em: upper bounds of DejaVu Sans Bold's, as rsvg-convert draws it (a–z 0.34 to
 * 1.04 em, digits 0.70 em, W 1.10 em), a face wider than Arial or Helvetica, and wider than its
 * own regular weight. Any other character counts 1 em.
 */
const NARROW = new Set([..." ijl.,:;'|`"]);
const SLIM = new Set([..."frtI!()[]/\\-"]);
const WIDE = new Set([..."mwMW@%&…"]);

function charWidth(c: string): number {
  if (NARROW.has(c)) return 0.4;
  if (SLIM.has(c)) return 0.56;
  if (WIDE.has(c)) return 1.12;
  if (/[0-9]/.test(c)) return 0.72;
  if (/[a-z]/.test(c)) return 0.74;
  if (/[A-Z]/.test(c)) return 0.86;
  return 1;
}

/** An upper bound of the width of `text` drawn in a sans-serif face at `fontSize` px. */
export function textWidth(text: string, fontSize: number): number {
  let em = 0;
  for (const c of text) em += charWidth(c);
  return em * fontSize;
}

/** `text`, cut with `…` where needed so that `textWidth` of it fits in `width` px. */
export function fitText(text: string, fontSize: number, width: number): string {
  if (textWidth(text, fontSize) <= width) return text;
  const chars = [...text];
  while (chars.length > 0 && textWidth(`${chars.join("")}…`, fontSize) > width) chars.pop();
  return chars.length === 0 ? "" : `${chars.join("").trimEnd()}…`;
}
