/**
 * `report.html`: one self-contained file (no network, no other file) that draws a RunView with
 * the page's own drawing code (draw.ts's renderRun, inlined as source text) and uPlot inlined.
 * Node-free: the caller passes uPlot's script and stylesheet (src/node/report.ts reads them from
 * node_modules).
 */
import { renderRun } from './draw.js';
import type { RunView } from './view.js';

/** The charts' and tables' look, shared by the page (web/main.ts) and report.html. */
export const RUN_CSS = `
.run-charts { display: flex; flex-wrap: wrap; gap: 16px; }
.chart { min-width: 320px; }
table.metrics { border-collapse: collapse; margin: 16px 0; font-variant-numeric: tabular-nums; }
table.metrics caption { text-align: left; font-weight: 600; padding: 4px 0; }
table.metrics th, table.metrics td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
table.metrics th:first-child { text-align: left; }
.verdict { font-weight: 600; max-width: 80ch; }
`;

/** `</script` inside inlined text would end the script element early. */
const scriptSafe = (text: string) => text.replace(/<\/(script)/gi, '<\\/$1');

export function reportHtml(view: RunView, uplot: { js: string; css: string }): string {
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${esc(view.title)}</title>
<style>
body { font: 14px system-ui, sans-serif; margin: 24px; color: #222; }
${uplot.css}
${RUN_CSS}
</style>
</head>
<body>
<div id="run"></div>
<script>${scriptSafe(uplot.js)}</script>
<script>
const view = ${scriptSafe(JSON.stringify(view))};
(${scriptSafe(renderRun.toString())})(document.getElementById('run'), view, uPlot);
</script>
</body>
</html>
`;
}
