import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";

import { type Curve, readCurves } from "./curves.js";
import { renderReportHtml } from "./html.js";
import { type JobInfo, readJob } from "./job.js";
import { renderCurvesSvg } from "./svg.js";

/** What `writeReport` wrote. */
export interface WrittenReport {
  readonly job: JobInfo;
  readonly curves: readonly Curve[];
  readonly svg: string;
  readonly html: string;
}

/**
 * Draws the learning curve of every scalar the job logged (its `runs/` event files) into
 * `<out>/curves.svg`, and a page with them and the listeners' results into `<out>/report.html`.
 * `out` defaults to `<job dir>/report`.
 */
export function writeReport(jobDir: string, out = join(jobDir, "report")): WrittenReport {
  const job = readJob(resolve(jobDir));
  const curves = readCurves(join(job.dir, "runs"));
  const svgText = renderCurvesSvg(curves, { title: `${job.typeId} ${job.identifier.slice(0, 12)} (${job.state})` });
  mkdirSync(out, { recursive: true });
  const svg = join(out, "curves.svg");
  const html = join(out, "report.html");
  writeFileSync(svg, svgText);
  writeFileSync(html, renderReportHtml(job, svgText));
  return { job, curves, svg, html };
}
