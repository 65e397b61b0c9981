/**
 * Draws a RunView (view.ts) with uPlot: the live charts of the browser page and the charts of a
 * CLI run's `report.html` are this one function. report.html inlines its source text
 * (`renderRun.toString()`) next to uPlot, so it must stay self-contained: no reference to anything
 * outside its body but its arguments and browser globals, and no import other than types.
 *
 * Every chart's container carries `data-chart` (its name) and `data-points` (how many x values
 * it was given), which the tests read, and `data-drawn` once its canvas shows that data.
 *
 * The page stays responsive (no task over 50 ms) because each chart is created or redrawn in its
 * own task (the page creates them empty before a run starts) and later views only replace the
 * charts' data (`update`), not their DOM; an empty chart keeps its axes and legend.
 */
import type uPlot from 'uplot';
import type { RunView } from './view.js';

export interface RunDrawing {
  /** Shows `view`: new data into the existing charts, charts created where there were none. */
  update(view: RunView): void;
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
  const titleEl = el('h2', 'run-title');
  const subtitleEl = el('p', 'run-subtitle');
  const grid = el('div', 'run-charts');
  const tablesEl = el('div', 'run-tables');
  root.replaceChildren(titleEl, subtitleEl, grid, tablesEl);
  const width = Math.max(320, Math.min(560, Math.floor((root.clientWidth || 1160) / 2) - 24));
  const colors = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd'];
  const pctFmt = (x: number) => `${(100 * x).toFixed(1)}%`;
  // EpochPoint.losses, by algorithm (the last line on the right-hand scale).
  const ppoLosses = ['policy loss', 'value loss', 'entropy'];
  const dqnLosses = ['loss', 'mean |TD error|', 'epsilon'];

  type Line = { label: string; values: (number | null)[]; scale?: string; bars?: boolean };
  type Opts = { time?: boolean; yFmt?: (x: number) => string; y2?: string; xFmt?: (x: number) => string };
  type Spec = { name: string; title: string; xs: number[]; lines: Line[]; opts: Opts };
  type Made = { box: HTMLElement; u: uPlot | null; labels: string };
  const made = new Map<string, Made>();
  let queue: Spec[] = [];
  let timer: ReturnType<typeof setTimeout> | null = null;
  let destroyed = false;

  const specs = (v: RunView): Spec[] => {
    const ep = v.epochs;
    const epochs = ep.map((p) => p.epoch);
    const intTicks = (x: number) => (Number.isInteger(x) ? String(x) : '');
    const c = v.curves;
    const suffix = c ? ` (${c.split} split, ${c.label})` : '';
    const bins = [-1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1];
    const targets = [-1, -0.5, 0, 0.5, 1];
    return [
      {
        name: 'reward',
        title: 'training reward and validation return per epoch',
        xs: epochs,
        lines: [
          { label: 'mean reward / step', values: ep.map((p) => p.reward) },
          { label: 'validation return', values: ep.map((p) => p.valReturn), scale: 'ret' },
        ],
        opts: { y2: 'ret', xFmt: intTicks },
      },
      {
        name: 'losses',
        title: 'losses per epoch',
        xs: epochs,
        lines: (ep.length && ep[0].algo !== 'ppo' ? dqnLosses : ppoLosses).map((label, i) => ({
          label,
          values: ep.map((p) => p.losses[i]),
          ...(i === 2 ? { scale: 'ent' } : {}),
        })),
        opts: { y2: 'ent', xFmt: intTicks },
      },
      {
        name: 'equity',
        title: `equity${suffix}`,
        xs: c?.time ?? [],
        lines: [
          { label: 'policy', values: c?.policy ?? [] },
          { label: 'buy-and-hold', values: c?.buyHold ?? [] },
          { label: 'random', values: c?.random ?? [] },
        ],
        opts: { time: true },
      },
      {
        name: 'drawdown',
        title: `policy drawdown${suffix}`,
        xs: c?.time ?? [],
        lines: [{ label: 'drawdown', values: c?.drawdown.map((d) => -d) ?? [] }],
        opts: { time: true, yFmt: pctFmt },
      },
      {
        name: 'actions',
        title: `actions and exposure${suffix}`,
        xs: c ? bins : [],
        lines: [
          {
            label: 'target exposure chosen',
            values: c
              ? bins.map((b) => {
                  const i = targets.indexOf(b);
                  return i < 0 ? null : c.targetShare[i];
                })
              : [],
            bars: true,
          },
          { label: 'exposure held', values: c?.heldShare ?? [], bars: true },
        ],
        opts: { yFmt: pctFmt, xFmt: (x) => `${x >= 0 ? '+' : ''}${x}` },
      },
    ];
  };

