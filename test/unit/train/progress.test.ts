/**
 * The CPU engines' train phases (minutes an epoch at the spec's sizes) report their steps and hand
 * the event loop turns between them (src/ticker.ts), so Ctrl-C, the page's Stop and the
 * CLI's progress line run during them; the results are the same as without a listener.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { applyFlags, type Config, cloneDefaults, defaultsFor, validateConfig } from '../../../src/config.js';
import { makeSplits } from '../../../src/data/splits.js';
import { generateSynthetic } from '../../../src/data/synthetic.js';
import { backtest, backtestAsync } from '../../../src/eval/backtest.js';
import { randomPolicy } from '../../../src/eval/policies.js';
import { buildMarket } from '../../../src/features/market.js';
import { NodeStorage } from '../../../src/node/storage.js';
import { stepTicker } from '../../../src/ticker.js';
import { progressLine } from '../../../src/train/report.js';
import { runTraining } from '../../../src/train/run.js';
import type { EpochRecord } from '../../../src/train/runlog.js';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-progress-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('stepTicker', () => {
  it('reports the steps done and yields a turn only once everyMs has passed since the last turn', async () => {
    let now = 0;
    const seen: [number, number][] = [];
    const tick = stepTicker(
      10,
      (d, t) => void seen.push([d, t]),
      100,
      () => now,
    );
    now = 99;
    await tick(1);
    expect(seen).toEqual([]);
    now = 100;
    let turned = false;
    setImmediate(() => {
      turned = true;
    });
    await tick(2);
    expect(seen).toEqual([[2, 10]]);
    expect(turned).toBe(true); // a macrotask queued before the tick ran inside it
    now = 150;
    await tick(3);
    now = 201;
    await tick(4);
    expect(seen).toEqual([
      [2, 10],
      [4, 10],
    ]);
  });

  it('shows a phase step count and the time left in the progress line', () => {
    const line = progressLine(
      1,
      20,
      'update',
      null,
      { elapsedMs: 38_000, etaMs: null },
      {
        done: 76,
        total: 600,
        leftMs: 208_000,
      },
    );
    expect(line).toBe('epoch 1/20 [--------------------] update 76/600 (3m28s left)  38s elapsed');
  });
});

describe('backtestAsync', () => {
  it('computes what backtest does, reporting the bars done and turning the event loop on a slow split', async () => {
    const cfg = cloneDefaults();
    const market = buildMarket(generateSynthetic({ bars: 6000, seed: 3 }), cfg);
    const { val } = makeSplits(market.n, cfg);
    const greedy = randomPolicy(5);
    // About 0.6 ms a bar: the split's ~800 bars (a yield every 256) take several ticks.
    const slow = (state: Float32Array, bar: number) => {
      const until = performance.now() + 0.6;
      while (performance.now() < until);
      return greedy(state, bar);
    };
    const seen: number[] = [];
    let turned = 0;
    const timer = setInterval(() => turned++, 0);
    try {
      const got = await backtestAsync(market, val, cfg.env, slow, 525_600, (done, total) => {
        expect(total).toBe(val.end - val.start - 1);
        seen.push(done);
      });
      expect(got).toEqual(backtest(market, val, cfg.env, randomPolicy(5), 525_600));
    } finally {
      clearInterval(timer);
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(seen).toEqual([...seen].sort((a, b) => a - b));
    expect(turned).toBeGreaterThan(0);
  });
});

const SIZES: Record<string, Record<string, string>> = {
  // 128 minibatch steps of 64.
  ppo: { 'rollout.episodes': '8', 'rollout.steps': '256', 'ppo.minibatch': '64', 'ppo.updateEpochs': '4' },
  // 20 train steps at batch 64 through the C51 net.
  c51: { 'rollout.episodes': '16', 'rollout.steps': '64', 'dqn.batch': '64', 'dqn.stepsPerEpoch': '20' },
};

function config(algo: string, outDir: string): Config {
  return validateConfig(
    applyFlags(defaultsFor(algo), {
      ...SIZES[algo],
      'train.algo': algo,
      'train.backend': 'cpu',
      'train.epochs': '1',
      'train.outDir': outDir,
      'data.synthBars': '3000',
      'dqn.replayCapacity': '4096',
    }),
  );
}

/** The epoch's log record without its wall-clock fields. */
const results = (r: EpochRecord) => ({
  losses: r.losses,
  reward: r.reward,
  validation: r.validation,
  score: r.score,
});

describe('the CPU train phase', () => {
  it.each(['ppo', 'c51'])(
    '%s: reports its steps, turns the event loop between them and computes what it does without a listener',
    async (algo) => {
      const storage = new NodeStorage();
      const steps: { done: number; total: number; turned: () => boolean }[] = [];
      const phases: string[] = [];
      const listened = await runTraining({
        cfg: config(algo, join(root, `${algo}-listened`)),
        storage,
        resume: null,
        onPhase: (_epoch, phase) => {
          phases.push(phase);
        },
        onStep: (epoch, phase, done, total) => {
          // The update's train steps; a validation long enough to tick reports its bars.
          expect([epoch, phases.at(-1)]).toEqual([1, phase]);
          if (phase === 'validate') return;
          expect(phase).toBe('update');
          // Each report is followed by a turn of the event loop before the next step.
          let ran = false;
          setImmediate(() => {
            ran = true;
          });
          for (const s of steps) expect(s.turned()).toBe(true);
          steps.push({ done, total, turned: () => ran });
        },
      });
      const total = algo === 'ppo' ? 128 : 20;
      expect(steps.length).toBeGreaterThan(0);
      for (const [i, s] of steps.entries()) {
        expect(s.total).toBe(total);
        expect(s.done).toBeGreaterThan(i > 0 ? steps[i - 1].done : 0);
        expect(s.done).toBeLessThanOrEqual(total);
      }
      const quiet = await runTraining({
        cfg: config(algo, join(root, `${algo}-quiet`)),
        storage,
        resume: null,
      });
      expect(listened.records.map(results)).toEqual(quiet.records.map(results));
    },
    120_000,
  );
});
