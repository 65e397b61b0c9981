import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { main } from '../../../src/cli/main.js';
import { applyFlags, type Config, loadConfig, validateConfig } from '../../../src/config.js';
import { createCpuDqnEngine } from '../../../src/engine/cpu_dqn.js';
import type { DqnEngine } from '../../../src/engine/dqn_engine.js';
import { backtest } from '../../../src/eval/backtest.js';
import { dqnGreedyPolicy } from '../../../src/eval/policies.js';
import { c51Support, headOf } from '../../../src/learn/dqn_update.js';
import { duelingLayout } from '../../../src/nets/layout.js';
import { writeReport } from '../../../src/node/report.js';
import { NodeStorage } from '../../../src/node/storage.js';
import { runViewOf } from '../../../src/report/run_view.js';
import { bestDir, lastDir } from '../../../src/train/checkpoint.js';
import { type DqnRun, trainDqn } from '../../../src/train/dqn.js';
import { dqnCheckpointPolicy, loadDqnCheckpoint } from '../../../src/train/dqn_checkpoint.js';
import { RunStoppedError } from '../../../src/train/epoch_end.js';
import { prepareData, type RunOptions, resumeConfig, runTraining } from '../../../src/train/run.js';
import { type EpochRecord, readLog } from '../../../src/train/runlog.js';
import { hardwareLookingGpu, noCudaDevice, noCudaModule } from '../../support/webgpu.js';

const root = mkdtempSync(join(tmpdir(), 'foxhunt-dqn-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const storage = new NodeStorage();

/** configs/cpu-c51.json, shrunk to seconds: the same code paths on fewer bars, slots and steps. */
function tinyConfig(algo: string, outDir: string, over: Record<string, string> = {}): Config {
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
      ...over,
    },
  );
}

/**
 * trainDqn on the CPU engine in <root>/<name> (default: algo); `wrap` may put the engine behind a
 * proxy, `run` adds to the run's options.
 */
async function train(
  algo: string,
  over: Record<string, string> = {},
  o: {
    name?: string;
    wrap?: (engine: DqnEngine, cfg: Config, data: Awaited<ReturnType<typeof prepareData>>) => DqnEngine;
    run?: Partial<DqnRun>;
  } = {},
) {
  const outDir = join(root, o.name ?? algo);
  const cfg = tinyConfig(algo, outDir, over);
  const data = await prepareData(cfg);
  const inner = createCpuDqnEngine(cfg, data.market, data.splits.train);
  const engine = o.wrap ? o.wrap(inner, cfg, data) : inner;
  const { records, summary } = await trainDqn({
    cfg,
    market: data.market,
    splits: data.splits,
    engine,
    storage,
    outDir,
    barsPerYear: data.barsPerYear,
    data: data.fingerprint,
    firstEpoch: 1,
    bestScore: Number.NEGATIVE_INFINITY,
    ...o.run,
  });
  return { cfg, data, engine, records, summary, outDir };
}

/** A log record without the wall-clock fields, which no two runs share. */
function deterministic(r: EpochRecord): Omit<EpochRecord, 'timeMs' | 'throughput'> {
  const { timeMs: _t, throughput: _p, ...rest } = r;
  return rest;
}

