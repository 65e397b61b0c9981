import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { featureText } from '../../../src/cli/feature_text.js';
import { loadBars } from '../../../src/data/load.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import { FEATURE_NAMES } from '../../../src/features/features.js';
import { runCli } from '../../support/cli.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'foxhunt-cli-'));
});
afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs main in-process, capturing stdout and stderr lines. */
const cli = (...argv: string[]) => runCli(argv);

describe('foxhunt data', () => {
  it('synth writes the seeded market; check summarises it (exit 0)', async () => {
    const csv = join(dir, 'm.csv');
    const pq = join(dir, 'm.parquet');
    expect((await cli('data', 'synth', '--bars', '3000', '--seed', '4', '--out', csv)).code).toBe(0);
    expect((await cli('data', 'synth', '--bars', '3000', '--seed', '4', '--out', pq)).code).toBe(0);
    const fromCsv = await loadBars(csv);
    expect(Array.from(fromCsv.bars.close)).toEqual(
      Array.from(generateSynthetic({ bars: 3000, seed: 4 }).close),
    );
    expect(Array.from((await loadBars(pq)).bars.close)).toEqual(Array.from(fromCsv.bars.close));
    const check = await cli('data', 'check', csv);
    expect(check.code).toBe(0);
    expect(check.out).toContain('3000 data rows');
    expect(check.out).toMatch(/interval\s+median 1m, modal 1m/);
    expect(check.out).toMatch(/gaps\s+0 /);
    expect(check.out).toContain('train [120, ');
    expect(check.out.split('\n').length).toBeLessThan(25);
  });

  it('check exits 1 with one line naming file, row and rule', async () => {
    const bad = join(dir, 'bad.csv');
    writeFileSync(
      bad,
      'timestamp,open,high,low,close,volume\n2024-01-01T00:00:00Z,1,2,0.5,1,1\n2024-01-01T00:01:00Z,1,2,0.5,1,-3\n',
    );
    const r = await cli('data', 'check', bad);
    expect(r.code).toBe(1);
    expect(r.err).toBe(
      `foxhunt data check: ${bad}: data row 2 (line 3): volume < 0 (volume=-3); --drop-invalid drops such rows (foxhunt data check FILE --drop-invalid counts them)`,
    );
    const dropped = await cli('data', 'check', bad, '--drop-invalid');
    expect(dropped.code).toBe(0);
    expect(dropped.out).toContain('dropped 1 invalid row(s)');
    expect((await cli('data', 'check', join(dir, 'missing.csv'))).code).toBe(1);
    expect((await cli('data', 'check')).code).toBe(1);
  });

  it('check says when the data is too short for the splits, naming the numbers', async () => {
    const csv = join(dir, 'short.csv');
    await cli('data', 'synth', '--bars', '600', '--seed', '1', '--out', csv);
    const r = await cli('data', 'check', csv);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/splits\s+none: data too short for the config: 600 bars/);
    expect(r.out).toContain('env.episodeBars');
  });

  it('check --fill-gaps reports the bars it inserted', async () => {
    const gappy = join(dir, 'gappy.csv');
    writeFileSync(
      gappy,
      'timestamp,open,high,low,close,volume\n0,1,2,0.5,1,1\n60,1,2,0.5,1,1\n240,1,2,0.5,1,1\n300,1,2,0.5,1,1\n',
    );
    const plain = await cli('data', 'check', gappy);
    expect(plain.out).toMatch(/gaps\s+1 \(2 missing bars/);
    const filled = await cli('data', 'check', gappy, '--fill-gaps');
    expect(filled.code).toBe(0);
    expect(filled.out).toContain('filled 2 missing bar(s) in 1 gap(s)');
    expect(filled.out).toMatch(/bars\s+6/);
  });

  it('features writes a header of the 51 names and one row per bar', async () => {
    const csv = join(dir, 'f-in.csv');
    const out = join(dir, 'f-out.csv');
    await cli('data', 'synth', '--bars', '400', '--seed', '2', '--out', csv);
    const r = await cli('data', 'features', csv, '--out', out);
    expect(r.code).toBe(0);
    const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
    expect(lines[0]).toBe(`timestamp,${FEATURE_NAMES.join(',')}`);
    expect(lines.length).toBe(401);
    expect(
      lines[1]
        .split(',')
        .slice(1)
        .every((x) => x === '0'),
    ).toBe(true);
    const row = lines[300].split(',');
    expect(row.length).toBe(52);
    expect(row.slice(1).every((x) => Number.isFinite(Number(x)) && Math.abs(Number(x)) <= 5)).toBe(true);
  });

  it("features' cell text is String(+x.toPrecision(7)) for f32 values of every magnitude, ties included", () => {
    const want = (x: number) => String(+x.toPrecision(7));
    const values = [0, -0, 5, -5, 1, 0.5, 1e-6, 1e6, 999_999.94, 9.9999995, 1e-7, 3e-39, 1e30, Number.NaN];
    // Powers of ten and their f32 neighbours (log10 one off), ties of 7 digits (odd / 2^q).
    for (let k = -8; k <= 8; k++) {
      const p = Math.fround(10 ** k);
      values.push(p, p * (1 + 2 ** -23), p * (1 - 2 ** -24));
    }
    for (let q = 0; q < 40; q++) for (let m = 1; m < 400; m += 2) values.push(m / 2 ** q, (1e6 + m) / 2 ** q);
    // Random f32 bit patterns over the whole exponent range.
    const bits = new Uint32Array(1);
    const f32 = new Float32Array(bits.buffer);
    for (let i = 0; i < 200_000; i++) {
      bits[0] = (Math.imul(i, 2_654_435_761) ^ (i << 7)) >>> 0;
      values.push(f32[0]);
    }
    for (const v of values) {
      const x = Math.fround(v);
      for (const y of [x, -x])
        if (featureText(y) !== want(y)) expect(featureText(y), String(y)).toBe(want(y));
    }
  });

  it('bench data times every phase of the data path', async () => {
    const r = await cli('bench', 'data', '--bars', '2000', '--dir', dir);
    expect(r.code).toBe(0);
    for (const phase of [
      'synthesise',
      'write csv',
      'write parquet',
      'load csv',
      'load parquet',
      'build market',
    ]) {
      expect(r.out).toMatch(new RegExp(`${phase}.*\\d+\\.\\d\\d\\s+\\d+\\.\\d\\d`));
    }
  });

  it('rejects bad flags with exit 1', async () => {
    expect((await cli('data', 'synth', '--bars', 'many', '--out', join(dir, 'x.csv'))).code).toBe(1);
    expect((await cli('data', 'synth', '--bars', '10')).code).toBe(1);
    expect((await cli('data', 'synth', '--bars', '10', '--out', join(dir, 'x.txt'))).code).toBe(1);
    expect((await cli('data', 'check', 'a.csv', '--bogus')).code).toBe(1);
  });
});
