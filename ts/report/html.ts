import { stateLabel } from "../workspace/job-state.js";
import type { JobInfo } from "./job.js";
import { escapeXml } from "./svg.js";

const STYLE = `body{font-family:sans-serif;margin:24px;color:#222}
table{border-collapse:collapse;margin:12px 0}td,th{border:1px solid #ccc;padding:4px 10px;text-align:left}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}code{font-size:90%}`;

function resultsTable(job: JobInfo): string {
  if (job.best.length === 0) return "<p>No listener recorded a best value.</p>";
  const rows = job.best.map(
    (b) =>
      `<tr><td>${escapeXml(b.listener)}</td><td>${escapeXml(b.metric)}</td><td class="num">${b.value.toPrecision(6)}</td>` +
      `<td class="num">${b.epoch}</td><td><code>${escapeXml(b.model ?? "")}</code></td></tr>`,
  );
  return `<table class="results"><tr><th>listener</th><th>metric</th><th>best value</th><th>epoch</th><th>model</th></tr>\n${rows.join("\n")}\n</table>`;
}

/** A self-contained page: the job's state, its listeners' results table and the curves. */
export function renderReportHtml(job: JobInfo, svg: string): string {
  const others = Object.entries(job.otherOutputs).map(
    ([id, output]) => `<h3>${escapeXml(id)}</h3><pre>${escapeXml(JSON.stringify(output, null, 2))}</pre>`,
  );
  const facts = [
    ["job", job.dir],
    ["type", job.typeId],
    ["state", stateLabel(job.state, job.failureReason) + (job.error ? `: ${job.error}` : "")],
    ["epochs", String(job.epochs)],
    ...(job.stopped ? [["stopped", job.stopped]] : []),
    ...(job.learnedModel ? [["learned model", job.learnedModel]] : []),
  ];
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>xpm-torch report ${escapeXml(job.identifier.slice(0, 12))}</title>
<style>${STYLE}</style></head><body>
<h1>xpm-torch job ${escapeXml(job.identifier.slice(0, 12))}</h1>
<table class="facts">${facts.map(([k, v]) => `<tr><th>${escapeXml(k!)}</th><td><code>${escapeXml(v!)}</code></td></tr>`).join("")}</table>
<h2>Results</h2>
${resultsTable(job)}
${others.join("\n")}
<h2>Learning curves</h2>
${svg}
</body></html>
`;
}
