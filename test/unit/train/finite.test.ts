/**
 * Defence in depth: training checks its inputs before the first epoch and stops on the first
 * non-finite one (column, bar, time); a NaN during training says whether the inputs or the
 * optimisation went wrong.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { applyFlags, type Config, cloneDefaults, validateConfig } from '../../../src/config.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import { FEATURE_COUNT, FEATURE_NAMES } from '../../../src/features/features.js';
import { assertMarketFinite, buildMarket, firstNonFinite } from '../../../src/features/market.js';
import { NodeStorage } from '../../../src/node/storage.js';
import { lastDir } from '../../../src/train/checkpoint.js';
import { divergenceCause } from '../../../src/train/ppo.js';

const storage = new NodeStorage();

const TINY: Record<string, string> = {
  'data.synthBars': '2000',
  'env.episodeBars': '24',
  'env.curiosityBatch': '32',
  'rollout.episodes': '4',
  'rollout.steps': '16',
  'ppo.minibatch': '32',
  'ppo.updateEpochs': '2',
  'train.backend': 'cpu',
  'train.seed': '5',
  'train.epochs': '1',
};

const root = mkdtempSync(join(tmpdir(), 'foxhunt-finite-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
afterEach(() => {
  vi.doUnmock('../../../src/features/features.js');
  vi.resetModules();
});

const config = (outDir: string, extra: Record<string, string> = {}): Config =>
  validateConfig(applyFlags(cloneDefaults(), { ...TINY, 'train.outDir': outDir, ...extra }));

const PARK = FEATURE_NAMES.indexOf('park_ratio_20');

describe('finite inputs', () => {
  it('names the column, bar and time of the first non-finite input', () => {
    const bars = generateSynthetic({ bars: 600, seed: 2 });
    const market = buildMarket(bars, config(root));
    expect(firstNonFinite(market)).toBeNull();
    expect(() => assertMarketFinite(market, 'm.csv')).not.toThrow();

    market.ohlc[400 * 4 + 1] = Number.POSITIVE_INFINITY;
    market.features[300 * FEATURE_COUNT + PARK] = Number.NaN;
    const when = new Date(bars.timestamp[300]).toISOString();
    expect(() => assertMarketFinite(market, 'm.csv')).toThrow(
      `m.csv: bar 300 (${when}): non-finite input (park_ratio_20=NaN; training would diverge`,
    );
    market.features[300 * FEATURE_COUNT + PARK] = 0;
    expect(firstNonFinite(market)).toMatchObject({
      column: 'high',
      bar: 400,
      value: Number.POSITIVE_INFINITY,
    });
    expect(divergenceCause(market)).toMatch(
      /^The market inputs are not finite \(high is Infinity at bar 400 /,
    );
  });

  it('train stops before its first epoch when a feature is not finite', async () => {
    // A features module with one planted NaN stands for a bug in a feature.
    vi.doMock('../../../src/features/features.js', async (importOriginal) => {
      const real = await importOriginal<typeof import('../../../src/features/features.js')>();
      return {
        ...real,
        computeFeatures: (...args: Parameters<typeof real.computeFeatures>) => {
          const f = real.computeFeatures(...args);
          f[1500 * FEATURE_COUNT + PARK] = Number.NaN;
          return f;
        },
      };
    });
    const { runTraining } = await import('../../../src/train/run.js');
    const out = join(root, 'nan-input');
    await expect(runTraining({ cfg: config(out), storage, resume: null })).rejects.toThrow(
      /^the synthetic market: bar 1500 \(\S+\): non-finite input \(park_ratio_20=NaN/,
    );
    expect(existsSync(lastDir(out))).toBe(false);
  });

  it('a NaN during training with finite inputs blames the optimisation', async () => {
    const { runTraining } = await import('../../../src/train/run.js');
    await expect(
      runTraining({ cfg: config(join(root, 'lr'), { 'ppo.lr': '1e30' }), storage, resume: null }),
    ).rejects.toThrow(
      /epoch 1: .* The market inputs are finite, so the optimisation diverged: start a new run with a lower ppo.lr/,
    );
  });

  it("a DQN train step that diverges names the step's quantity once and dqn.lr", async () => {
    const { runTraining } = await import('../../../src/train/run.js');
    const dqn = {
      'train.algo': 'dqn',
      'train.epochs': '3',
      'dqn.lr': '1e30',
      'dqn.batch': '16',
      'dqn.stepsPerEpoch': '8',
      'dqn.replayCapacity': '256',
    };
    await expect(
      runTraining({ cfg: config(join(root, 'dqn-lr'), dqn), storage, resume: null }),
    ).rejects.toThrow(
      /^epoch \d: the train step's (loss|gradNorm|td) is (NaN|-?Infinity); .* start a new run with a lower dqn.lr/,
    );
  });
});
