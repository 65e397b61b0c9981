/**
 * scripts/sweep.mjs: the criterion, the per-config summary of small synthetic logs, the sweep file
 * checks, and the runner end to end with a stand-in `foxhunt` (a node script that writes a
 * log.jsonl from its arguments), including a run stopped by --time-limit.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  formatConfig,
  type LogRecord,
  MIN_TRADES,
  meetsCriterion,
  parseSweep,
  readRunLog,
  summarizeConfig,
  trainArgs,
  type Validation,
} from '../../../scripts/sweep.mjs';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-sweep-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const BUY_HOLD = { totalReturn: -0.11, sharpe: -14, trades: 275 };
const RANDOM = { totalReturn: -0.43, sharpe: -115, trades: 3671 };

function validation(ret: number, sharpe: number, trades: number): Validation {
  return { policy: { totalReturn: ret, sharpe, trades }, buyHold: BUY_HOLD, random: RANDOM };
}

const record = (epoch: number, ret: number, sharpe: number, trades = 500): LogRecord => ({
  epoch,
  validation: validation(ret, sharpe, trades),
});

describe('meetsCriterion', () => {
  it('needs return and Sharpe above both baselines and enough trades', () => {
    expect(meetsCriterion(validation(-0.05, -5, 471))).toBe(true);
    expect(meetsCriterion(validation(-0.12, -5, 471)), 'return below buy-and-hold').toBe(false);
    expect(meetsCriterion(validation(-0.05, -15, 471)), 'Sharpe below buy-and-hold').toBe(false);
    expect(meetsCriterion(validation(-0.05, -5, MIN_TRADES))).toBe(true);
    expect(meetsCriterion(validation(-0.05, -5, MIN_TRADES - 1)), 'too few trades').toBe(false);
    expect(meetsCriterion(validation(-0.05, -5, 10), 10)).toBe(true);
    // Above buy-and-hold but not above random (a baseline pair where random is the better one).
    const v = validation(-0.05, -5, 471);
    v.random = { totalReturn: 0.01, sharpe: 1, trades: 3000 };
    expect(meetsCriterion(v)).toBe(false);
  });
});

describe('summarizeConfig', () => {
  it('lists per seed and for all seeds the epochs that meet the criterion', () => {
    const s = summarizeConfig('c', {
      1: [record(1, -0.2, -40), record(2, -0.05, -5), record(3, 0.02, 3), record(4, 0.01, 2)],
      2: [record(1, -0.05, -5), record(2, -0.3, -50), record(3, 0.04, 6, 99), record(4, 0.03, 4)],
      3: [record(1, -0.2, -40), record(2, -0.01, -1), record(3, 0.02, 2)],
    });
    expect(s.seeds).toEqual([1, 2, 3]);
    expect(s.perSeed).toEqual({ 1: [2, 3, 4], 2: [1, 4], 3: [2, 3] });
    // Epoch 4 holds on seeds 1 and 2 but seed 3 has not logged it; epoch 3 fails seed 2 on trades.
    expect(s.allSeeds).toEqual([]);
    expect(s.complete).toBe(3);
    expect(s.rows[2][2]).toEqual({
      epoch: 3,
      policy: { ret: 0.04, sharpe: 6, trades: 99 },
      buyHold: { ret: -0.11, sharpe: -14, trades: 275 },
      random: { ret: -0.43, sharpe: -115, trades: 3671 },
      ok: false,
    });

    const t = summarizeConfig('d', {
      1: [record(1, -0.2, -40), record(2, 0.01, 1)],
      2: [record(1, 0.01, 1), record(2, 0.02, 1)],
    });
    expect(t.allSeeds).toEqual([2]);
    const text = formatConfig(t, { epochs: 2 }).join('\n');
    expect(text).toContain('== d  --epochs 2');
    expect(text).toContain('seed 1: buy-and-hold -11.00% / -14.0, random -43.00% / -115.0');
    expect(text).toMatch(/\n {7}2 \| {3}1\.00% \/ {4}1\.0, {2}500 yes {2,}\| +2\.00%/);
    expect(text).toContain('all 2 seeds meet it at epochs: 2 (epochs 1-2 logged by every seed)');
  });

  it('reports a config without logs', () => {
    const s = summarizeConfig('none', {});
    expect(s.allSeeds).toEqual([]);
    expect(formatConfig(s).join('\n')).toContain('no run has logged an epoch');
  });
});

describe('parseSweep and trainArgs', () => {
  it('merges the sweep flags under each config, seeds default to 1-3', () => {
    const configs = parseSweep({
      flags: { epochs: 25, 'ppo.lr': 0.001 },
      configs: [
        { name: 'a', flags: { 'ppo.lr': 0.003, 'env.barrierTerminates': false } },
        { name: 'b', seeds: [7] },
      ],
    });
    expect(configs).toEqual([
      { name: 'a', flags: { epochs: 25, 'ppo.lr': 0.003, 'env.barrierTerminates': false }, seeds: [1, 2, 3] },
      { name: 'b', flags: { epochs: 25, 'ppo.lr': 0.001 }, seeds: [7] },
    ]);
    expect(trainArgs(configs[0], 2, '/s')).toEqual([
      'train',
      '--seed',
      '2',
      '--out',
      join('/s', 'a', 'seed2'),
      '--epochs',
      '25',
      '--ppo.lr',
      '0.003',
      '--env.barrierTerminates',
      'false',
    ]);
  });

  it('rejects what would make runs collide or fail late', () => {
    expect(() => parseSweep({ configs: [{ name: 'a' }, { name: 'a' }] })).toThrow(/used twice/);
    expect(() => parseSweep({ configs: [{ name: 'a/b' }] })).toThrow(/needs a "name"/);
    expect(() => parseSweep({ configs: [{ name: 'a', flags: { seed: 3 } }] })).toThrow(/set by the sweep/);
    expect(() => parseSweep({ configs: [{ name: 'a', seeds: [] }] })).toThrow(/seeds/);
    expect(() => parseSweep({ configs: [{ name: 'a', flags: { 'ppo.lr': [1] } }] })).toThrow(
      /string, number/,
    );
    expect(() => parseSweep({ runs: [] })).toThrow(/configs/);
    expect(() => parseSweep({ configs: [{ name: 'a', flag: {} }] })).toThrow(/unknown key "flag"/);
    expect(() => parseSweep({ configs: [], seed: [1] })).toThrow(/unknown key "seed"/);
  });
});

describe('readRunLog', () => {
  it('drops a torn last line and refuses a torn line in the middle', () => {
    const dir = join(root, 'torn');
    mkdirSync(dir, { recursive: true });
    const line = (e: number) => JSON.stringify(record(e, 0, 0));
    writeFileSync(join(dir, 'log.jsonl'), `${line(1)}\n${line(2)}\n{"epoch": 3, "valid`);
    expect(readRunLog(dir).map((r) => r.epoch)).toEqual([1, 2]);
    writeFileSync(join(dir, 'log.jsonl'), `${line(1)}\n{"ep\n${line(3)}\n`);
    expect(() => readRunLog(dir)).toThrow(/line 2 is not JSON/);
    expect(readRunLog(join(root, 'missing'))).toEqual([]);
  });

  it("skips a finished run's summary line", () => {
    const dir = join(root, 'finished');
    mkdirSync(dir, { recursive: true });
    const line = (e: number) => JSON.stringify(record(e, 0, 0));
    writeFileSync(join(dir, 'log.jsonl'), `${line(1)}\n${line(2)}\n{"summary":true,"epochs":2}\n`);
    expect(readRunLog(dir).map((r) => r.epoch)).toEqual([1, 2]);
  });
});

/**
 * A stand-in for `foxhunt train`: writes --epochs records to <out>/log.jsonl; the policy beats
 * both baselines from epoch (--fake.from + seed - 1) on; --fake.hang true then waits forever.
 */
