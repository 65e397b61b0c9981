import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.js';
import { cloneDefaults, SPEC_REWARD_TERMS } from '../../../src/config.js';
import { loadBars, saveBars } from '../../../src/data/load.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import { createStepOut } from '../../../src/env/output.js';
import { envParams } from '../../../src/env/params.js';
import { createEnv } from '../../../src/env/state.js';
import { envStep } from '../../../src/env/step.js';
import { formatF32, TRACE_COLUMNS } from '../../../src/env/trace.js';
import { buildMarket } from '../../../src/features/market.js';
import { initParams } from '../../../src/nets/forward.js';
import { curiosityLayout, NetId } from '../../../src/nets/layout.js';

let dir = '';
let data = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'foxhunt-sim-'));
  data = join(dir, 'bars.csv');
  await saveBars(data, generateSynthetic({ bars: 400, seed: 3 }));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function sim(args: string[]): Promise<{ code: number; err: string }> {
  const errors: string[] = [];
  const spyErr = vi.spyOn(console, 'error').mockImplementation((...m) => void errors.push(m.join(' ')));
  const spyLog = vi.spyOn(console, 'log').mockImplementation(() => {});
  try {
    const code = await main(['sim', ...args]);
    return { code, err: errors.join('\n') };
  } finally {
    spyErr.mockRestore();
    spyLog.mockRestore();
  }
}

describe('foxhunt sim', () => {
  it('writes one row per step that matches the simulator, ending at the first done', async () => {
    // Alternating full long / full short market orders: reversals every bar, then holds.
    const actions = [38, 2, 38, 2, ...Array(60).fill(38)];
    const actionsFile = join(dir, 'actions.txt');
    await writeFile(actionsFile, `${actions.join('\n')}\n`);
    const out = join(dir, 'trace.csv');
    const start = 200;
    // a 20-bar time barrier guarantees a done within the replay
    const config = join(dir, 'config.json');
    await writeFile(config, JSON.stringify({ env: { ...SPEC_REWARD_TERMS, maxHoldingBars: 20 } }));
    const flags = ['--start', String(start), '--actions', actionsFile, '--out', out, '--seed', '4'];
    const r = await sim(['--data', data, ...flags, '--config', config]);
    expect(r.code).toBe(0);
    const lines = (await readFile(out, 'utf8')).trim().split('\n');
    expect(lines[0]).toBe(TRACE_COLUMNS.join(','));
    const rows = lines.slice(1).map((l) => l.split(','));

    // Independent replay through envStep with the same market, config and curiosity model.
    const cfg = cloneDefaults();
    Object.assign(cfg.env, SPEC_REWARD_TERMS);
    cfg.env.maxHoldingBars = 20;
    const market = buildMarket((await loadBars(data)).bars, cfg);
    const params = { ...envParams(cfg.env), episodeBars: actions.length };
    const env = createEnv(market, { start, end: start + actions.length + 1 }, params, 1, 0);
    const curiosity = {
      layout: curiosityLayout(),
      params: initParams(curiosityLayout(), NetId.Curiosity, 4),
    };
    const o = createStepOut();
    let k = 0;
    for (; k < actions.length; k++) {
      envStep(env, market, params, 0, actions[k], o, curiosity);
      const row = rows[k];
      expect(Number(row[0])).toBe(start + k);
      expect(Number(row[1])).toBe(actions[k]);
      expect(row[2] === '' ? 0 : Math.fround(Number(row[2]))).toBe(o.fillPrice);
      expect(Math.fround(Number(row[6])), `row ${k}: ${row.join(',')}`).toBe(o.value);
      expect(Math.fround(Number(row[14]))).toBe(o.curiosity);
      expect(Math.fround(Number(row[15]))).toBe(o.total);
      expect(Number(row[9])).toBe(o.done);
      if (o.done) break;
    }
    // the trace stops at the first done, at the latest at the time barrier of the position
    // opened by the last reversal (bar start + 5, expiry 20 bars later)
    expect(k).toBeLessThan(actions.length);
    expect(start + k).toBeLessThanOrEqual(start + 4 + 20);
    expect(rows.length).toBe(k + 1);
    expect(['+1', '-1', '0']).toContain(rows[k][8]);
    expect(rows.slice(0, k).every((row) => row[9] === '0')).toBe(true);
    expect(rows[k].length).toBe(TRACE_COLUMNS.length);
  });

  it('gives curiosity 0 with --no-curiosity', async () => {
    const actionsFile = join(dir, 'few.txt');
    await writeFile(actionsFile, '0\n22\n\n44\n');
    const out = join(dir, 'few.csv');
    const r = await sim([
      '--data',
      data,
      '--start',
      '150',
      '--actions',
      actionsFile,
      '--out',
      out,
      '--no-curiosity',
    ]);
    expect(r.code).toBe(0);
    const rows = (await readFile(out, 'utf8')).trim().split('\n').slice(1);
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.every((row) => row.split(',')[14] === '0')).toBe(true);
  });

  it('rejects a bad action with its file and line, and a warm-up start bar', async () => {
    const bad = join(dir, 'bad.txt');
    await writeFile(bad, '3\n17\n45\n');
    const r = await sim(['--data', data, '--start', '200', '--actions', bad, '--out', join(dir, 'x.csv')]);
    expect(r.code).toBe(1);
    expect(r.err).toBe(`foxhunt sim: ${bad}:3: "45" is not an action (one integer 0..44 per line)`);
    for (const [text, line, shown] of [
      ['1\n-2\n', 2, '-2'],
      ['\n\n2.5\n', 3, '2.5'],
      ['7 # hold\n', 1, '7 # hold'],
    ] as const) {
      await writeFile(bad, text);
      const b = await sim(['--data', data, '--start', '200', '--actions', bad, '--out', join(dir, 'x.csv')]);
      expect(b.err).toBe(
        `foxhunt sim: ${bad}:${line}: "${shown}" is not an action (one integer 0..44 per line)`,
      );
    }

    const good = join(dir, 'good.txt');
    await writeFile(good, '3\n');
    const w = await sim(['--data', data, '--start', '10', '--actions', good, '--out', join(dir, 'x.csv')]);
    expect(w.code).toBe(1);
    expect(w.err).toMatch(/--start 10 is outside the usable bars 120\.\.398/);
  });

  it('prints f32 values with the fewest digits that read back exactly', () => {
    for (const x of [0, 1, -0.1, 100.51005, 1e-7, 3.4e38, 0.00945179113929403]) {
      const v = Math.fround(x);
      expect(Math.fround(Number(formatF32(v)))).toBe(v);
    }
    expect(formatF32(Math.fround(0.1))).toBe('0.1');
    expect(formatF32(Math.fround(-0.07516017))).toBe('-0.07516017');
  });
});