describe('DQN-family training on the CPU', () => {
  it('c51: trains with finite losses, logs, and its checkpoints round-trip the whole state', async () => {
    const { cfg, data, engine, records, summary, outDir } = await train('c51');
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
    expect((await readLog(storage, outDir)).map((r) => r.epoch)).toEqual([1, 2]);
    expect(summary.algo).toBe('c51');
    expect(Number.isFinite(summary.test.policy.totalReturn)).toBe(true);

    const snap = await engine.snapshot();
    const { state, snapshot } = await loadDqnCheckpoint(storage, lastDir(outDir));
    expect(state.epoch).toBe(2);
    expect(state.trainSteps).toBe(8);
    expect(snapshot).toEqual(snap);
    // Without the replay (dqn.checkpointReplay false): the rest, and the ring's head, size and max priority.
    const slim = await engine.snapshot(false);
    expect([slim.replay.f.length, slim.replay.i.length, slim.per.tree.length]).toEqual([0, 0, 0]);
    const empty = {
      replay: { ...snap.replay, f: slim.replay.f, i: slim.replay.i },
      per: { ...snap.per, tree: slim.per.tree },
    };
    expect(slim).toEqual({ ...snap, ...empty });

    // A fresh engine restored from the checkpoint holds the same state ...
    const fresh = createCpuDqnEngine(cfg, data.market, data.splits.train);
    await fresh.restore(snapshot);
    expect(await fresh.snapshot()).toEqual(snap);
    // ... and continues exactly like the original: one more epoch's train steps on both.
    const a = await engine.train(2);
    const b = await fresh.train(2);
    expect(b).toEqual(a);
    expect((await fresh.params()).online).toEqual((await engine.params()).online);

    // best/'s greedy policy reproduces its validation, and `foxhunt backtest` reads it.
    const best = await dqnCheckpointPolicy(storage, bestDir(outDir));
    const again = backtest(data.market, data.splits.val, cfg.env, best.policy, data.barsPerYear).metrics;
    expect(again).toEqual(best.state.record.validation.policy);
    const lines: string[] = [];
    const log = vi.spyOn(console, 'log').mockImplementation((...x) => void lines.push(x.join(' ')));
    try {
      expect(await main(['backtest', '--checkpoint', outDir, '--split', 'test', '--json'])).toBe(0);
    } finally {
      log.mockRestore();
    }
    expect(JSON.parse(lines[0]).policy).toEqual(summary.test.policy);
  }, 180_000);

  it('dqn: 2 epochs straight equal 1 epoch + --resume 1 epoch, bit for bit (replay and PER included)', async () => {
    const run = (cfg: Config, resume: RunOptions['resume']) => runTraining({ cfg, storage, resume });
    // The curiosity bonus on, so that its model, AdamW state and training are covered too.
    const on = { 'env.curiosityScale': '1', 'env.curiosityBatch': '32' };
    const straight = join(root, 'straight');
    await run(tinyConfig('dqn', straight, on), null);
    const split = join(root, 'split');
    await run(tinyConfig('dqn', split, { ...on, 'train.epochs': '1' }), null);
    const { cfg, checkpoint } = await resumeConfig(storage, split, (base) =>
      validateConfig(applyFlags(base, { 'train.epochs': '2' })),
    );
    expect(checkpoint.state.epoch).toBe(1);
    await run(cfg, checkpoint);
    const a = await loadDqnCheckpoint(storage, lastDir(straight));
    const b = await loadDqnCheckpoint(storage, lastDir(split));
    expect(b.state.epoch).toBe(2);
    expect(b.snapshot).toEqual(a.snapshot);
    const logA = await readLog(storage, straight);
    expect(logA.map((r) => r.epoch)).toEqual([1, 2]);
    expect(logA[1].losses.curiosity).toBeGreaterThan(0);
    expect(a.snapshot.optim.curiosity.step).toBe(2);
    expect((await readLog(storage, split)).map(deterministic)).toEqual(logA.map(deterministic));
  }, 180_000);

  it('dqn.checkpointReplay false: no replay in the checkpoints, and --resume continues from an empty replay, saying so', async () => {
    const run = (cfg: Config, resume: RunOptions['resume'], onInfo?: (line: string) => void) =>
      runTraining({ cfg, storage, resume, onInfo });
    const out = join(root, 'no-replay');
    await run(tinyConfig('dqn', out, { 'train.epochs': '1', 'dqn.checkpointReplay': 'false' }), null);
    const files = readdirSync(lastDir(out));
    expect(files).toContain('online.safetensors');
    expect(files).not.toContain('replay.safetensors');
    expect(readdirSync(bestDir(out))).not.toContain('replay.safetensors');
    const { cfg, checkpoint } = await resumeConfig(storage, out, (base) =>
      validateConfig(applyFlags(base, { 'train.epochs': '2' })),
    );
    const restored = (await loadDqnCheckpoint(storage, lastDir(out))).snapshot;
    expect(restored.replay.size).toBe(0);
    expect(restored.replay.f.length).toBe(200 * 110);
    const info: string[] = [];
    await run(cfg, checkpoint, (line) => info.push(line));
    expect(info.join('\n')).toMatch(/no replay \(dqn\.checkpointReplay false\).*not exactly/);
    const after = await loadDqnCheckpoint(storage, lastDir(out));
    expect(after.state.epoch).toBe(2);
    expect(after.state.replay.saved).toBe(false);
    expect((await readLog(storage, out)).map((r) => r.epoch)).toEqual([1, 2]);
    // The default keeps them (the exact-resume test above relies on it).
    const kept = join(root, 'with-replay');
    await run(tinyConfig('dqn', kept, { 'train.epochs': '1' }), null);
    expect(readdirSync(lastDir(kept))).toContain('replay.safetensors');
    // A ring that has not wrapped is written up to its size and read back whole, zeros after it
    // (the exact-resume test above resumes from such a checkpoint).
    const partial = await loadDqnCheckpoint(storage, lastDir(kept));
    const size = partial.state.replay.size;
    expect(size).toBeGreaterThan(0);
    expect(size).toBeLessThan(200);
    expect(partial.snapshot.replay.f.length).toBe(200 * 110);
    expect(partial.snapshot.replay.f.subarray(size * 110).every((x) => x === 0)).toBe(true);
    expect(partial.snapshot.replay.f.subarray(0, 110).some((x) => x !== 0)).toBe(true);
    const bytes = statSync(join(lastDir(kept), 'replay.safetensors')).size;
    expect(bytes).toBeLessThan(200 * 111 * 4);
  }, 180_000);

  it('validation beside the next train phase (validatesBeside): the same log and checkpoints, epoch e validated after collection e + 1', async () => {
    const events: string[] = [];
    // A device engine's validation reads the net in place when it runs: so does this one's.
    const wrap =
      (beside: boolean) =>
      (inner: DqnEngine, cfg: Config, data: Awaited<ReturnType<typeof prepareData>>): DqnEngine => {
        const head = headOf('c51');
        const layout = duelingLayout(head, cfg.dqn.atoms, cfg.dqn.iqnEmbed);
        let collects = 0;
        let trains = 0;
        return {
          ...inner,
          validatesBeside: beside,
          collect: (round, epsilon) => {
            events.push(`collect ${++collects}`);
            return inner.collect(round, epsilon);
          },
          train: async (round) => {
            const out = await inner.train(round);
            events.push(`train ${++trains}`);
            return out;
          },
          validate: async (split, barsPerYear) => {
            events.push(`validate after collect ${collects}, train ${trains}`);
            const online = (await inner.params()).online.slice();
            const policy = dqnGreedyPolicy(head, layout, online, c51Support(cfg.dqn), cfg.dqn.iqnActTau);
            return backtest(data.market, split, cfg.env, policy, barsPerYear);
          },
        };
      };
    const run = async (name: string, beside: boolean, over: Record<string, string>, signal?: AbortSignal) => {
      events.length = 0;
      const onEpoch = (record: { epoch: number }) => {
        events.push(`end ${record.epoch}`);
        if (signal) stop.abort();
      };
      const result = await train(
        'c51',
        { 'train.epochs': '3', ...over },
        { name, wrap: wrap(beside), run: { onEpoch, signal } },
      ).catch((err: Error) => err);
      return { outDir: join(root, name), result, events: [...events] };
    };
    const stop = new AbortController();
    const files = (dir: string) =>
      Object.fromEntries(
        readdirSync(dir)
          .filter((f) => f !== 'state.json')
          .map((f) => [
            f,
            createHash('sha256')
              .update(readFileSync(join(dir, f)))
              .digest('hex'),
          ]),
      );
    const state = (dir: string) => {
      const s = JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8'));
      s.state.record = deterministic(s.state.record);
      s.state.config.train.outDir = '';
      return s;
    };
    const inOrder = await run('order-plain', false, {});
    const beside = await run('order-beside', true, {});
    expect(inOrder.events).toEqual([
      'collect 1',
      'train 1',
      'validate after collect 1, train 1',
      'end 1',
      'collect 2',
      'train 2',
      'validate after collect 2, train 2',
      'end 2',
      'collect 3',
      'train 3',
      'validate after collect 3, train 3',
      'end 3',
    ]);
    // Epoch e's validation starts before the next collection and overlaps it and the next train
    // phase; epoch e ends (log, checkpoints) after that train phase.
    expect(beside.events).toEqual([
      'collect 1',
      'train 1',
      'validate after collect 1, train 1',
      'collect 2',
      'train 2',
      'end 1',
      'validate after collect 2, train 2',
      'collect 3',
      'train 3',
      'end 2',
      'validate after collect 3, train 3',
      'end 3',
    ]);
    const logA = (await readLog(storage, inOrder.outDir)).map(deterministic);
    expect(logA).toHaveLength(3);
    expect((await readLog(storage, beside.outDir)).map(deterministic)).toEqual(logA);
    for (const dir of [lastDir, bestDir]) {
      expect(files(dir(beside.outDir))).toEqual(files(dir(inOrder.outDir)));
      expect(state(dir(beside.outDir))).toEqual(state(dir(inOrder.outDir)));
    }
    // A snapshot every epoch is needed for that: with last/ every 2 epochs and the replay in it, in order.
    const sparse = await run('order-sparse', true, { 'train.checkpointEvery': '2' });
    expect(sparse.events).toEqual(inOrder.events);
    // A stop asked during epoch 1 ends the run after epoch 1 either way; last/ holds epoch 1.
    const stopped = await run('order-stop', true, {}, stop.signal);
    expect(stopped.result).toBeInstanceOf(RunStoppedError);
    expect((stopped.result as Error).message).toMatch(
      /stopped after epoch 1; a resume continues from last\/ \(epoch 1\)/,
    );
    expect((await readLog(storage, stopped.outDir)).map((r) => r.epoch)).toEqual([1]);
    expect(state(lastDir(stopped.outDir)).state.epoch).toBe(1);
  }, 180_000);

  it('--backend auto takes the device for the DQN family as for PPO: hardware WebGPU here, else the CPU', async () => {
    const auto = async (
      name: string,
      backendOptions: RunOptions['backendOptions'],
      stopAtCollect = false,
    ) => {
      const info: string[] = [];
      const cfg = tinyConfig('dqn', join(root, name), { 'train.backend': 'auto', 'train.epochs': '1' });
      const run = runTraining({
        cfg,
        resume: null,
        storage,
        backendOptions,
        onInfo: (l) => info.push(l),
        // The hardware-looking adapter is lavapipe with a GPU's tuning: its first run of those
        // kernels compiles them for minutes on a cold shader cache. The engine is built on the
        // routed backend before the first phase, so the run stops there.
        onPhase: (epoch, phase) => {
          if (stopAtCollect) throw new Error(`stopped at epoch ${epoch} ${phase}`);
        },
      });
      if (stopAtCollect) {
        await expect(run).rejects.toThrow('stopped at epoch 1 collect');
        return { backend: null, info };
      }
      return { backend: (await run).backend, info };
    };
    const gpu = await auto('auto-gpu', { loadCuda: noCudaDevice, gpu: hardwareLookingGpu() }, true);
    expect(gpu.info).toEqual(['backend cuda skipped: no CUDA device', 'backend webgpu: NVIDIA H200']);
    // Lavapipe is a software adapter, which auto skips, saying so.
    const cpu = await auto('auto-cpu', { loadCuda: noCudaModule });
    expect(cpu.backend).toBe('cpu');
    expect(cpu.info).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^backend webgpu skipped: only a software adapter/),
        'backend cpu: CPU reference',
      ]),
    );
    expect((await readLog(storage, join(root, 'auto-cpu')))[0].backend).toBe('cpu');
  }, 120_000);

  it('refuses a replay larger than the CPU engine allocates, with one line', async () => {
    expect(() => tinyConfig('c51', join(root, 'big'), { 'dqn.replayCapacity': '20000000' })).toThrow(
      /dqn\.replayCapacity: must be an integer in \[dqn\.batch, 9673349\]/,
    );
    // The engine's own check stands behind the config's, for configs built without validateConfig.
    const cfg = tinyConfig('c51', join(root, 'big'));
    cfg.dqn.replayCapacity = 20_000_000;
    const data = await prepareData(cfg);
    expect(() => createCpuDqnEngine(cfg, data.market, data.splits.train)).toThrow(
      /dqn.replayCapacity 20000000 needs 8.3 GiB .* lower dqn.replayCapacity/,
    );
  });

  it('iqn: trains with finite losses, and its run view and report.html draw from its checkpoint', async () => {
    const { records } = await train('iqn');
    for (const r of records) for (const v of Object.values(r.losses)) expect(Number.isFinite(v)).toBe(true);
    expect(records[1].losses.total).toBeGreaterThan(0);
    const outDir = join(root, 'iqn');
    const view = await runViewOf(storage, outDir, undefined);
    expect(view.epochs.map((p) => p.losses)).toEqual(
      records.map((r) => [r.losses.total, r.losses.td, r.epsilon]),
    );
    expect(view.subtitle).toMatch(/^cpu backend, .*IQN/);
    expect(view.curves!.policy.length).toBeGreaterThan(100);
    expect(view.verdict).toHaveLength(2);
    const html = readFileSync(await writeReport(outDir), 'utf8');
    expect(html).toContain('"algo":"iqn"');
    expect(html).not.toContain('"curves":null');
  }, 180_000);
});