const FAKE = `
import { mkdirSync, appendFileSync } from 'node:fs';
const a = process.argv.slice(2);
const opt = (k) => a[a.indexOf('--' + k) + 1];
if (a[0] !== 'train') process.exit(3);
const seed = Number(opt('seed')), out = opt('out'), epochs = Number(opt('epochs'));
const from = Number(opt('fake.from')) + seed - 1;
mkdirSync(out, { recursive: true });
const m = (r, s, t) => ({ totalReturn: r, sharpe: s, trades: t });
for (let e = 1; e <= epochs; e++) {
  const good = e >= from;
  const validation = { policy: good ? m(0.01, 2, 300) : m(-0.2, -30, 900), buyHold: m(-0.1, -14, 275), random: m(-0.4, -100, 3600) };
  appendFileSync(out + '/log.jsonl', JSON.stringify({ epoch: e, validation }) + '\\n');
}
console.log('fake run', a.join(' '));
if (opt('fake.hang') === 'true') setInterval(() => {}, 1000);
`;

describe('sweep.mjs end to end', () => {
  const fake = join(root, 'fake-foxhunt.mjs');
  writeFileSync(fake, FAKE);
  const sweep = (file: string, out: string, extra: string[] = []) =>
    spawnSync(
      process.execPath,
      ['scripts/sweep.mjs', '--foxhunt', `${process.execPath} ${fake}`, '--out', out, ...extra, file],
      { encoding: 'utf8', timeout: 60_000 },
    );

  it('runs every config and seed in parallel and summarises the criterion epochs', () => {
    const file = join(root, 'sweep.json');
    writeFileSync(
      file,
      JSON.stringify({
        flags: { epochs: 5 },
        seeds: [1, 2, 3],
        configs: [
          { name: 'early', flags: { 'fake.from': 2 } },
          { name: 'never', flags: { 'fake.from': 9 } },
        ],
      }),
    );
    const out = join(root, 'out1');
    const json = join(root, 'summary.json');
    const r = sweep(file, out, ['--jobs', '4', '--json', json]);
    expect(r.status, r.stderr).toBe(0);
    // Seed s meets it from epoch 1 + s on: all three at 4 and 5.
    expect(r.stdout).toMatch(/early +all seeds at epochs: 4, 5 +epochs met per seed: 4\/3\/2/);
    expect(r.stdout).toMatch(/never +all seeds at epochs: none/);
    const summary = JSON.parse(readFileSync(json, 'utf8'));
    expect(summary.runs).toHaveLength(6);
    expect(summary.configs[0].allSeeds).toEqual([4, 5]);
    expect(readFileSync(join(out, 'early', 'seed2.out'), 'utf8')).toContain(
      `fake run train --seed 2 --out ${join(out, 'early', 'seed2')} --epochs 5 --fake.from 2`,
    );
    // --summarize re-reads the same logs without running anything.
    const again = sweep(file, out, ['--summarize']);
    expect(again.status, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/early +all seeds at epochs: 4, 5/);
  });

  it('stops runs at --time-limit and summarises what they logged', () => {
    const file = join(root, 'hang.json');
    writeFileSync(
      file,
      JSON.stringify({
        configs: [{ name: 'hang', seeds: [1, 2], flags: { epochs: 3, 'fake.from': 1, 'fake.hang': true } }],
      }),
    );
    const r = sweep(file, join(root, 'out2'), ['--time-limit', '2']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain('time limit of 2 s: stopping 2 run(s)');
    expect(r.stderr).toMatch(/stopped \(SIGTERM\) hang seed 1: 3 epoch/);
    expect(r.stdout).toMatch(/hang +all seeds at epochs: 2, 3/);
  });

  it('exits non-zero and names the log of a run that failed', () => {
    const file = join(root, 'fail.json');
    writeFileSync(file, JSON.stringify({ configs: [{ name: 'bad', seeds: [1], flags: { epochs: 'x' } }] }));
    const r = spawnSync(
      process.execPath,
      [
        'scripts/sweep.mjs',
        '--foxhunt',
        `${process.execPath} -e process.exit(4)`,
        '--out',
        join(root, 'out3'),
        file,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/failed \(exit 4\) bad seed 1/);
    expect(r.stdout).toContain(`run bad seed 1 failed: see ${join(root, 'out3', 'bad')}/seed1.out`);
  });
});
