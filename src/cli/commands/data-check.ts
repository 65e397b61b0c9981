/**
 * `foxhunt data check FILE`: validates a market file (SPEC 1) and prints a one-screen summary,
 * or exits 1 with the first offending file / row / rule.
 */
import { gapStats, medianInterval } from '../../data/gaps.js';
import { makeSplits, SplitError } from '../../data/splits.js';
import type { Bars, SplitRange, Splits } from '../../data/types.js';
import { dataWarnings } from '../../data/warnings.js';
import { parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';
import { configFrom, formatDuration, loadForCli, repairLine } from './data-common.js';

const usage = `usage: foxhunt data check FILE [--fill-gaps] [--drop-invalid] [--config FILE]

Validates FILE (.csv or .parquet: timestamp, open, high, low, close, volume, optional spread
in bps or bid and ask) and prints rows, span, intervals, gaps, prices, volume and the
train/val/test splits, then a "warning" line for each problem that does not stop training
(all-zero volume, flat stretches, 10x jumps, bars wider than the barriers, splits too small to
validate on). Exits 1 with the first broken rule (file, row, rule).

  --fill-gaps     insert flat zero-volume bars for missing bars at the modal interval
  --drop-invalid  drop rows that break a rule instead of failing (reports how many)
  --config FILE   JSON config (data.maxLookback and split fractions, env.episodeBars)`;

const iso = (ms: number) => new Date(ms).toISOString();
const fix = (x: number, d = 4) => String(+x.toFixed(d));

function quantile(sorted: Float64Array, q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

export function summarize(bars: Bars, splitsLine: string): string[] {
  const ts = bars.timestamp;
  const n = bars.n;
  const gaps = gapStats(ts);
  let lo = Number.POSITIVE_INFINITY;
  let hi = 0;
  let zeroVolume = 0;
  let volumeSum = 0;
  for (let t = 0; t < n; t++) {
    lo = Math.min(lo, bars.low[t]);
    hi = Math.max(hi, bars.high[t]);
    if (bars.volume[t] === 0) zeroVolume++;
    volumeSum += bars.volume[t];
  }
  const vol = bars.volume.slice().sort();
  let spread = 'none in the data (the config default applies)';
  if (bars.spreadBps) {
    let s = 0;
    for (let t = 0; t < n; t++) s += bars.spreadBps[t];
    spread = `mean ${fix(s / n, 3)} bps`;
  }
  return [
    `bars      ${n}`,
    `span      ${iso(ts[0])} .. ${iso(ts[n - 1])} (${formatDuration(ts[n - 1] - ts[0])})`,
    `interval  median ${formatDuration(medianInterval(ts))}, modal ${formatDuration(gaps.modalMs)}`,
    `gaps      ${gaps.gaps} (${gaps.missingBars} missing bars at the modal interval${
      gaps.largest > 0 ? `; largest ${gaps.largest} before ${iso(ts[gaps.largestAt])}` : ''
    })`,
    `price     low ${fix(lo)}, high ${fix(hi)}; close first ${fix(bars.close[0])}, last ${fix(bars.close[n - 1])}`,
    `volume    mean ${fix(volumeSum / n, 2)}, median ${fix(quantile(vol, 0.5), 2)}, max ${fix(vol[n - 1], 2)}, zero-volume bars ${zeroVolume}`,
    `spread    ${spread}`,
    `splits    ${splitsLine}`,
  ];
}

const range = (name: string, r: SplitRange) => `${name} [${r.start}, ${r.end}) ${r.end - r.start}`;

async function run(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    args,
    { 'fill-gaps': { type: 'boolean' }, 'drop-invalid': { type: 'boolean' }, config: { type: 'string' } },
    usage,
  );
  if (positionals.length !== 1) throw new UserError(`give exactly one FILE\n${usage}`);
  const cfg = await configFrom(values.config as string | undefined);
  const opts = { fillGaps: values['fill-gaps'] === true, dropInvalid: values['drop-invalid'] === true };
  const { bars, report } = await loadForCli(positionals[0], opts);
  let splitsLine: string;
  let splits: Splits | null = null;
  try {
    const s = makeSplits(bars.n, cfg);
    splits = s;
    splitsLine = `warm-up ${cfg.data.maxLookback}, gaps ${cfg.data.maxLookback}: ${range('train', s.train)} | ${range('val', s.val)} | ${range('test', s.test)}`;
  } catch (err) {
    if (!(err instanceof SplitError)) throw err;
    splitsLine = `none: ${err.message}`;
  }
  const lines = [`file      ${report.file}: valid, ${report.rowsRead} data rows`];
  const repaired = repairLine(report, opts);
  if (repaired) lines.push(`repairs   ${repaired}`);
  const warnings = dataWarnings(bars, splits, cfg).map((w) => `warning   ${w}`);
  console.log([...lines, ...summarize(bars, splitsLine), ...warnings].join('\n'));
  return 0;
}

export const dataCheckCommand: Command = {
  name: 'data check',
  summary: 'validate a market data file and summarise it (exit 1 on the first broken rule)',
  usage,
  run,
};
