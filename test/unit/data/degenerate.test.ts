/**
 * `data check` on degenerate files: absurd magnitudes are rejected naming the row and the rule;
 * valid data that trains poorly (no volume, flat stretches, jumps, splits too small to
 * validate on) passes with one warning line each.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { saveBars } from '../../../src/data/load.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import type { Bars } from '../../../src/data/types.js';
import { runCli } from '../../support/cli.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'foxhunt-degenerate-'));
});
afterEach(() => {
  vi.restoreAllMocks();
});

const cli = (...argv: string[]) => runCli(argv);

/**
 * A CSV of three minute bars with `row2` (without its timestamp) as the second; the others are
 * valid, with `extra` cells for the header's optional columns.
 */
function csv(
  name: string,
  row2: string,
  header = 'timestamp,open,high,low,close,volume',
  extra = '',
): string {
  const file = join(dir, name);
  const ok = `100,101,99,100,5${extra}`;
  writeFileSync(file, `${header}\n0,${ok}\n60,${row2}\n120,${ok}\n`);
  return file;
}

const warnings = (out: string) => out.split('\n').filter((l) => l.startsWith('warning'));

describe('data check on degenerate data', () => {
  it('rejects absurd magnitudes, naming the row and the rule', async () => {
    const cases: [string, string, string][] = [
      ['100,1e308,99,100,5', 'price out of range', 'high=1e+308'],
      ['1e-300,101,1e-300,100,5', 'price out of range', 'open=1e-300'],
      ['100,101,99,100,1e19', 'volume out of range', 'volume=1e+19'],
    ];
    for (const [row, rule, detail] of cases) {
      const file = csv(`${rule.replaceAll(' ', '-')}.csv`, row);
      const r = await cli('data', 'check', file);
      expect(r.code, row).toBe(1);
      expect(r.err, row).toContain(`${file}: data row 2 (line 3): ${rule} (${detail}`);
    }
    const spread = await cli(
      'data',
      'check',
      csv('spread.csv', '100,101,99,100,5,20000', 'timestamp,open,high,low,close,volume,spread', ',2'),
    );
    expect(spread.err).toContain('data row 2 (line 3): spread out of range (spread=20000 bps');
    const quotes = await cli(
      'data',
      'check',
      csv(
        'quotes.csv',
        '100,101,99,100,5,1,400',
        'timestamp,open,high,low,close,volume,bid,ask',
        ',99.9,100.1',
      ),
    );
    expect(quotes.err).toContain('data row 2 (line 3): spread out of range (bid=1, ask=400');
    // --drop-invalid removes such a row like any other broken one.
    const dropped = await cli('data', 'check', csv('drop.csv', '100,1e308,99,100,5'), '--drop-invalid');
    expect(dropped.code).toBe(0);
    expect(dropped.out).toContain('dropped 1 invalid row(s)');
  });

  it('accepts the edges of the ranges', async () => {
    const r = await cli('data', 'check', csv('edges.csv', '1e-12,1e12,1e-12,1e12,1e18'));
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
  });

  it('warns, and exits 0, on all-zero volume, flat stretches, jumps (x10, a 2:1 split) and too-small splits', async () => {
    const b = generateSynthetic({ bars: 6000, seed: 3 });
    const clean = join(dir, 'clean.csv');
    await saveBars(clean, b);
    const ok = await cli('data', 'check', clean);
    expect(ok.code).toBe(0);
    expect(warnings(ok.out)).toEqual([]);

    const bad: Bars = { ...b, volume: new Float64Array(b.n), close: b.close.slice() };
    bad.open = b.open.slice();
    bad.high = b.high.slice();
    bad.low = b.low.slice();
    const flat = (from: number, bars: number) => {
      const p = bad.close[from - 1];
      for (let t = from; t < from + bars; t++) bad.open[t] = bad.high[t] = bad.low[t] = bad.close[t] = p;
    };
    flat(1000, 26);
    flat(3000, 19);
    flat(4000, 40);
    // One bar jumps x10 and the next falls back.
    bad.high[5000] = bad.close[5000] = bad.close[4999] * 10.5;
    bad.open[5001] = bad.high[5001] = bad.close[5000];
    // An unadjusted 2:1 split: every price from bar 5500 on halves.
    for (const col of [bad.open, bad.high, bad.low, bad.close]) for (let t = 5500; t < b.n; t++) col[t] /= 2;
    const file = join(dir, 'degenerate.csv');
    await saveBars(file, bad);
    const r = await cli('data', 'check', file);
    expect(r.code).toBe(0);
    const w = warnings(r.out);
    expect(w).toHaveLength(3);
    expect(w[0]).toMatch(/volume is 0 on every bar/);
    expect(w[1]).toMatch(
      new RegExp(
        `2 flat stretch\\(es\\) of 20\\+ bars .*longest 40 from ${new Date(b.timestamp[4000]).toISOString()}`,
      ),
    );
    expect(w[2]).toMatch(
      /3 close\(s\) more than 1.8x away from the previous one \(first at .*\): an unadjusted split \(adjust the prices before it\) or a bad tick \(fix the row\)\?$/,
    );

    const short = join(dir, 'short.csv');
    await saveBars(short, generateSynthetic({ bars: 3000, seed: 3 }));
    const s = await cli('data', 'check', short);
    expect(s.code).toBe(0);
    expect(warnings(s.out)).toEqual([
      'warning   the val and test splits are shorter than one episode (env.episodeBars 500): too few bars to validate on; use more data',
    ]);
    const none = join(dir, 'tiny.csv');
    await saveBars(none, generateSynthetic({ bars: 600, seed: 3 }));
    expect(warnings((await cli('data', 'check', none)).out)).toEqual([
      'warning   no train/val/test splits: the data is too short for the config (splits line)',
    ]);
  });

  it('warns when the median bar is wider than the stop-loss barrier, naming barriers to set', async () => {
    // Bars 2% high to low (a daily stock): at the defaults (stop 30 bps) every position hits a barrier.
    const b = generateSynthetic({ bars: 3000, seed: 5 });
    const wide: Bars = { ...b, high: b.high.map((h) => h * 1.01), low: b.low.map((l) => l * 0.99) };
    const file = join(dir, 'wide.csv');
    await saveBars(file, wide);
    const r = await cli('data', 'check', file);
    expect(r.code).toBe(0);
    const w = warnings(r.out).filter((l) => l.includes('env.stopLossBps'));
    expect(w).toHaveLength(1);
    expect(w[0]).toMatch(
      /^warning {3}the median bar spans 2\d\d bps from low to high, more than env.stopLossBps \(30\): most of the agent's positions close at a barrier within a bar or two; .*--env.stopLossBps \d+ --env.profitTargetBps \d+$/,
    );
    // The suggestion is about three bar ranges, the profit target at the configured 5:3.
    const [, range, stop, profit] = /spans (\d+) bps.*stopLossBps (\d+) --env.profitTargetBps (\d+)/
      .exec(w[0])!
      .map(Number);
    expect(stop / (3 * range)).toBeCloseTo(1, 1);
    expect(Math.abs(profit / stop - 5 / 3)).toBeLessThan(0.1);
    // Following it silences the warning; so does train's flag (the same config).
    const cfg = join(dir, 'wide.json');
    writeFileSync(cfg, JSON.stringify({ env: { stopLossBps: stop, profitTargetBps: profit } }));
    const fixed = await cli('data', 'check', file, '--config', cfg);
    expect(warnings(fixed.out).filter((l) => l.includes('env.stopLossBps'))).toEqual([]);
  });
});
