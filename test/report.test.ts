// The report's learning curves: titles for people, and headers whose texts do not overlap.
import { describe, expect, it } from "vitest";

import type { Curve } from "../ts/report/curves.js";
import { curveTitle, fitText, textWidth } from "../ts/report/labels.js";
import { renderCurvesSvg } from "../ts/report/svg.js";

const curve = (tag: string, values: readonly number[]): Curve => ({
  tag,
  points: values.map((value, i) => ({ step: (i + 1) * 100, value })),
});

interface Drawn {
  readonly cls: string | undefined;
  readonly x: number;
  readonly y: number;
  readonly size: number;
  readonly end: boolean;
  readonly text: string;
}

const unescape = (text: string) =>
  text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, "&");

/** Each panel's texts above its plot (its header), tooltip and tag. */
function panels(svg: string) {
  return [...svg.matchAll(/<g class="panel">([\s\S]*?)<\/g>/g)].map(([, body]) => {
    const plotTop = Number(/<rect x="[\d.]+" y="([\d.]+)"/.exec(body!)![1]);
    const texts: Drawn[] = [...body!.matchAll(/<text([^>]*)>([^<]*)<\/text>/g)].map(([, attrs, text]) => {
      const attr = (name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(attrs!)?.[1];
      return {
        cls: attr("class"),
        x: Number(attr("x")),
        y: Number(attr("y")),
        size: Number(attr("font-size")),
        end: attr("text-anchor") === "end",
        text: unescape(text!),
      };
    });
    const header = texts.filter((t) => t.y < plotTop);
    return {
      header,
      plotTop,
      tooltip: unescape(/<title>([^<]*)<\/title>/.exec(body!)?.[1] ?? ""),
      tag: /data-tag="([^"]+)"/.exec(body!)?.[1],
      byClass: (cls: string) => header.find((t) => t.cls === cls),
    };
  });
}

/**
 * The box a text covers as `textWidth` measures it: from its anchor, and from an ascent of one
 * font size above the baseline to a descent of a quarter below.
 */
function box(t: Drawn) {
  const width = textWidth(t.text, t.size);
  const left = t.end ? t.x - width : t.x;
  return { left, right: left + width, top: t.y - t.size, bottom: t.y + t.size / 4 };
}

/** The pairs of a panel's header texts whose boxes meet. */
function overlaps(header: readonly Drawn[]): string[] {
  const boxes = header.map((t) => ({ t, ...box(t) }));
  return boxes.flatMap((a, j) =>
    boxes
      .slice(j + 1)
      .filter((b) => !(a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top))
      .map((b) => `"${a.t.text}" [${a.left.toFixed(1)}, ${a.right.toFixed(1)}] meets "${b.t.text}" [${b.left.toFixed(1)}, ${b.right.toFixed(1)}]`),
  );
}

describe("curve titles", () => {
  it("names the tags the core logs for people", () => {
    const cases: [string, string][] = [
      ["train/gradient/scheduler/1/1", "learning rate"],
      ["train/pair-hinge", "training loss: pairwise hinge"],
      ["train/list-mle+list-net", "training loss: ListMLE + ListNet"],
      ["train/accuracy", "training pairwise accuracy"],
      ["train/iter_per_seconds", "training speed (steps/s)"],
      ["train/data/wait_seconds", "wait for data per step (s)"],
      ["train/gradient/scaler", "loss scale (mixed precision)"],
      ["train/pairs/pair-hinge", "training loss: pairwise hinge (trainer pairs)"],
      ["train/pairs/data/wait_seconds", "wait for data per step (s) (trainer pairs)"],
      ["heldout/ndcg@10", "NDCG@10 (heldout)"],
      ["heldout/mrr@10", "MRR@10 (heldout)"],
      ["heldout/pairwise_accuracy", "pairwise accuracy (heldout)"],
      ["val/loss", "loss (val)"],
      ["val/loss/list-net", "loss: ListNet (val)"],
      ["dev/truncated_fraction", "truncated texts (fraction) (dev)"],
      ["gradient_norm", "gradient norm"],
      ["train/my_metric", "training: my metric"],
    ];
    expect(cases.map(([tag]) => [tag, curveTitle(tag)])).toEqual(cases);
  });

  it("tells learning rates apart by optimizer and group only when there are several", () => {
    const tags = ["train/gradient/scheduler/1/1", "train/gradient/scheduler/2/1"];
    expect(tags.map((t) => curveTitle(t, tags))).toEqual(["learning rate (optimizer 1, group 1)", "learning rate (optimizer 2, group 1)"]);
  });

  it("draws the title in the panel, the logged tag under it and both in the tooltip", () => {
    const svg = renderCurvesSvg([curve("train/gradient/scheduler/1/1", [3e-5, 3e-5]), curve("heldout/ndcg@10", [0.5, 0.6])]);
    const [lr, ndcg] = panels(svg);
    expect(lr!.byClass("title")!.text).toBe("learning rate");
    expect(lr!.byClass("tag")!.text).toBe("train/gradient/scheduler/1/1");
    expect(lr!.byClass("last")!.text).toBe("last 3.00e-5");
    expect(lr!.tooltip).toBe("learning rate (train/gradient/scheduler/1/1)");
    expect(lr!.tag).toBe("train/gradient/scheduler/1/1");
    expect(ndcg!.byClass("title")!.text).toBe("NDCG@10 (heldout)");
  });
});

