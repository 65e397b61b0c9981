import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { backtest } from '../../src/eval/backtest.js';
import { dqnGreedyPolicy } from '../../src/eval/policies.js';
import { c51Support } from '../../src/learn/dqn_update.js';
import { initParams } from '../../src/nets/forward.js';
import { duelingLayout, NetId } from '../../src/nets/layout.js';
import { NodeStorage } from '../../src/node/storage.js';
import { prepareData, runTraining } from '../../src/train/run.js';

/** Trades the policy must make on validation (as test/e2e/train-learns.test.ts asks of PPO). */
const MIN_TRADES = 100;

const root = mkdtempSync(join(tmpdir(), 'foxhunt-c51-learns-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The seeds to train: FOXHUNT_LEARNS_SEEDS (comma-separated), else seed 1. */
const SEEDS = (process.env.FOXHUNT_LEARNS_SEEDS ?? '1').split(',').map((s) => Number.parseInt(s, 10));

/**
 * The CPU-sized C51 configuration (configs/cpu-c51.json, docs/DQN.md): 15 epochs of 64 x 32
 * epsilon-greedy steps, 50 train steps of batch 64 with PER, about 2.5 minutes on one core, always on
 * the CPU reference (bit-for-bit reproducible; the GPU runs are in docs/RESULTS.md). The last
 * epoch's greedy policy must beat random and its own untrained net on validation in return and
 * Sharpe, and trade. Seeds 1 and 2 pass; seed 3 fails: at epoch 15 it stands aside (no trade).
 * None beats buy-and-hold on test (docs/RESULTS.md). CI runs seed 1.
 */
const C51_CONFIG = 'configs/cpu-c51.json';

describe('C51 learns on the CPU', () => {
  for (const seed of SEEDS) {
    it(`seed ${seed}: the greedy policy beats random and its untrained net on validation`, async () => {
      const outDir = join(root, `c51-seed${seed}`);
      const cfg = loadConfig(
        { text: readFileSync(C51_CONFIG, 'utf8'), path: C51_CONFIG },
        { 'train.backend': 'cpu', 'train.seed': String(seed), 'train.outDir': outDir },
      );
      const { records } = await runTraining({ cfg, resume: null, storage: new NodeStorage() });
      const { policy, random } = records.at(-1)!.validation;
      const data = await prepareData(cfg);
      const layout = duelingLayout('c51', cfg.dqn.atoms, cfg.dqn.iqnEmbed);
      const untrained = backtest(
        data.market,
        data.splits.val,
        cfg.env,
        dqnGreedyPolicy(
          'c51',
          layout,
          initParams(layout, NetId.QOnline, seed),
          c51Support(cfg.dqn),
          cfg.dqn.iqnActTau,
        ),
        data.barsPerYear,
      ).metrics;
      const summary = `c51 seed ${seed}: policy ${JSON.stringify(policy)}\nrandom ${JSON.stringify(random)}\nuntrained ${JSON.stringify(untrained)}`;
      expect(policy.totalReturn, summary).toBeGreaterThan(random.totalReturn);
      expect(policy.sharpe, summary).toBeGreaterThan(random.sharpe);
      expect(policy.totalReturn, summary).toBeGreaterThan(untrained.totalReturn);
      expect(policy.sharpe, summary).toBeGreaterThan(untrained.sharpe);
      expect(policy.trades, summary).toBeGreaterThanOrEqual(MIN_TRADES);
    }, 1_800_000);
  }
});
