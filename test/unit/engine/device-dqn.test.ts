/**
 * The device DQN engine (collect_dqn + DeviceReplay + DeviceDqnLearner) against the CPU engine
 * over the TS references, for the plain, C51 and IQN heads: the same rollouts, losses, params, replay
 * ring and PER tree to float noise over two epochs, on the CPU backend (the kernels' TS twins) and
 * on WebGPU (lavapipe here; FOXHUNT_REQUIRE_WEBGPU=1 fails instead of skipping); what crosses to
 * the host (collect: the stats sections only; train: one run, then one read of the epoch's TD
 * history and the norm sum); a snapshot taken after epoch 1 and restored into a fresh device
 * engine continues exactly as the original; the CUDA twins of the replay, PER and learner kernels
 * on the g++ emulator against the CPU engine; curiosity (host-side) as the CPU engine's;
 * `bench train --algo dqn|c51`'s measuring.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { CpuBackend, createCpuBackend } from '../../../src/backend/cpu/index.js';
import { createBackend } from '../../../src/backend/index.js';
import { type Backend, BackendUnavailableError, type Dispatch } from '../../../src/backend/types.js';
import { type Config, loadConfig } from '../../../src/config.js';
import { dqnCollectorOptions, trainCollectPrecision } from '../../../src/device/collect.js';
import { createCpuDqnEngine } from '../../../src/engine/cpu_dqn.js';
import { besideTile, collectorBesideTile, createDeviceDqnEngine } from '../../../src/engine/device_dqn.js';
import type { DqnEngine } from '../../../src/engine/dqn_engine.js';
import { benchDqnTrain, targetPhases } from '../../../src/train/dqn_bench.js';
import { prepareData } from '../../../src/train/run.js';
import { CudaEmuBackend, emuUnavailable } from '../../emu/backend.js';
import { smallDqnConfig } from '../../support/dqn.js';

const config = smallDqnConfig;

/** IQN with 4 taus a sample (learning and acting), to keep the reference quick. */
const IQN = { 'dqn.iqnTau': '4', 'dqn.iqnActTau': '4' };
const configOf = (algo: string, extra: Record<string, string> = {}): Config =>
  config(algo, algo === 'iqn' ? { ...IQN, ...extra } : extra);

const maxDiff = (a: Float32Array, b: Float32Array) =>
  a.reduce((m, x, k) => Math.max(m, Math.abs(x - b[k])), 0);

/** Two epochs of collect + train on each engine; the per-epoch stats and the final params. */
async function twoEpochs(engine: DqnEngine) {
  const out = [];
  for (const round of [0, 1]) {
    const collected = await engine.collect(round, 0.5);
    const trained = await engine.train(round);
    out.push({ collected, trained });
  }
  return { epochs: out, params: await engine.params() };
}

const backends: Backend[] = [];
afterAll(() => {
  for (const b of backends) b.destroy();
});

async function webgpu(ctx: { skip: (note: string) => void }): Promise<Backend> {
  try {
    const b = await createBackend('webgpu');
    backends.push(b);
    return b;
  } catch (err) {
    if (err instanceof BackendUnavailableError && process.env.FOXHUNT_REQUIRE_WEBGPU !== '1') {
      ctx.skip(`WebGPU unavailable: ${err.message}`);
    }
    throw err;
  }
}

function cpuBackend(): Backend {
  const b = createCpuBackend();
  backends.push(b);
  return b;
}