  const labelsOf = (spec: Spec) => spec.lines.map((l) => l.label).join('|');

  /** Tick labels of 3 significant digits, more where that would print two ticks alike (3.925, 3.93). */
  const distinctLabels = (ticks: number[]): string[] => {
    for (let digits = 3; ; digits++) {
      const labels = ticks.map((t) => String(+t.toPrecision(digits)));
      if (digits >= 10 || new Set(labels).size === labels.length) return labels;
    }
  };
  const create = (spec: Spec) => {
    const { title, xs, lines, opts } = spec;
    const box = made.get(spec.name)!.box;
    const bars = U.paths.bars?.({ size: [0.6, 40] });
    const scales: uPlot.Scales = { x: { time: opts.time === true } };
    if (!opts.time) scales.x.range = (_u, lo, hi) => (lo === hi ? [lo - 1, hi + 1] : [lo, hi]);
    const axes: uPlot.Axis[] = [
      opts.xFmt ? { values: (_u, ticks) => ticks.map((t) => opts.xFmt!(t)) } : {},
      {
        size: 64,
        values: (_u, ticks) => (opts.yFmt ? ticks.map(opts.yFmt) : distinctLabels(ticks)),
      },
    ];
    if (opts.y2) axes.push({ scale: opts.y2, side: 1, size: 64, grid: { show: false } });
    box.replaceChildren();
    const u = new U(
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
            points: { show: spec.name === 'reward' || spec.name === 'losses' },
          })),
        ],
      },
      [xs, ...lines.map((l) => l.values)] as uPlot.AlignedData,
      box,
    );
    made.set(spec.name, { box, u, labels: labelsOf(spec) });
    box.dataset.drawn = 'true';
  };

  /** New data into a chart of the same lines; a new chart where there was none or its lines changed. */
  const draw = (spec: Spec) => {
    const m = made.get(spec.name)!;
    if (m.u && m.labels === labelsOf(spec)) {
      m.u.setData([spec.xs, ...spec.lines.map((l) => l.values)] as uPlot.AlignedData);
      const t = m.box.querySelector('.u-title');
      if (t) t.textContent = spec.title;
      m.box.dataset.drawn = 'true';
    } else {
      m.u?.destroy();
      create(spec);
    }
  };

  /**
   * Draws the queued charts one per task, so no single task draws them all: on 2 busy cores a
   * task is stretched several times in wall clock, and one chart's redraw stays a few ms.
   */
  const drain = () => {
    timer = null;
    const next = queue.shift();
    if (!next || destroyed) return;
    draw(next);
    if (queue.length) timer = setTimeout(drain, 0);
  };

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

  const update = (v: RunView) => {
    titleEl.textContent = v.title;
    subtitleEl.textContent = v.subtitle;
    queue = [];
    for (const spec of specs(v)) {
      let m = made.get(spec.name);
      if (!m) {
        const box = el('div', 'chart');
        box.dataset.chart = spec.name;
        grid.append(box);
        m = { box, u: null, labels: '' };
        made.set(spec.name, m);
      }
      m.box.dataset.points = String(spec.xs.length);
      m.box.dataset.drawn = 'false';
      queue.push(spec);
    }
    if (queue.length && timer === null) timer = setTimeout(drain, 0);

    tablesEl.replaceChildren();
    for (const t of v.tables) {
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
      tablesEl.append(table);
    }
    for (const s of v.verdict) tablesEl.append(el('p', 'verdict', s));
  };

  update(view);
  return {
    update,
    destroy: () => {
      destroyed = true;
      if (timer !== null) clearTimeout(timer);
      for (const m of made.values()) m.u?.destroy();
    },
  };
}
