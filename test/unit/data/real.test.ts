/**
 * Real market data end to end (test/fixtures/sp500-daily.csv, S&P 500 daily bars 2000-2020,
 * README beside it): `data check` accepts it, warning only that its bars are wider than the
 * default barriers, `data features` writes only finite values within the clip, and a short CPU
 * training run on it stays finite.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { applyFlags, cloneDefaults, defaultsFor, validateConfig } from '../../../src/config.js';
import { makeSplits } from '../../../src/data/splits.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import {
  C51_SUPPORT_SPAN,
  c51SupportWarning,
  dataWarnings,
  rewardNoise,
} from '../../../src/data/warnings.js';
import { FEATURE_CLIP, FEATURE_COUNT } from '../../../src/features/features.js';
import { loadSourcedBars } from '../../../src/node/data.js';
import { NodeStorage } from '../../../src/node/storage.js';
import { runTraining } from '../../../src/train/run.js';
import { runCli } from '../../support/cli.js';

const FIXTURE = 'test/fixtures/sp500-daily.csv';
const root = mkdtempSync(join(tmpdir(), 'foxhunt-real-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => {
  vi.restoreAllMocks();
});

const cli = (...argv: string[]) => runCli(argv);

describe('real data: S&P 500 daily, 2000-2020', () => {
  it('data check calls it valid, with splits, and warns only that daily bars are wider than the barriers', async () => {
    const r = await cli('data', 'check', FIXTURE);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain(`${FIXTURE}: valid, 5105 data rows`);
    expect(r.out).toMatch(/span\s+2000-01-03T00:00:00.000Z \.\. 2020-04-17T00:00:00.000Z/);
    expect(r.out).toMatch(/splits\s+warm-up 120, .*val \[\d+, \d+\) 711 \| test/);
    expect(r.out.split('\n').filter((l) => l.startsWith('warning'))).toEqual([
      "warning   the median bar spans 104 bps from low to high, more than env.stopLossBps (30): most of the agent's positions close at a barrier " +
        'within a bar or two; for bars this wide set barriers a few bars wide, e.g. --env.stopLossBps 310 --env.profitTargetBps 520',
    ]);
  });

  it('data features writes 51 finite features within the clip for every bar', async () => {
    const out = join(root, 'features.csv');
    expect((await cli('data', 'features', FIXTURE, '--out', out)).code).toBe(0);
    const rows = readFileSync(out, 'utf8').trimEnd().split('\n').slice(1);
    expect(rows).toHaveLength(5105);
    let nonZero = 0;
    for (const [i, row] of rows.entries()) {
      const cells = row.split(',').slice(1).map(Number);
      expect(cells, `bar ${i}`).toHaveLength(FEATURE_COUNT);
      for (const x of cells) {
        if (!(Math.abs(x) <= FEATURE_CLIP)) throw new Error(`bar ${i}: ${row}`);
        if (x !== 0) nonZero++;
      }
    }
    // Daily bars: the four time-of-day / weekday features stay 0, the other 47 mostly do not.
    expect(nonZero / ((5105 - 120) * 47)).toBeGreaterThan(0.9);
  });

  it('a short CPU training run on it stays finite', async () => {
    const cfg = validateConfig(
      applyFlags(cloneDefaults(), {
        'env.episodeBars': '64',
        'env.curiosityBatch': '32',
        'rollout.episodes': '4',
        'rollout.steps': '32',
        'ppo.minibatch': '32',
        'ppo.updateEpochs': '2',
        'train.backend': 'cpu',
        'train.seed': '1',
        'train.epochs': '2',
        'train.outDir': join(root, 'run'),
      }),
    );
    const { records } = await runTraining({
      cfg,
      storage: new NodeStorage(),
      bars: await loadSourcedBars(FIXTURE),
      resume: null,
    });
    expect(records.map((r) => r.epoch)).toEqual([1, 2]);
    for (const r of records) {
      const { policy, buyHold } = r.validation;
      const values = [
        ...Object.values(r.losses),
        ...Object.values(r.reward),
        policy.totalReturn,
        policy.sharpe,
        buyHold.totalReturn,
        buyHold.sharpe,
      ];
      expect(values.length).toBeGreaterThan(10);
      expect(values.filter((x) => !Number.isFinite(x))).toEqual([]);
    }
  });

  it('warns for C51 that its default support clips daily rewards, and names a support that does not', async () => {
    const bars = (await loadSourcedBars(FIXTURE))!.bars;
    const c51 = defaultsFor('c51');
    const splits = makeSplits(bars.n, c51);
    const line = c51SupportWarning(bars, splits.train, c51);
    expect(line).toMatch(/^C51's support dqn\.vMin -3 \.\. dqn\.vMax 3 spans \+-0\.\d standard deviations/);
    const wide = Number(/--dqn\.vMax (\d+)$/.exec(line ?? '')?.[1]);
    expect(wide).toBeGreaterThan(20);
    const widened = { ...c51, dqn: { ...c51.dqn, vMin: -wide, vMax: wide } };
    expect(c51SupportWarning(bars, splits.train, widened)).toBeNull();
    // Only a C51 run hears of it.
    expect(dataWarnings(bars, splits, c51)).toContain(line);
    expect(dataWarnings(bars, splits, defaultsFor('ppo')).some((w) => w.startsWith("C51's"))).toBe(false);
    expect(dataWarnings(bars, splits, defaultsFor('iqn')).some((w) => w.startsWith("C51's"))).toBe(false);
  });

  it('foxhunt train prints the warnings for the file it trains on, the C51 one among them', async () => {
    const r = await cli(
      'train',
      '--data',
      FIXTURE,
      '--algo',
      'c51',
      '--backend',
      'cpu',
      '--epochs',
      '1',
      '--rollout.episodes',
      '4',
      '--rollout.steps',
      '32',
      '--env.episodeBars',
      '64',
      '--dqn.batch',
      '32',
      '--dqn.stepsPerEpoch',
      '2',
      '--out',
      join(root, 'c51'),
    );
    expect(r.code).toBe(0);
    const warnings = r.err.split('\n').filter((l) => l.startsWith('warning: '));
    expect(warnings).toHaveLength(2);
    expect(warnings[0]).toMatch(/^warning: test\/fixtures\/sp500-daily\.csv: the median bar spans 104 bps/);
    expect(warnings[1]).toMatch(
      /^warning: test\/fixtures\/sp500-daily\.csv: C51's support .* --dqn\.vMin -51 --dqn\.vMax 51$/,
    );
  });

  it("C51's default support spans about C51_SUPPORT_SPAN reward deviations on the built-in market: no warning", () => {
    const c51 = defaultsFor('c51');
    for (const seed of [1, 2, 3]) {
      const bars = generateSynthetic({ bars: c51.data.synthBars, seed });
      const { train } = makeSplits(bars.n, c51);
      expect(c51SupportWarning(bars, train, c51), `seed ${seed}`).toBeNull();
      // The constant is the built-in market's: its default support spans ~12 deviations a side.
      expect(3 / rewardNoise(bars, train, c51), `seed ${seed}`).toBeGreaterThan(0.75 * C51_SUPPORT_SPAN);
      expect(3 / rewardNoise(bars, train, c51), `seed ${seed}`).toBeLessThan(1.25 * C51_SUPPORT_SPAN);
    }
  });
});