describe("panel headers", () => {
  it("measures text as an upper bound and cuts it with an ellipsis to fit", () => {
    // As rsvg-convert draws them in DejaVu Sans (the widest common sans-serif face): "learning
    // rate" bold at 13 px is 95 px wide, "last 3.00e-5" at 11 px 65 px, "WWWWmmmm@@%%" bold 163 px.
    expect(textWidth("learning rate", 13)).toBeGreaterThanOrEqual(95);
    expect(textWidth("last 3.00e-5", 11)).toBeGreaterThanOrEqual(65);
    expect(textWidth("WWWWmmmm@@%%", 13)).toBeGreaterThanOrEqual(163);
    const cut = fitText("a title far too long for the room it is given", 13, 120);
    expect(cut.endsWith("…")).toBe(true);
    expect(textWidth(cut, 13)).toBeLessThanOrEqual(120);
    expect(fitText("short", 13, 120)).toBe("short");
  });

  const long = [
    curve("train/gradient/scheduler/1/1", [3e-5, 2.5e-5, 3e-5]),
    curve("train/gradient/scheduler/2/1", [-1.2345e-10, 1e-9]),
    curve("a_validation_listener_with_a_long_name/ndcg@1000", [0.1, 0.123456]),
    curve("train/first-trainer/second/list-approx-ndcg+list-lambdaloss+list-neural-ndcg", [123456.7, 98765.4]),
    curve("train/iter_per_seconds", [1234.5, 1240.25]),
    curve("MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM", [1, 2]),
  ];

  it.each([340, 240])("draws header texts that overlap neither each other nor the plot (panels %i px wide)", (panelWidth) => {
    const panelHeight = 224;
    const svg = renderCurvesSvg(long, { panelWidth, panelHeight, columns: 2 });
    const drawn = panels(svg);
    expect(drawn).toHaveLength(long.length);
    drawn.forEach((panel, i) => {
      const column = i % 2;
      const [left, right] = [column * panelWidth, (column + 1) * panelWidth];
      const panelTop = Math.floor(i / 2) * panelHeight;
      expect(overlaps(panel.header), String(panel.tag)).toEqual([]);
      expect(panel.header.map((t) => t.cls).sort()).toEqual(["last", "tag", "title"]);
      const boxes = panel.header.map((t) => ({ t, ...box(t) }));
      for (const b of boxes) {
        expect(b.left, `${b.t.text} leaves the panel`).toBeGreaterThanOrEqual(left);
        expect(b.right, `${b.t.text} leaves the panel`).toBeLessThanOrEqual(right);
        expect(b.top).toBeGreaterThanOrEqual(panelTop);
        expect(b.bottom, `${b.t.text} reaches the plot`).toBeLessThanOrEqual(panel.plotTop);
      }
      // What was cut stays whole in the tooltip.
      expect(panel.tooltip).toContain(long[i]!.tag);
      expect(panel.tooltip).toContain(panel.byClass("title")!.text.replace(/…$/, ""));
    });
  });

  it("keeps the learning rate's title and its last value apart, as the issue's report did not", () => {
    const [lr] = panels(renderCurvesSvg([curve("train/gradient/scheduler/1/1", [3e-5, 3e-5])]));
    expect(lr!.header.map((t) => t.text)).toEqual(expect.arrayContaining(["last 3.00e-5"]));
    expect(overlaps(lr!.header)).toEqual([]);
  });
});
