/**
 * "Learning works": on the built-in synthetic market the trained greedy PPO policy beats the
 * random policy and its own untrained weights (so the gain is learned) on the validation split
 * after costs, in total return and in Sharpe, and trades (at least MIN_TRADES position runs on
 * the 8,946 validation bars), so that a policy that never trades (return 0, Sharpe 0) cannot
 * pass on the others' losses alone. It does not ask to beat buy-and-hold (one buy, held): on the
 * CPU configuration none of seeds 1-3 does (docs/RESULTS.md).
 *
 * On a GPU (CUDA, or a hardware WebGPU adapter) it runs the default rollout size: the defaults,
 * 30 epochs, with the two reward-shaping terms that work against holding a position switched off
 * (docs/RESULTS.md explains why): env.curiosityScale 0 (the bonus saturates at its cap, so it
 * only pays for staying alive, and barrier exits end episodes) and env.diversityPenalty 0 (it
 * charges every step of a position held for the 100-action window).
 *
 * On the CPU reference it runs configs/cpu-learns.json (docs/TRAINING.md, "A CPU-sized
 * configuration"): 8 epochs of 128 episodes x 32 steps, 2 update passes of minibatch 128, lr 1e-3,
 * entropy 0.001, gamma 0.98, lambda 0.9, barriers that close positions without ending the
 * episode (as in validation), curiosity and diversity off; about 3 minutes a seed on one core.
 * The CPU reference is bit-for-bit reproducible, so this is the run scripts/sweep.mjs recorded; a
 * change to the CPU arithmetic or to this configuration needs a new sweep.
 * FOXHUNT_REQUIRE_GPU=1 makes a missing GPU a failure instead.
 *
 * CI runs seed 1 only (about 3 minutes on the CPU); `npm run test:learns` runs all three
 * (FOXHUNT_LEARNS_SEEDS=1,2,3).
 *
 * Costs, barrier levels and the market are the defaults on both.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { chooseBackend } from '../../src/backend/index.js';
import { applyFlags, cloneDefaults, loadConfig, validateConfig } from '../../src/config.js';
import { backtest } from '../../src/eval/backtest.js';
import { ppoGreedyPolicy } from '../../src/eval/policies.js';
import { initParams } from '../../src/nets/forward.js';
import { NetId, ppoActorLayout } from '../../src/nets/layout.js';
import { NodeStorage } from '../../src/node/storage.js';
import { prepareData, runTraining } from '../../src/train/run.js';

/**
 * Trades (position runs, src/eval/metrics.ts) the policy must make on validation. The H200
 * runs made 477-681; 100 (about one per 90 bars) is well below that, and far above a policy
 * that has learned only to sit out.
 */
const MIN_TRADES = 100;

/** The GPU learning configuration, also in docs/RESULTS.md; everything else is the default. */
const LEARNS_FLAGS: Record<string, string> = {
  'train.epochs': '30',
  'env.curiosityScale': '0',
  'env.diversityPenalty': '0',
};

/** The CPU-sized learning configuration (a `foxhunt train --config` file). */
const CPU_CONFIG = 'configs/cpu-learns.json';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-learns-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The seeds to train: FOXHUNT_LEARNS_SEEDS (comma-separated), else seed 1. */
const SEEDS = (process.env.FOXHUNT_LEARNS_SEEDS ?? '1').split(',').map((s) => Number.parseInt(s, 10));

describe('PPO learns on the synthetic market', () => {
  it('trains known seeds (FOXHUNT_LEARNS_SEEDS holds seeds 1, 2 or 3)', () => {
    expect(SEEDS.length).toBeGreaterThan(0);
    for (const seed of SEEDS) expect([1, 2, 3]).toContain(seed);
  });
  for (const seed of SEEDS) {
    it(`seed ${seed}: the greedy policy beats random and its untrained weights on validation`, async () => {
      const choice = await chooseBackend('auto');
      const kind = choice.backend.kind;
      choice.backend.destroy();
      if (kind === 'cpu' && process.env.FOXHUNT_REQUIRE_GPU === '1') {
        const why = choice.skipped.map((s) => `${s.kind}: ${s.reason}`).join('; ');
        throw new Error(`no GPU backend (${why})`);
      }
      const outDir = join(root, `seed${seed}`);
      const run = { 'train.backend': kind, 'train.seed': String(seed), 'train.outDir': outDir };
      const cfg =
        kind === 'cpu'
          ? loadConfig({ text: readFileSync(CPU_CONFIG, 'utf8'), path: CPU_CONFIG }, run)
          : validateConfig(applyFlags(cloneDefaults(), { ...LEARNS_FLAGS, ...run }));
      const { records } = await runTraining({ cfg, resume: null, storage: new NodeStorage() });
      const { policy, buyHold, random } = records.at(-1)!.validation;
      const summary = `seed ${seed} on ${kind}: policy ${JSON.stringify(policy)}\nbuy-and-hold ${JSON.stringify(buyHold)}\nrandom ${JSON.stringify(random)}`;
      expect(policy.totalReturn, summary).toBeGreaterThan(random.totalReturn);
      expect(policy.sharpe, summary).toBeGreaterThan(random.sharpe);
      expect(policy.trades, summary).toBeGreaterThanOrEqual(MIN_TRADES);

      const data = await prepareData(cfg);
      const untrained = backtest(
        data.market,
        data.splits.val,
        cfg.env,
        ppoGreedyPolicy(initParams(ppoActorLayout(), NetId.Actor, seed)),
        data.barsPerYear,
      ).metrics;
      expect(policy.totalReturn, summary).toBeGreaterThan(untrained.totalReturn);
      expect(policy.sharpe, summary).toBeGreaterThan(untrained.sharpe);
    }, 1_800_000);
  }
});
