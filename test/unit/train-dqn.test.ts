import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { trainDqn } from '../../src/algo/dqn.js';
import { main } from '../../src/cli/main.js';
import { type Config, loadConfig } from '../../src/config.js';
import { backtest } from '../../src/train/backtest.js';
import { checkpointDir } from '../../src/train/checkpoint.js';
import { createCpuDqnEngine } from '../../src/train/cpu_dqn_engine.js';
import { dqnCheckpointPolicy, loadDqnCheckpoint } from '../../src/train/dqn_checkpoint.js';
import { prepareData } from '../../src/train/run.js';
import { readLog } from '../../src/train/runlog.js';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-dqn-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** configs/cpu-c51.json, shrunk to seconds: the same code paths on fewer bars, slots and steps. */
function tinyConfig(algo: string, outDir: string): Config {
  const path = 'configs/cpu-c51.json';
  return loadConfig(
    { text: readFileSync(path, 'utf8'), path },
    {
      'train.algo': algo,
      'train.epochs': '2',
      'train.outDir': outDir,
      'data.synthBars': '3000',
      'env.episodeBars': '64',
      'rollout.episodes': '8',
      'rollout.steps': '16',
      'dqn.batch': '16',
      'dqn.stepsPerEpoch': '4',
      'dqn.replayCapacity': '200',
      'dqn.targetEvery': '3',
      'dqn.iqnTau': '4',
      'dqn.iqnActTau': '4',
    },
  );
}

async function train(algo: string) {
  const outDir = join(root, algo);
  const cfg = tinyConfig(algo, outDir);
  const data = await prepareData(cfg);
  const engine = createCpuDqnEngine(cfg, data.market, data.splits.train);
  const records = await trainDqn({
    cfg,
    market: data.market,
    splits: data.splits,
    engine,
    outDir,
    barsPerYear: data.barsPerYear,
    data: data.fingerprint,
    firstEpoch: 1,
  });
  return { cfg, data, engine, records, outDir };
}

describe('DQN-family training on the CPU', () => {
  it('c51: trains with finite losses, logs, and its checkpoint round-trips the whole state', async () => {
    const { cfg, data, engine, records, outDir } = await train('c51');
    expect(records).toHaveLength(2);
    for (const r of records) {
      expect(r.algo).toBe('c51');
      for (const v of Object.values(r.losses)) expect(Number.isFinite(v)).toBe(true);
      expect(r.losses.trainSteps).toBe(4);
      expect(Number.isFinite(r.validation.policy.totalReturn)).toBe(true);
    }
    // 2 launches of 8 x 16 = 256 rows into a ring of 200; epsilon decays from 1.
    expect(records[1].losses.replaySize).toBe(200);
    expect(records[0].epsilon).toBe(1);
    expect(records[1].epsilon).toBeLessThan(1);
    expect(readLog(outDir).map((r) => r.epoch)).toEqual([1, 2]);

    const snap = await engine.snapshot();
    const { state, snapshot } = await loadDqnCheckpoint(checkpointDir(outDir));
    expect(state.epoch).toBe(2);
    expect(state.trainSteps).toBe(8);
    expect(snapshot).toEqual(snap);

    // A fresh engine restored from the checkpoint holds the same state.
    const fresh = createCpuDqnEngine(cfg, data.market, data.splits.train);
    await fresh.restore(snapshot);
    expect(await fresh.snapshot()).toEqual(snap);
    // ... and continues exactly like the original: one more epoch's train steps on both.
    const a = await engine.train(2, 12);
    const b = await fresh.train(2, 12);
    expect(b).toEqual(a);
    expect((await fresh.params()).online).toEqual((await engine.params()).online);

    // The checkpoint's greedy policy reproduces the last validation, and `foxhunt backtest` reads it.
    const { policy } = await dqnCheckpointPolicy(checkpointDir(outDir));
    const again = backtest(data.market, data.splits.val, cfg.env, policy, data.barsPerYear).metrics;
    expect(again).toEqual(records[1].validation.policy);
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...x) => void lines.push(x.join(' ')));
    try {
      expect(await main(['backtest', '--checkpoint', outDir, '--split', 'val', '--json'])).toBe(0);
    } finally {
      log.mockRestore();
    }
    expect(JSON.parse(lines[0]).policy).toEqual(records[1].validation.policy);
  }, 180_000);

  it('refuses a replay larger than the CPU engine allocates, and resuming a c51 run, with one line', async () => {
    const cfg = tinyConfig('c51', join(root, 'big'));
    const data = await prepareData(cfg);
    const big = { ...cfg, dqn: { ...cfg.dqn, replayCapacity: 20_000_000 } };
    expect(() => createCpuDqnEngine(big, data.market, data.splits.train)).toThrow(
      /dqn.replayCapacity 20000000 needs 8.3 GiB .* lower dqn.replayCapacity/,
    );
    const err: string[] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...x) => void err.push(x.join(' ')));
    try {
      const code = await main([
        'train',
        '--algo',
        'c51',
        '--resume',
        '--out',
        join(root, 'c51'),
        '--epochs',
        '3',
      ]);
      expect(code).toBe(1);
    } finally {
      spy.mockRestore();
    }
    expect(err.join('\n')).toMatch(/a c51 checkpoint, not ppo; --resume continues PPO runs only so far/);
  });

  for (const algo of ['dqn', 'iqn']) {
    it(`${algo}: trains with finite losses`, async () => {
      const { records } = await train(algo);
      for (const r of records) for (const v of Object.values(r.losses)) expect(Number.isFinite(v)).toBe(true);
      expect(records[1].losses.total).toBeGreaterThan(0);
    }, 180_000);
  }
});