describe('device DQN engine', () => {
  for (const [algo, where] of [
    ['dqn', 'cpu'],
    ['c51', 'cpu'],
    ['iqn', 'cpu'],
    ['dqn', 'webgpu'],
    ['c51', 'webgpu'],
    ['iqn', 'webgpu'],
  ] as const) {
    it(`${algo} on the ${where} backend: the CPU engine's two epochs to float noise`, async (ctx) => {
      const cfg = configOf(algo);
      const backend = where === 'cpu' ? cpuBackend() : await webgpu(ctx);
      const { market, splits } = await prepareData(cfg);
      const dev = createDeviceDqnEngine(cfg, market, splits.train, backend);
      const cpu = createCpuDqnEngine(cfg, market, splits.train);
      try {
        expect(dev.backend).toBe(where);
        const [a, b] = [await twoEpochs(dev), await twoEpochs(cpu)];
        for (let e = 0; e < 2; e++) {
          const [x, y] = [a.epochs[e], b.epochs[e]];
          expect(x.collected.steps).toBe(y.collected.steps);
          expect(x.collected.episodesDone).toBe(y.collected.episodesDone);
          expect(x.collected.reward.total).toBeCloseTo(y.collected.reward.total, 5);
          expect(x.trained.steps).toBe(5);
          expect(x.trained.replaySize).toBe(y.trained.replaySize);
          expect(x.trained.beta).toBe(y.trained.beta);
          expect(x.trained.loss).toBeCloseTo(y.trained.loss, 4);
          expect(x.trained.td).toBeCloseTo(y.trained.td, 4);
          expect(x.trained.gradNorm).toBeCloseTo(y.trained.gradNorm, 3);
        }
        expect(maxDiff(a.params.online, b.params.online)).toBeLessThan(1e-4);
        expect(maxDiff(a.params.target, b.params.target)).toBeLessThan(1e-4);
        // The device ring and PER tree (inserts and 10 priority updates) equal the host's: the
        // indices exactly, the values to f32 pow / fused multiply-add noise.
        const [x, y] = [await dev.snapshot(), await cpu.snapshot()];
        expect([x.replay.head, x.replay.size]).toEqual([y.replay.head, y.replay.size]);
        expect(x.replay.i).toEqual(y.replay.i);
        expect(maxDiff(x.replay.f, y.replay.f)).toBeLessThan(1e-5);
        expect(maxDiff(x.per.tree, y.per.tree)).toBeLessThan(1e-4 * y.per.tree[1]);
        expect(x.per.maxPriority).toBeCloseTo(y.per.maxPriority, 5);
        // Without the replay: nothing of the ring comes back, the rest does.
        const slim = await dev.snapshot(false);
        expect([slim.replay.f.length, slim.replay.i.length, slim.per.tree.length]).toEqual([0, 0, 0]);
        expect([slim.replay.head, slim.replay.size, slim.per.maxPriority]).toEqual([
          x.replay.head,
          x.replay.size,
          x.per.maxPriority,
        ]);
        expect(slim.optim).toEqual(x.optim);
        // The priority updates ran: the filled leaves no longer all hold the insert priority.
        const leaves = x.per.tree.length / 2;
        expect(new Set(x.per.tree.subarray(leaves, leaves + x.replay.size)).size).toBeGreaterThan(10);
        // Two epochs of Adam moved the params by several times the tolerance.
        const [fresh] = [createCpuDqnEngine(cfg, market, splits.train)];
        expect(maxDiff(a.params.online, (await fresh.params()).online)).toBeGreaterThan(5e-4);
      } finally {
        dev.destroy();
        cpu.destroy();
      }
    });
  }

  const unavailable = emuUnavailable();
  it.skipIf(unavailable !== null)(
    `dqn, c51 and iqn with the CUDA twins on the emulator: the CPU engine's two epochs${unavailable ? ` (skipped: ${unavailable})` : ''}`,
    async () => {
      // collect_dqn runs its TS twin here (its CUDA twin runs in the parity suite's emu cases).
      class Emulator extends CudaEmuBackend {
        override run(list: Dispatch[]): void {
          for (const d of list) {
            if (/^(collect|pack)/.test(d.kernel.name)) CpuBackend.prototype.run.call(this, [d]);
            else super.run([d]);
          }
        }
      }
      for (const algo of ['dqn', 'c51', 'iqn']) {
        const cfg = configOf(algo, { 'dqn.stepsPerEpoch': '3', 'dqn.targetEvery': '2' });
        const backend = new Emulator();
        backends.push(backend);
        const { market, splits } = await prepareData(cfg);
        const dev = createDeviceDqnEngine(cfg, market, splits.train, backend);
        const cpu = createCpuDqnEngine(cfg, market, splits.train);
        try {
          for (const round of [0, 1]) {
            const [a, b] = [await dev.collect(round, 0.5), await cpu.collect(round, 0.5)];
            expect(a.reward.total).toBeCloseTo(b.reward.total, 5);
            const [x, y] = [await dev.train(round), await cpu.train(round)];
            expect(x.steps).toBe(3);
            expect(x.loss).toBeCloseTo(y.loss, 4);
            expect(x.td).toBeCloseTo(y.td, 4);
            expect(x.gradNorm).toBeCloseTo(y.gradNorm, 4);
          }
          const [p, q] = [await dev.snapshot(), await cpu.snapshot()];
          expect(p.replay.i).toEqual(q.replay.i);
          expect(maxDiff(p.replay.f, q.replay.f)).toBeLessThan(1e-5);
          expect(maxDiff(p.per.tree, q.per.tree)).toBeLessThan(1e-4 * q.per.tree[1]);
          expect(maxDiff(p.params.online, q.params.online)).toBeLessThan(1e-5);
          expect(maxDiff(p.params.target, q.params.target)).toBeLessThan(1e-5);
          expect(backend.launches).toBeGreaterThan(100);
        } finally {
          dev.destroy();
          cpu.destroy();
        }
      }
    },
    600_000,
  );

  it('train.precision on CUDA: TF32 collection for the plain head (what bench collect times), exact for C51 and IQN; the learner in TF32', async () => {
    // A CPU backend presenting itself as an sm_80 CUDA device builds CUDA's launches (the TS
    // references run them).
    for (const [algo, precision, collectTf32] of [
      ['dqn', 'auto', true],
      ['dqn', 'exact', false],
      ['c51', 'auto', false],
      ['iqn', 'auto', false],
    ] as const) {
      const cfg = configOf(algo, { 'train.precision': precision, 'dqn.stepsPerEpoch': '1' });
      const backend = cpuBackend();
      Object.defineProperty(backend, 'kind', { value: 'cuda' });
      // sm_80: no clusters, so the tiled collector (the CPU backend has no cluster twin).
      const info = backend.info;
      Object.defineProperty(backend, 'info', {
        value: { ...info, limits: { ...info.limits, computeCapability: '8.0' } },
      });
      const seen: Dispatch[] = [];
      const run = backend.run.bind(backend);
      backend.run = (list: Dispatch[]) => {
        seen.push(...list);
        run(list);
      };
      const { market, splits } = await prepareData(cfg);
      const dev = createDeviceDqnEngine(cfg, market, splits.train, backend);
      try {
        await dev.collect(0, 1);
        await dev.train(0);
        const collect = seen.filter((d) => d.kernel.name.startsWith('collect_dqn'));
        expect(collect.length, algo).toBeGreaterThan(0);
        expect(
          collect.every((d) => (d.kernel.constants?.TF32 === 1) === collectTf32),
          `${algo} ${precision}`,
        ).toBe(true);
        const matmuls = seen.filter((d) => d.kernel.name === 'mlp_forward');
        expect(matmuls.length).toBeGreaterThan(0);
        expect(matmuls.every((d) => (d.kernel.constants?.TF32 === 1) === (precision === 'auto'))).toBe(true);
      } finally {
        dev.destroy();
      }
    }
    expect(trainCollectPrecision('ppo', 'tf32')).toBe('tf32');
    expect(trainCollectPrecision('dqn', 'exact')).toBe('exact');
  });

  it('collect reads back only the stats sections; train records one run and reads back once', async () => {
    const cfg = config('dqn');
    const log: string[] = [];
    const inner = cpuBackend();
    const backend = new Proxy(inner, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (name === 'run') log.push('run');
          if (name === 'download') log.push(`download ${args[2]}`);
          return value.apply(target, args);
        };
      },
    });
    const { market, splits } = await prepareData(cfg);
    const dev = createDeviceDqnEngine(cfg, market, splits.train, backend);
    const cpu = createCpuDqnEngine(cfg, market, splits.train);
    try {
      const count = 4 * 16;
      log.length = 0;
      const [x, y] = [await dev.collect(0, 0.5), await cpu.collect(0, 0.5)];
      expect(x).toEqual(y);
      // rewards, 5 components (f32) and dones, truncateds (i32) of 64 samples.
      expect(log.filter((l) => l.startsWith('download'))).toEqual([
        `download ${4 * 6 * count}`,
        `download ${4 * 2 * count}`,
      ]);
      log.length = 0;
      const [a, b] = [await dev.train(0), await cpu.train(0)];
      expect(a.steps).toBe(5);
      expect(a.loss).toBeCloseTo(b.loss, 5);
      // 5 steps x (2 x 16) TD floats, then the gradient-norm sum; nothing before the one run.
      expect(log.slice(0, 3)).toEqual(['run', `download ${4 * 5 * 2 * 16}`, 'download 4']);
      expect(log.filter((l) => l.startsWith('download'))).toHaveLength(2);
    } finally {
      dev.destroy();
      cpu.destroy();
    }
  });

  for (const [algo, polyak] of [
    ['dqn', false],
    ['iqn', false],
    ['dqn', true],
  ] as const) {
    const target = polyak ? "a Polyak target (C51's default)" : 'a target copy every 3rd step';
    it(`${algo} with ${target}: replays each train epoch as one captured graph once the ring is full, as the direct runs compute`, async () => {
      // A backend with `capture` (as CUDA's): a graph here keeps the dispatches as recorded.
      let captures = 0;
      let replays = 0;
      const capturing = Object.assign(cpuBackend(), {
        capture(list: Dispatch[]) {
          captures++;
          const frozen = list.map((d) => ({ ...d, uniforms: { ...d.uniforms } }));
          return {
            replay() {
              replays++;
              capturing.run(frozen);
            },
            destroy() {},
          };
        },
      });
      // 64 samples per epoch fill the 256-row ring by epoch 4; 5 steps per epoch and a target copy
      // every 3rd step give three target phases, so the later epochs replay graphs of earlier ones
      // (IQN: its taus' Philox step comes from a device word, so replays draw new taus). A Polyak
      // target moves after every step: one phase, one graph.
      const cfg = configOf(algo, polyak ? { 'dqn.targetEvery': '0', 'dqn.polyakTau': '0.25' } : {});
      const { market, splits } = await prepareData(cfg);
      const captured = createDeviceDqnEngine(cfg, market, splits.train, capturing);
      const direct = createDeviceDqnEngine(cfg, market, splits.train, cpuBackend());
      try {
        for (let round = 0; round < 10; round++) {
          for (const e of [captured, direct]) await e.collect(round, 0.5);
          const [a, b] = [await captured.train(round), await direct.train(round)];
          expect(a).toEqual(b);
        }
        expect(captures).toBe(polyak ? 1 : 3);
        expect(replays).toBeGreaterThan(captures);
        const [p, q] = [await captured.snapshot(), await direct.snapshot()];
        expect(p.replay.size).toBe(256);
        expect(p).toEqual(q);
      } finally {
        captured.destroy();
        direct.destroy();
      }
    });
  }

  for (const [algo, where] of [
    ['c51', 'cpu'],
    ['c51', 'webgpu'],
    ['iqn', 'cpu'],
    ['iqn', 'webgpu'],
  ] as const) {
    it(`${algo} on the ${where} backend: a snapshot restored into a fresh engine continues exactly`, async (ctx) => {
      const cfg = configOf(algo);
      const backend = where === 'cpu' ? cpuBackend() : await webgpu(ctx);
      const { market, splits } = await prepareData(cfg);
      const first = createDeviceDqnEngine(cfg, market, splits.train, backend);
      const second = createDeviceDqnEngine(cfg, market, splits.train, backend);
      try {
        await first.collect(0, 0.5);
        await first.train(0);
        const snap = await first.snapshot();
        await second.restore(snap);
        const [a, b] = [
          { collected: await first.collect(1, 0.4), trained: await first.train(1) },
          { collected: await second.collect(1, 0.4), trained: await second.train(1) },
        ];
        expect(b).toEqual(a);
        const [p, q] = [await first.snapshot(), await second.snapshot()];
        expect(q).toEqual(p);
        expect(p.trainSteps).toBe(10);
        // The snapshot restores into the CPU engine too (interchangeable checkpoints).
        const cpu = createCpuDqnEngine(cfg, market, splits.train);
        await cpu.restore(snap);
        expect(await cpu.snapshot()).toEqual(snap);
      } finally {
        first.destroy();
        second.destroy();
      }
    });
  }

  it('trains curiosity like the CPU engine when the bonus is on', async () => {
    const cfg = loadConfig(undefined, {
      'train.algo': 'dqn',
      'data.synthBars': '3000',
      'env.episodeBars': '64',
      'env.curiosityScale': '1',
      'env.curiosityBatch': '20',
      'rollout.episodes': '4',
      'rollout.steps': '16',
      'dqn.batch': '16',
      'dqn.stepsPerEpoch': '2',
      'dqn.replayCapacity': '256',
    });
    const backend = cpuBackend();
    const { market, splits } = await prepareData(cfg);
    const dev = createDeviceDqnEngine(cfg, market, splits.train, backend);
    const cpu = createCpuDqnEngine(cfg, market, splits.train);
    try {
      await expect(dev.trainCuriosity(0)).rejects.toThrow('device dqn engine: trainCuriosity needs a launch');
      for (const round of [0, 1]) {
        const [x, y] = [await dev.collect(round, 0.5), await cpu.collect(round, 0.5)];
        expect(x.reward.curiosity).toBeGreaterThan(0);
        expect(x.reward.curiosity).toBeCloseTo(y.reward.curiosity, 6);
        const [m, n] = [await dev.trainCuriosity(round), await cpu.trainCuriosity(round)];
        expect(m).toBeCloseTo(n, 6);
      }
      const [p, q] = [await dev.params(), await cpu.params()];
      expect(maxDiff(p.curiosity, q.curiosity)).toBeLessThan(1e-6);
    } finally {
      dev.destroy();
      cpu.destroy();
    }
  });
});

