/**
 * Draws a RunView (view.ts) with uPlot: the live charts of the browser page and the charts of a
 * CLI run's `report.html` are this one function. report.html inlines its source text
 * (`renderRun.toString()`) next to uPlot, so it must stay self-contained: no reference to anything
 * outside its body but its arguments and browser globals, and no import other than types.
 *
 * Every chart's container carries `data-chart` (its name) and `data-points` (how many x values
 * it was given), which the tests read.
 */
import type uPlot from 'uplot';
import type { RunView } from './view.js';

export interface RunDrawing {
  /** Removes the charts' listeners (uPlot registers window listeners per chart). */
  destroy(): void;
}

export function renderRun(root: HTMLElement, view: RunView, U: typeof uPlot): RunDrawing {
  const doc = root.ownerDocument;
  const el = <K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text = '') => {
    const e = doc.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    return e;
  };
  const charts: uPlot[] = [];
  root.replaceChildren();
  root.append(el('h2', 'run-title', view.title), el('p', 'run-subtitle', view.subtitle));
  const grid = el('div', 'run-charts');
  root.append(grid);
  const width = Math.max(320, Math.min(560, Math.floor((root.clientWidth || 1160) / 2) - 24));
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd'];
  const pctFmt = (x: number) => `${(100 * x).toFixed(1)}%`;

  type Line = { label: string; values: (number | null)[]; scale?: string; bars?: boolean };
  const chart = (
    name: string,
    title: string,
    xs: number[],
    lines: Line[],
    opts: { time?: boolean; yFmt?: (x: number) => string; y2?: string; xFmt?: (x: number) => string } = {},
  ) => {
    const box = el('div', 'chart');
    box.dataset.chart = name;
    box.dataset.points = String(xs.length);
    grid.append(box);
    if (xs.length === 0) {
      box.append(el('p', 'chart-empty', `${title}: no data yet`));
      return;
    }
    const bars = U.paths.bars?.({ size: [0.6, 40] });
    const scales: uPlot.Scales = { x: { time: opts.time === true } };
    if (!opts.time) scales.x.range = (_u, lo, hi) => (lo === hi ? [lo - 1, hi + 1] : [lo, hi]);
    const axes: uPlot.Axis[] = [
      opts.xFmt ? { values: (_u, ticks) => ticks.map((t) => opts.xFmt!(t)) } : {},
      {
        size: 64,
        values: (_u, ticks) => ticks.map((t) => (opts.yFmt ? opts.yFmt(t) : String(+t.toPrecision(3)))),
      },
    ];
    if (opts.y2) axes.push({ scale: opts.y2, side: 1, size: 64, grid: { show: false } });
    charts.push(
      new U(
        {
          title,
          width,
          height: 220,
          scales,
          axes,
          series: [
            {
              label: opts.time ? 'date' : 'x',
              value: opts.xFmt ? (_u, v) => (v == null ? '--' : opts.xFmt!(v)) : undefined,
            },
            ...lines.map((l, i) => ({
              label: l.label,
              stroke: colors[i % colors.length],
              fill: l.bars ? `${colors[i % colors.length]}88` : undefined,
              width: 1.5,
              scale: l.scale ?? 'y',
              paths: l.bars ? bars : undefined,
              points: { show: xs.length < 40 },
            })),
          ],
        },
        [xs, ...lines.map((l) => l.values)] as uPlot.AlignedData,
        box,
      ),
    );
  };

  const ep = view.epochs;
  const epochs = ep.map((p) => p.epoch);
  const intTicks = (x: number) => (Number.isInteger(x) ? String(x) : '');
  chart(
    'reward',
    'training reward and validation return per epoch',
    epochs,
    [
      { label: 'mean reward / step', values: ep.map((p) => p.reward) },
      { label: 'validation return', values: ep.map((p) => p.valReturn), scale: 'ret' },
    ],
    { y2: 'ret', xFmt: intTicks },
  );
  chart(
    'losses',
    'losses per epoch',
    epochs,
    [
      { label: 'policy loss', values: ep.map((p) => p.policyLoss) },
      { label: 'value loss', values: ep.map((p) => p.valueLoss) },
      { label: 'entropy', values: ep.map((p) => p.entropy), scale: 'ent' },
    ],
    { y2: 'ent', xFmt: intTicks },
  );
  const c = view.curves;
  const suffix = c ? ` (${c.split} split, ${c.label})` : '';
  chart(
    'equity',
    `equity${suffix}`,
    c?.time ?? [],
    c
      ? [
          { label: 'policy', values: c.policy },
          { label: 'buy-and-hold', values: c.buyHold },
          { label: 'random', values: c.random },
        ]
      : [],
    { time: true },
  );
  chart(
    'drawdown',
    `policy drawdown${suffix}`,
    c?.time ?? [],
    c ? [{ label: 'drawdown', values: c.drawdown.map((d) => -d) }] : [],
    { time: true, yFmt: pctFmt },
  );
  const bins = [-1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1];
  const targets = [-1, -0.5, 0, 0.5, 1];
  chart(
    'actions',
    `actions and exposure${suffix}`,
    c ? bins : [],
    c
      ? [
          {
            label: 'target exposure chosen',
            values: bins.map((b) => {
              const i = targets.indexOf(b);
              return i < 0 ? null : c.targetShare[i];
            }),
            bars: true,
          },
          { label: 'exposure held', values: c.heldShare, bars: true },
        ]
      : [],
    { yFmt: pctFmt, xFmt: (x) => `${x >= 0 ? '+' : ''}${x}` },
  );

  const pct = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(2)}%`;
  const num = (x: number) => (Math.abs(x) >= 1e5 ? x.toExponential(2) : x.toFixed(2));
  type M = RunView['tables'][number]['report']['policy'];
  const columns: [string, (m: M) => string][] = [
    ['return', (m) => pct(m.totalReturn)],
    ['Sharpe', (m) => num(m.sharpe)],
    ['Sortino', (m) => num(m.sortino)],
    ['max drawdown', (m) => pct(-m.maxDrawdown)],
    ['Calmar', (m) => num(m.calmar)],
    ['hit rate', (m) => `${(100 * m.hitRate).toFixed(1)}%`],
    ['trades', (m) => String(m.trades)],
    ['turnover / y', (m) => m.turnover.toFixed(1)],
    ['avg hold (bars)', (m) => m.avgHoldingBars.toFixed(1)],
    ['avg |exposure|', (m) => num(m.avgExposure)],
  ];
  for (const t of view.tables) {
    const table = el('table', 'metrics');
    table.append(el('caption', '', t.caption));
    const head = el('tr', '');
    head.append(el('th', ''), ...columns.map(([h]) => el('th', '', h)));
    table.append(head);
    for (const [name, m] of [
      ['policy', t.report.policy],
      ['buy-and-hold', t.report.buyHold],
      ['random', t.report.random],
    ] as const) {
      const row = el('tr', '');
      row.append(el('th', '', name), ...columns.map(([, f]) => el('td', '', f(m))));
      table.append(row);
    }
    root.append(table);
  }
  for (const v of view.verdict) root.append(el('p', 'verdict', v));
  return {
    destroy: () => {
      for (const u of charts) u.destroy();
    },
  };
}
