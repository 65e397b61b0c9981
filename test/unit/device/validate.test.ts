import { readFileSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { cudaPreamble } from '../../../src/backend/cuda/preamble.js';
import type { Backend } from '../../../src/backend/types.js';
import { packUniforms, uniformBytes } from '../../../src/backend/uniforms.js';
import { cloneDefaults, loadConfig } from '../../../src/config.js';
import {
  DeviceValidator,
  type SharedValidateBuffers,
  uploadValidateBuffers,
} from '../../../src/device/validate.js';
import { createDevicePpoEngine } from '../../../src/engine/device_ppo.js';
import { type EnvParams, envParams } from '../../../src/env/params.js';
import { ENV_F } from '../../../src/env/state.js';
import { type BacktestResult, backtest, policyRollout } from '../../../src/eval/backtest.js';
import type { Metrics } from '../../../src/eval/metrics.js';
import { ppoGreedyPolicy } from '../../../src/eval/policies.js';
import type { TypedArray } from '../../../src/kernels/reference.js';
import {
  traceFromOutputs,
  VALIDATE_CHUNK_STEPS,
  VALIDATE_ENV_INTS,
  validateChunkSteps,
  validateChunks,
  validateOutputBytes,
  validatePolicyKernel,
  validatePolicySpec,
  validateUniforms,
} from '../../../src/kernels/validate_policy.js';
import { initParams } from '../../../src/nets/forward.js';
import { NetId, ppoActorLayout } from '../../../src/nets/layout.js';
import { trainPpo } from '../../../src/train/ppo.js';
import { prepareData } from '../../../src/train/run.js';
import { MemoryStorage } from '../../../src/train/storage.js';
import { CudaEmuBackend } from '../../emu/backend.js';
import { buildEmu, emuUnavailable, runEmu, writeGenerated } from '../../emu/emu.js';
import { useWebgpu } from '../../support/webgpu.js';
import { randomMarket } from '../env/fixtures.js';

const market = randomMarket(400, 5);
const split = { start: 50, end: 350 };
const envCfg = cloneDefaults().env;
const params = envParams(envCfg);
const collapsing: EnvParams = { ...params, collapseFraction: Math.fround(0.999) };
const BARS_PER_YEAR = 252 * 390;

const actor = (() => {
  const layout = ppoActorLayout();
  const p = initParams(layout, NetId.Actor, 3);
  const out = layout.layers[layout.layers.length - 1];
  for (let k = out.wOffset; k < out.wOffset + out.in * out.out; k++) p[k] = Math.fround(p[k] * 20);
  return p;
})();

/**
 * Every metric within 1e-7 relative (turnover sums the traded notional, which the device rounds
 * to f32); return, Sharpe and the rest come from the same equity curve.
 */
function expectSameMetrics(device: Metrics, host: Metrics): void {
  for (const [name, value] of Object.entries(host)) {
    const got = (device as unknown as Record<string, number>)[name];
    expect(Math.abs(got - value), `${name}: ${got} vs ${value}`).toBeLessThanOrEqual(
      1e-7 * Math.max(1, Math.abs(value)),
    );
  }
}

function sharedBuffers(backend: Backend): SharedValidateBuffers {
  return uploadValidateBuffers(backend, market, params.entropyTable, actor);
}

const STEPS = split.end - split.start - 1;

/** The step at which the host rollout under `p` collapses (the policy's last call), or STEPS. */
function collapseStep(p: EnvParams): number {
  const greedy = ppoGreedyPolicy(actor);
  let calls = 0;
  policyRollout(market, split, p, (state, bar) => {
    calls++;
    return greedy(state, bar);
  });
  return calls < STEPS ? calls - 1 : STEPS;
}

/** The backtest on `backend` in launches of at most `chunkSteps` steps. */
async function chunkedRun(backend: Backend, p: EnvParams, chunkSteps: number): Promise<BacktestResult> {
  const shared = sharedBuffers(backend);
  const v = new DeviceValidator(backend, shared, p, split, { kind: 'ppo' }, { chunkSteps });
  try {
    expect(v.dispatches().length).toBe(Math.ceil(STEPS / chunkSteps));
    return await v.run(BARS_PER_YEAR);
  } finally {
    v.destroy();
    for (const b of shared) backend.destroyBuffer(b);
  }
}

/** The same trace, bit for bit. */
function expectSameTrace(got: BacktestResult, want: BacktestResult, what: string): void {
  expect(Array.from(got.actions), `${what}: actions`).toEqual(Array.from(want.actions));
  expect(Array.from(got.trace.equity), `${what}: equity`).toEqual(Array.from(want.trace.equity));
  expect(Array.from(got.trace.exposure), `${what}: exposure`).toEqual(Array.from(want.trace.exposure));
  expect(Array.from(got.trace.traded), `${what}: traded`).toEqual(Array.from(want.trace.traded));
}

/**
 * Chunk sizes that cut the backtest under `p` at awkward places: one step a launch and 37 (not a
 * divisor of 299) on the default simulator; under a collapse at step c, chunks of c (the collapse
 * opens the second launch), c + 1 (it closes the first: the second starts stopped), c + 10 (it
 * falls inside the first, whose tail and every later launch stay flat) and, where c > 3, one of 3
 * to 7 steps that puts it inside a later launch.
 */
function awkwardChunks(p: EnvParams): number[] {
  if (p === params) return [1, 37];
  const c = collapseStep(p);
  expect(c, 'the collapse step').toBeGreaterThanOrEqual(1);
  expect(c + 10, 'the collapse step').toBeLessThan(STEPS);
  // Where the collapse comes late enough: a short chunk that puts it inside a later launch
  // (neither its first nor its last step).
  const inner = [3, 4, 5, 6, 7].find((k) => k < c && c % k !== 0 && c % k !== k - 1);
  return inner === undefined ? [c, c + 1, c + 10] : [c, c + 1, c + 10, inner];
}

describe('validateChunks', () => {
  it('cuts the steps into consecutive launches of at most chunkSteps (one for a short split)', () => {
    const u = validateUniforms(params, split);
    expect([u.stepBegin, u.stepEnd]).toEqual([0, STEPS]);
    expect(VALIDATE_CHUNK_STEPS).toBe(512);
    expect(validateChunks(u)).toEqual([u]);
    expect(validateChunks(u, STEPS)).toEqual([u]);
    const cuts = (k: number) => validateChunks(u, k).map((c) => [c.stepBegin, c.stepEnd]);
    expect(cuts(100)).toEqual([
      [0, 100],
      [100, 200],
      [200, STEPS],
    ]);
    expect(cuts(1).length).toBe(STEPS);
    expect(cuts(1).every(([b, e], k) => b === k && e === k + 1)).toBe(true);
    // Everything else is the one-launch uniforms.
    for (const c of validateChunks(u, 37)) expect({ ...c, stepBegin: 0, stepEnd: STEPS }).toEqual(u);
    const long = validateUniforms(params, { start: 0, end: 1300 });
    expect(validateChunks(long).map((c) => [c.stepBegin, c.stepEnd])).toEqual([
      [0, 512],
      [512, 1024],
      [1024, 1299],
    ]);
    for (const bad of [0, -3, 2.5, Number.NaN])
      expect(() => validateChunks(u, bad)).toThrow(/chunkSteps .* must be an integer >= 1/);
  });

  it('launches at most 8,192 steps on CUDA (its validation beside the epoch), 512 elsewhere', () => {
    expect([validateChunkSteps('cuda'), validateChunkSteps('webgpu'), validateChunkSteps('cpu')]).toEqual([
      8192, 512, 512,
    ]);
    const big = randomMarket(9000, 5);
    const long = { start: 0, end: big.n };
    const steps = long.end - long.start - 1;
    const cpu = createCpuBackend();
    const cuda = Object.create(cpu, { kind: { value: 'cuda' } }) as Backend;
    for (const [backend, launches] of [
      [cpu, 18],
      [cuda, 2],
    ] as const) {
      expect(launches, backend.kind).toBe(Math.ceil(steps / validateChunkSteps(backend.kind)));
      const shared: SharedValidateBuffers = [
        big.features,
        big.ohlc,
        big.spreadBps,
        params.entropyTable,
        actor,
      ].map((data) => {
        const b = cpu.createBuffer(data.byteLength, 'shared');
        cpu.upload(b, data);
        return b;
      }) as unknown as SharedValidateBuffers;
      const v = new DeviceValidator(backend, shared, params, long, { kind: 'ppo' });
      expect(v.dispatches().length, backend.kind).toBe(launches);
      v.destroy();
      for (const b of shared) cpu.destroyBuffer(b);
    }
    cpu.destroy();
  });

  it('gives the host backtest on the CPU backend at any chunk size', async () => {
    const backend = createCpuBackend();
    const host = policyRollout(market, split, collapsing, ppoGreedyPolicy(actor));
    for (const k of [1, 37, ...awkwardChunks(collapsing)]) {
      const device = await chunkedRun(backend, collapsing, k);
      expect(Array.from(device.trace.equity), `chunks of ${k}`).toEqual(Array.from(host.trace.equity));
      expect(Array.from(device.actions), `chunks of ${k}`).toEqual(Array.from(host.actions));
    }
  });
});

describe('validate_policy on the CPU backend', () => {
  it('gives the host backtest, metrics and all, for the same actor', async () => {
    const backend = createCpuBackend();
    const v = new DeviceValidator(backend, sharedBuffers(backend), params, split);
    const device = await v.run(BARS_PER_YEAR);
    const host = backtest(market, split, envCfg, ppoGreedyPolicy(actor), BARS_PER_YEAR);
    expect(new Set(host.actions).size).toBeGreaterThan(5);
    expect(host.metrics.trades).toBeGreaterThan(10);
    expect(Array.from(device.actions)).toEqual(Array.from(host.actions));
    expect(Array.from(device.trace.equity)).toEqual(Array.from(host.trace.equity));
    expect(Array.from(device.trace.exposure)).toEqual(Array.from(host.trace.exposure));
    // traded comes back rounded to f32.
    for (let k = 0; k < host.trace.traded.length; k++)
      expect(device.trace.traded[k]).toBe(Math.fround(host.trace.traded[k]));
    expectSameMetrics(device.metrics, host.metrics);
    v.destroy();
  });

  it('validates a trained actor in the device PPO engine as the host backtest does', async () => {
    const cfg = loadConfig(undefined, {
      'data.synthBars': '3000',
      'rollout.episodes': '3',
      'rollout.steps': '16',
      'ppo.minibatch': '16',
      'ppo.updateEpochs': '2',
      'env.curiosityBatch': '20',
    });
    const { market: m, splits } = await prepareData(cfg);
    const backend = createCpuBackend();
    const engine = createDevicePpoEngine(backend, cfg, m, splits.train);
    try {
      await engine.collect(0);
      await engine.update(0);
      const device = await engine.validate!(splits.val, BARS_PER_YEAR);
      const host = backtest(
        m,
        splits.val,
        cfg.env,
        ppoGreedyPolicy((await engine.params()).actor),
        BARS_PER_YEAR,
      );
      expect(device.trace.equity.length).toBe(splits.val.end - splits.val.start);
      expect(Array.from(device.actions)).toEqual(Array.from(host.actions));
      expect(Array.from(device.trace.equity)).toEqual(Array.from(host.trace.equity));
      expectSameMetrics(device.metrics, host.metrics);
    } finally {
      engine.destroy();
      backend.destroy();
    }
  });

  it('logs the host backtest metrics when the PPO loop validates on a device engine', async () => {
    const cfg = loadConfig(undefined, {
      'data.synthBars': '3000',
      'rollout.episodes': '2',
      'rollout.steps': '16',
      'ppo.minibatch': '16',
      'ppo.updateEpochs': '1',
      'train.epochs': '1',
      'env.curiosityBatch': '20',
    });
    const data = await prepareData(cfg);
    const backend = createCpuBackend();
    const engine = createDevicePpoEngine(backend, cfg, data.market, data.splits.train);
    let validated = 0;
    const validate = engine.validate!;
    engine.validate = (split, barsPerYear) => {
      validated++;
      return validate(split, barsPerYear);
    };
    try {
      const { records } = await trainPpo({
        cfg,
        market: data.market,
        splits: data.splits,
        engine,
        storage: new MemoryStorage(),
        outDir: 'run',
        barsPerYear: data.barsPerYear,
        data: data.fingerprint,
        firstEpoch: 1,
        bestScore: Number.NEGATIVE_INFINITY,
      });
      expect(validated).toBe(1);
      const host = backtest(
        data.market,
        data.splits.val,
        cfg.env,
        ppoGreedyPolicy((await engine.params()).actor),
        data.barsPerYear,
      );
      expectSameMetrics(records[0].validation.policy, host.metrics);
    } finally {
      engine.destroy();
      backend.destroy();
    }
  });

  it('rejects a split without a step', () => {
    expect(() => validateUniforms(params, { start: 10, end: 11 })).toThrow(/no step/);
  });
});

/** One launch on the emulator: the harness's ten buffers, the uniforms, a grid of one block. */
function emuLaunch(binary: string, p: EnvParams): { outF: Float32Array; outI: Int32Array } {
  const spec = validatePolicySpec();
  const u = validateUniforms(p, split);
  const bytes = validateOutputBytes(u.steps);
  const buffers: TypedArray[] = [
    market.features,
    market.ohlc,
    market.spreadBps,
    p.entropyTable,
    actor,
    new Float32Array(ENV_F),
    new Int32Array(VALIDATE_ENV_INTS),
    new Int32Array(p.diversityWindow),
    new Float32Array(bytes.f / 4),
    new Int32Array(bytes.i / 4),
  ];
  const ubytes = new Uint8Array(uniformBytes(spec));
  packUniforms({ kernel: spec, buffers: [], uniforms: u, groups: [1, 1, 1] }, new DataView(ubytes.buffer));
  const u32 = (x: number) => new Uint8Array(new Uint32Array([x]).buffer);
  const parts: Uint8Array[] = [];
  for (const b of buffers)
    parts.push(u32(b.byteLength), new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
  parts.push(u32(ubytes.byteLength), ubytes, new Uint8Array(new Uint32Array([1, 1, 1]).buffer));
  const input = new Uint8Array(parts.reduce((n, x) => n + x.length, 0));
  let at = 0;
  for (const x of parts) {
    input.set(x, at);
    at += x.length;
  }
  const raw = new Uint8Array(runEmu(binary, ['@in', '@out'], input).buffer);
  const skip = (ENV_F + VALIDATE_ENV_INTS + p.diversityWindow) * 4;
  return {
    outF: new Float32Array(raw.slice(skip, skip + bytes.f).buffer),
    outI: new Int32Array(raw.slice(skip + bytes.f, skip + bytes.f + bytes.i).buffer),
  };
}

const unavailable = emuUnavailable();

describe.skipIf(unavailable !== null)(
  `validate_policy CUDA twin on the CPU emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    let binary = '';
    beforeAll(() => {
      const spec = validatePolicySpec();
      const source = readFileSync(new URL('../../../cuda/validate_policy.cu', import.meta.url), 'utf8');
      const gen = writeGenerated('validate_policy.cu', cudaPreamble(spec) + source);
      binary = buildEmu('kernel_harness.cpp', { KERNEL_SOURCE: `"${gen}"`, KERNEL_NAME: spec.name });
    }, 120_000);

    for (const [name, p] of [
      ['default simulator', params],
      ['collapse at 99.9% of V_0', collapsing],
    ] as const) {
      it(`matches the host rollout bit for bit (${name})`, () => {
        const { outF, outI } = emuLaunch(binary, p);
        const steps = split.end - split.start - 1;
        const emu = traceFromOutputs(outF, outI, steps, p.initialCapital);
        const host = policyRollout(market, split, p, ppoGreedyPolicy(actor));
        expect(Array.from(emu.actions)).toEqual(Array.from(host.actions));
        expect(Array.from(emu.trace.equity)).toEqual(Array.from(host.trace.equity));
        expect(Array.from(emu.trace.exposure)).toEqual(Array.from(host.trace.exposure));
        for (let k = 0; k < steps; k++)
          expect(Math.abs(emu.trace.traded[k] - host.trace.traded[k])).toBeLessThanOrEqual(
            2e-7 * Math.abs(host.trace.traded[k]),
          );
        if (p === collapsing) {
          // The episode collapsed early and the curve stays flat after it.
          const e = host.trace.equity;
          expect(e[e.length - 1]).toBe(e[e.length - 100]);
          expect(e[e.length - 1]).toBeLessThanOrEqual(Math.fround(0.999) * p.initialCapital);
        }
      });
    }

    for (const [name, p] of [
      ['default simulator', params],
      ['collapse at 99.9% of V_0', collapsing],
    ] as const) {
      it(`gives the one-launch trace bit for bit in launches of awkward sizes (${name})`, async () => {
        const emu = new CudaEmuBackend();
        const whole = await chunkedRun(emu, p, STEPS);
        const host = policyRollout(market, split, p, ppoGreedyPolicy(actor));
        expect(Array.from(whole.trace.equity)).toEqual(Array.from(host.trace.equity));
        for (const k of awkwardChunks(p))
          expectSameTrace(await chunkedRun(emu, p, k), whole, `chunks of ${k}`);
      }, 300_000);
    }

    it('has a CPU twin registered under the same name', () => {
      expect(validatePolicyKernel.spec.name).toBe('validate_policy');
    });
  },
);

describe('validate_policy on WebGPU', () => {
  const webgpu = useWebgpu();

  it('gives the metrics of the host backtest for the same actor', async (ctx) => {
    const backend = webgpu(ctx);
    const shared = sharedBuffers(backend);
    const v = new DeviceValidator(backend, shared, params, split);
    const device = await v.run(BARS_PER_YEAR);
    const host = backtest(market, split, envCfg, ppoGreedyPolicy(actor), BARS_PER_YEAR);
    expect(Array.from(device.actions)).toEqual(Array.from(host.actions));
    expectSameMetrics(device.metrics, host.metrics);
    v.destroy();
    for (const b of shared) backend.destroyBuffer(b);
  }, 300_000);

  for (const [name, p] of [
    ['default simulator', params],
    ['collapse at 99.9% of V_0', collapsing],
  ] as const) {
    it(`gives the one-launch trace bit for bit in launches of awkward sizes (${name})`, async (ctx) => {
      const backend = webgpu(ctx);
      const whole = await chunkedRun(backend, p, 1000);
      const host = policyRollout(market, split, p, ppoGreedyPolicy(actor));
      expect(Array.from(whole.actions)).toEqual(Array.from(host.actions));
      for (const k of awkwardChunks(p))
        expectSameTrace(await chunkedRun(backend, p, k), whole, `chunks of ${k}`);
    }, 300_000);
  }
});
