import type { Curve } from "./curves.js";
import { curveTitle, fitText, textWidth } from "./labels.js";

export interface SvgOptions {
  /** Panels per row (default 3). */
  readonly columns?: number;
  readonly panelWidth?: number;
  readonly panelHeight?: number;
  readonly title?: string;
}

const PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2"];

export function escapeXml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);
}

/** A tick label: short, and exact enough to tell close values apart. */
function tick(value: number): string {
  if (value === 0) return "0";
  const magnitude = Math.abs(value);
  return magnitude >= 1e4 || magnitude < 1e-3 ? value.toExponential(2) : String(Number(value.toPrecision(4)));
}

/** The value range drawn, padded so that a flat curve still has height. */
function range(values: readonly number[]): [number, number] {
  const finite = values.filter(Number.isFinite);
  if (finite.length === 0) return [0, 1];
  let lo = Math.min(...finite);
  let hi = Math.max(...finite);
  const pad = hi > lo ? (hi - lo) * 0.05 : Math.abs(lo) * 0.05 || 0.5;
  lo -= pad;
  hi += pad;
  return [lo, hi];
}

/**
 * A panel's header: px sizes of the title (the largest of `titleSizes` at which it fits), the
 * last value and the logged tag; the two lines' baselines below the panel's top; the insets.
 */
const HEADER = {
  titleSizes: [13, 12, 11],
  lastSize: 11,
  tagSize: 10,
  titleBaseline: 16,
  tagBaseline: 31,
  inset: 8,
  right: 12,
  gap: 10,
} as const;

/**
 * A panel's header: the curve's title (bold) on the first line, across the panel; on the second,
 * the tag it was logged as (small, grey) and its last value at the right. What does not fit, as
 * `textWidth` (an upper bound) measures it, is cut with `…`; the panel's tooltip holds both whole.
 */
function header(title: string, tag: string, last: string | undefined, x0: number, y0: number, w: number): string[] {
  const { titleSizes, lastSize, tagSize, titleBaseline, tagBaseline, inset, right, gap } = HEADER;
  const width = w - inset - right;
  const titleSize = titleSizes.find((size) => textWidth(title, size) <= width) ?? titleSizes[titleSizes.length - 1]!;
  const lastText = last === undefined ? undefined : `last ${last}`;
  const tagRoom = width - (lastText === undefined ? 0 : textWidth(lastText, lastSize) + gap);
  return [
    `<text class="title" x="${x0 + inset}" y="${y0 + titleBaseline}" font-size="${titleSize}" font-weight="bold">${escapeXml(fitText(title, titleSize, width))}</text>`,
    `<text class="tag" x="${x0 + inset}" y="${y0 + tagBaseline}" font-size="${tagSize}" fill="#777">${escapeXml(fitText(tag, tagSize, tagRoom))}</text>`,
    lastText === undefined
      ? ""
      : `<text class="last" x="${x0 + w - right}" y="${y0 + tagBaseline}" font-size="${lastSize}" text-anchor="end" fill="#444">${escapeXml(lastText)}</text>`,
  ];
}

function panel(curve: Curve, title: string, index: number, x0: number, y0: number, w: number, h: number): string {
  const left = 58;
  const right = HEADER.right;
  const top = 40;
  const bottom = 30;
  const plotW = w - left - right;
  const plotH = h - top - bottom;
  const steps = curve.points.map((p) => p.step);
  const [sMin, sMax] = [Math.min(...steps), Math.max(...steps)];
  const [vMin, vMax] = range(curve.points.map((p) => p.value));
  const sx = (step: number) => x0 + left + (sMax > sMin ? ((step - sMin) / (sMax - sMin)) * plotW : plotW / 2);
  const sy = (value: number) => y0 + top + (1 - (value - vMin) / (vMax - vMin)) * plotH;
  const color = PALETTE[index % PALETTE.length]!;
  const finite = curve.points.filter((p) => Number.isFinite(p.value));
  const d = finite.map((p, i) => `${i === 0 ? "M" : "L"}${sx(p.step).toFixed(1)} ${sy(p.value).toFixed(1)}`).join(" ");
  const markers = finite.length <= 40 ? finite.map((p) => `<circle cx="${sx(p.step).toFixed(1)}" cy="${sy(p.value).toFixed(1)}" r="2.2" fill="${color}"/>`) : [];
  const last = finite[finite.length - 1];
  const axisY = y0 + top + plotH;
  const out = [
    `<g class="panel">`,
    `<title>${escapeXml(`${title} (${curve.tag})`)}</title>`,
    `<rect x="${x0 + left}" y="${y0 + top}" width="${plotW}" height="${plotH}" fill="#fafafa" stroke="#ccc"/>`,
    ...header(title, curve.tag, last && tick(last.value), x0, y0, w),
    `<text x="${x0 + left - 4}" y="${y0 + top + 4}" font-size="10" text-anchor="end">${escapeXml(tick(vMax))}</text>`,
    `<text x="${x0 + left - 4}" y="${axisY}" font-size="10" text-anchor="end">${escapeXml(tick(vMin))}</text>`,
    `<text x="${x0 + left}" y="${axisY + 14}" font-size="10">${sMin}</text>`,
    `<text x="${x0 + left + plotW}" y="${axisY + 14}" font-size="10" text-anchor="end">${sMax}</text>`,
    `<text x="${x0 + left + plotW / 2}" y="${axisY + 24}" font-size="10" text-anchor="middle" fill="#555">step</text>`,
    `<path class="curve" data-tag="${escapeXml(curve.tag)}" d="${d || `M${x0 + left} ${axisY}`}" fill="none" stroke="${color}" stroke-width="1.8"/>`,
    ...markers,
    `</g>`,
  ];
  return out.filter(Boolean).join("\n");
}

/**
 * Learning curves as one SVG: a panel per tag, each with one `<path class="curve">`, titled for
 * people (`curveTitle`) above the tag it was logged as.
 */
export function renderCurvesSvg(curves: readonly Curve[], options: SvgOptions = {}): string {
  const columns = Math.max(1, Math.min(options.columns ?? 3, curves.length || 1));
  const w = options.panelWidth ?? 340;
  const h = options.panelHeight ?? 224;
  const titleH = options.title ? 30 : 0;
  const rows = Math.max(1, Math.ceil(curves.length / columns));
  const tags = curves.map((c) => c.tag);
  const width = columns * w;
  const height = titleH + rows * h;
  const body = curves.length
    ? curves.map((c, i) => panel(c, curveTitle(c.tag, tags), i, (i % columns) * w, titleH + Math.floor(i / columns) * h, w, h))
    : [`<text x="20" y="${titleH + 40}" font-size="13">no scalars were logged</text>`];
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    options.title ? `<text x="10" y="21" font-size="15" font-weight="bold">${escapeXml(options.title)}</text>` : "",
    ...body,
    `</svg>`,
    "",
  ]
    .filter((l) => l !== "")
    .join("\n");
}