describe('bench train --algo dqn|c51', () => {
  it('times each phase of measured epochs and refuses a replay smaller than a batch', async () => {
    const cfg = config('c51');
    const backend = cpuBackend();
    const data = await prepareData(cfg);
    const lines: string[] = [];
    const r = await benchDqnTrain({
      backend,
      cfg,
      market: data.market,
      splits: data.splits,
      barsPerYear: data.barsPerYear,
      repeats: 2,
      onProgress: (line) => lines.push(line),
    });
    expect(lines.map((l) => l.split(':')[0])).toEqual(['warm-up', 'epoch 1', 'epoch 2']);
    expect(r).toMatchObject({ algo: 'c51', episodes: 4, steps: 16, batch: 16, trainSteps: 5 });
    for (const ms of Object.values(r.times)) expect(ms).toBeGreaterThan(0);
    // No validation beside the next train phase on the CPU: an epoch is its phases in a row.
    expect(r.overlapped).toBe(false);
    const phases = r.times.collectMs + r.times.trainMs + r.times.validateMs;
    expect(r.times.epochMs).toBeGreaterThanOrEqual(phases - 1e-9);
    expect(r.times.epochMs).toBeLessThan(phases + 50);
    expect(r.stepMs).toBeCloseTo(r.times.trainMs / 5, 9);
    expect(r.stepAloneMs).toBe(r.stepMs);
    // A device backend that captures graphs: the ring is filled first (256 rows / 64 per
    // collection), then one warm-up epoch per target phase (targetEvery 3, 5 steps: 3) captures
    // each phase's graph, so the measured epochs replay graphs and capture none.
    // Its validate phase is training's: validate_dqn, one run per epoch (the validation split is
    // shorter than a launch's VALIDATE_CHUNK_STEPS; speculation's first batch finishes it on the CPU).
    let captures = 0;
    let validations = 0;
    const device = createCpuBackend();
    backends.push(device);
    let beside = 0;
    let withBeside = false;
    const capturing = new Proxy(device, {
      get(target, name) {
        if (name === 'kind') return 'webgpu';
        if (name === 'runBeside')
          return withBeside
            ? (list: Dispatch[]) => {
                beside += list.length;
                target.run(list);
              }
            : undefined;
        if (name === 'capture')
          return (list: Dispatch[]) => {
            captures++;
            return { replay: () => target.run(list), destroy() {} };
          };
        if (name === 'run')
          return (list: Dispatch[]) => {
            // One run a validation: the sequential launch, or (this fake WebGPU speculates) the
            // first batch of rounds, whose CPU twin runs the whole backtest.
            if (list.some((d) => d.kernel.name === 'validate_dqn')) validations++;
            target.run(list);
          };
        const value = Reflect.get(target, name, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    lines.length = 0;
    const onDevice = { ...data, backend: capturing, cfg, barsPerYear: data.barsPerYear };
    const timed = await benchDqnTrain({ ...onDevice, repeats: 2, onProgress: (line) => lines.push(line) });
    expect(lines.map((l) => l.split(':')[0])).toEqual([
      'fill',
      'warm-up',
      'warm-up',
      'warm-up',
      'epoch 1',
      'epoch 2',
    ]);
    expect(lines[0]).toMatch(/^fill: 4 collections in \d+ ms$/);
    expect(captures).toBe(3);
    expect(validations).toBe(5);
    expect(timed.overlapped).toBe(false);
    // A backend with a second queue: each epoch's validation beside the next train phase, as
    // training runs it (the last one after the loop).
    withBeside = true;
    validations = 0;
    const overlapped = await benchDqnTrain({ ...onDevice, repeats: 1 });
    expect(overlapped.overlapped).toBe(true);
    expect(overlapped.stepAloneMs).toBeGreaterThan(0);
    expect(overlapped.stepAloneMs).not.toBe(overlapped.stepMs);
    expect([validations, beside]).toEqual([0, 4]);
    // One train step's launches, each timed alone, in the order the epoch records them.
    const names = timed.stepKernels.map((k) => k.launch);
    expect(names.slice(0, 2)).toEqual(['per_sample', 'per_sample']);
    expect(names.filter((n) => n === 'mlp_forward')).toHaveLength(8);
    expect(names.filter((n) => n === 'mlp_backward')).toHaveLength(4);
    expect(names).toContain('dqn_loss');
    expect(names.indexOf('adam_step')).toBe(names.length - 3);
    for (const k of timed.stepKernels) {
      expect(k.ms).toBeGreaterThan(0);
      expect(k.groups).toBeGreaterThan(0);
    }
    expect(timed.stepDeviceMs).toBeGreaterThan(0);
    expect(timed.trainDeviceMs).toBeGreaterThan(0);
    expect(r.stepKernels).toEqual([]);
    expect(targetPhases(1000, 300)).toBe(10);
    expect(targetPhases(0, 300)).toBe(1);
    expect(targetPhases(7, 300)).toBe(7);
    const big = loadConfig(undefined, {
      'train.algo': 'dqn',
      'data.synthBars': '3000',
      'rollout.episodes': '2',
      'rollout.steps': '8',
      'dqn.batch': '32',
    });
    await expect(
      benchDqnTrain({ ...data, backend, cfg: big, barsPerYear: data.barsPerYear, repeats: 1 }),
    ).rejects.toThrow(
      /^bench train: epoch 1 took 0 train steps, not 300 \(the replay holds 16 rows, a batch is 32\)/,
    );
  });
});

describe('besideTile', () => {
  const upTo = (max: number) => (e: number) => e <= max;
  it('doubles the tiled collector until its blocks and the validation cluster fit the SMs', () => {
    // C51 at N = 128 on 132 SMs beside a 16-CTA cluster: 128 one-episode blocks do not fit 116 SMs.
    expect(besideTile(128, 1, 132, 16, upTo(32))).toBe(2);
    expect(besideTile(1024, 8, 132, 16, upTo(32))).toBe(16);
    // Already fitting, no SM count, the largest tile reached, no SM left: unchanged.
    expect(besideTile(64, 1, 132, 16, upTo(32))).toBeUndefined();
    expect(besideTile(128, 1, undefined, 16, upTo(32))).toBeUndefined();
    expect(besideTile(65536, 32, 132, 16, upTo(32))).toBeUndefined();
    expect(besideTile(128, 1, 16, 16, upTo(32))).toBeUndefined();
    expect(besideTile(128, 1, 20, 16, upTo(4))).toBe(4);
  });

  it("never widens past a tile the collector's workgroup memory holds (C51 at N >= 2048 on an H100)", () => {
    // The CPU backend dressed as an H100 (the tile choice reads only kind and limits).
    const h100 = createCpuBackend();
    const limits = {
      computeCapability: '9.0',
      maxSharedPerBlock: 49152,
      maxSharedPerBlockOptin: 232448,
      maxComputeWorkgroupStorageSize: 49152,
      smCount: 132,
    };
    Object.defineProperty(h100, 'kind', { value: 'cuda' });
    Object.defineProperty(h100, 'info', { value: { ...h100.info, kind: 'cuda', limits } });
    for (const [n, tile] of [
      [128, 2],
      [1024, 16],
      [2048, undefined],
      [8192, undefined],
    ] as const) {
      const cfg = loadConfig(undefined, { 'train.algo': 'c51', 'rollout.episodes': String(n) });
      const init = {
        backend: h100,
        market: null as never,
        split: null as never,
        cfg,
        algo: 'c51' as const,
        curiosity: false,
      };
      const wider = collectorBesideTile(init, 16);
      expect(wider, `N = ${n}`).toBe(tile);
      // The collector takes it: dqnCollectorOptions throws "no tile fits" for a tile too wide.
      expect(
        dqnCollectorOptions({ ...init, tile: wider === undefined ? undefined : { tileEpisodes: wider } })
          .tileEpisodes,
      ).toBe(wider ?? dqnCollectorOptions(init).tileEpisodes);
    }
  });
});
