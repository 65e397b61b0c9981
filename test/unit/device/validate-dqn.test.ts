import { describe, expect, it } from 'vitest';
import { capsOf } from '../../../src/backend/caps.js';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { TUNING, tuningFor } from '../../../src/backend/tuning.js';
import type { Backend } from '../../../src/backend/types.js';
import { cloneDefaults } from '../../../src/config.js';
import type { Market, SplitRange } from '../../../src/data/types.js';
import {
  DeviceValidator,
  type SharedValidateBuffers,
  SPECULATE_ROUNDS,
  uploadValidateBuffers,
} from '../../../src/device/validate.js';
import { createCpuDqnEngine } from '../../../src/engine/cpu_dqn.js';
import { createDeviceDqnEngine } from '../../../src/engine/device_dqn.js';
import { type EnvParams, envParams } from '../../../src/env/params.js';
import { type BacktestResult, backtest, policyRollout } from '../../../src/eval/backtest.js';
import { computeMetrics, type Metrics } from '../../../src/eval/metrics.js';
import { dqnGreedyPolicy } from '../../../src/eval/policies.js';
import {
  clusterPlanFloats,
  GPU_LOADS,
  SOFTWARE_LOADS,
  validateDqnKernel,
  validateDqnSpec,
  validateDqnSpecFor,
  validateDqnThreads,
  validateDqnUniforms,
  validateDqnUnsupported,
} from '../../../src/kernels/validate_dqn.js';
import { VALIDATE_CHUNK_STEPS } from '../../../src/kernels/validate_policy.js';
import { c51Support } from '../../../src/learn/dqn_update.js';
import {
  type C51Support,
  forwardC51,
  forwardDueling,
  forwardIqn,
  initParams,
} from '../../../src/nets/forward.js';
import { duelingLayout, layerByName, NetId, NUM_ACTIONS, type QHead } from '../../../src/nets/layout.js';
import { TIE_GAP } from '../../../src/parity/collect_cases.js';
import { trainDqn } from '../../../src/train/dqn.js';
import { prepareData } from '../../../src/train/run.js';
import { MemoryStorage } from '../../../src/train/storage.js';
import { CudaEmuBackend, emuUnavailable } from '../../emu/backend.js';
import { smallDqnConfig } from '../../support/dqn.js';
import { useWebgpu } from '../../support/webgpu.js';
import { randomMarket } from '../env/fixtures.js';

const market = randomMarket(400, 5);
const split = { start: 50, end: 350 };
const STEPS = split.end - split.start - 1;
const params = envParams(cloneDefaults().env);
const collapsing: EnvParams = { ...params, collapseFraction: Math.fround(0.999) };
const BARS_PER_YEAR = 252 * 390;
const SUPPORT: C51Support = { vMin: -10, vMax: 10, atoms: 51 };
const HEADS: QHead[] = ['plain', 'c51', 'iqn'];
/** IQN's act taus (the config's default, as training validates with) and their fixed quadrature. */
const ACT_TAUS = cloneDefaults().dqn.iqnActTau;
/** dqnGreedyPolicy's fixed quadrature of K act taus. */
const tausOf = (k: number) => Float32Array.from({ length: k }, (_, t) => (t + 0.5) / k);

/**
 * The initial online net (Philox `seed`) with its output layers scaled up (C51: 4x, plain and
 * IQN: 20x; IQN's tau_embed 8x, whose product with the trunk otherwise damps the state's
 * effect), placed at `base`.
 */
function randomNet(head: QHead, base = 0, atoms = SUPPORT.atoms, seed = 7): Float32Array {
  const layout = duelingLayout(head, atoms);
  const p = initParams(layout, NetId.QOnline, seed);
  const scale = head === 'c51' ? 4 : 20;
  for (const name of ['value_stream.1', 'advantage_stream.1']) {
    const l = layerByName(layout, name);
    for (let k = l.wOffset; k < l.wOffset + l.in * l.out; k++) p[k] = Math.fround(p[k] * scale);
  }
  if (head === 'iqn') {
    const l = layerByName(layout, 'tau_embed');
    for (let k = l.wOffset; k < l.bOffset + l.out; k++) p[k] = Math.fround(p[k] * 8);
  }
  const nets = new Float32Array(base + layout.size + 5);
  nets.set(p, base);
  return nets;
}

/** The host rollout of the greedy policy and its first tie step (`steps` when none). */
function hostRollout(
  head: QHead,
  online: Float32Array,
  m: Market,
  s: SplitRange,
  p: EnvParams,
  support = SUPPORT,
  actTaus = ACT_TAUS,
) {
  const layout = duelingLayout(head, support.atoms);
  const taus = tausOf(actTaus);
  const q = new Float32Array(NUM_ACTIONS);
  const probs = new Float32Array(NUM_ACTIONS * support.atoms);
  const greedy = dqnGreedyPolicy(head, layout, online, support, actTaus);
  const steps = s.end - s.start - 1;
  let tie = steps;
  let decided = 0;
  const r = policyRollout(m, s, p, (state, bar) => {
    decided++;
    if (head === 'plain') forwardDueling(layout, online, state, q);
    else if (head === 'iqn') forwardIqn(layout, online, state, taus, q);
    else forwardC51(layout, online, state, probs, q, support);
    const sorted = Array.from(q).sort((a, b) => b - a);
    if (sorted[0] - sorted[1] < TIE_GAP) tie = Math.min(tie, bar - s.start);
    return greedy(state, bar);
  });
  // The step of a collapse (the policy's last decision), or steps.
  const collapse = decided < steps ? decided - 1 : steps;
  return { ...r, tie, collapse };
}

function upload(backend: Backend, m: Market, p: EnvParams, nets: Float32Array): SharedValidateBuffers {
  return uploadValidateBuffers(backend, m, p.entropyTable, nets);
}

/**
 * validate_dqn on `backend` for the online net at float `base` of `nets`, in launches of at most
 * `chunkSteps` steps (default VALIDATE_CHUNK_STEPS: one launch over the test split), or in
 * speculative rounds of `window` steps (default: the backend's; 0: the sequential launches).
 */
async function deviceRun(
  backend: Backend,
  head: QHead,
  nets: Float32Array,
  base: number,
  m: Market,
  s: SplitRange,
  p: EnvParams,
  support = SUPPORT,
  actTaus = ACT_TAUS,
  chunkSteps?: number,
  window?: number,
): Promise<BacktestResult> {
  const shared = upload(backend, m, p, nets);
  const policy = { kind: 'dqn', head, netBase: base, ...support, actTaus, iqnEmbed: 64 } as const;
  const v = new DeviceValidator(backend, shared, p, s, policy, { chunkSteps, window });
  const steps = s.end - s.start - 1;
  expect(v.dispatches().length).toBe(Math.ceil(steps / (chunkSteps ?? VALIDATE_CHUNK_STEPS)));
  try {
    return await v.run(BARS_PER_YEAR);
  } finally {
    v.destroy();
    for (const b of shared) backend.destroyBuffer(b);
  }
}

/** Every metric within `rel` relative (turnover sums the traded notional, which the device rounds to f32). */
function expectSameMetrics(device: Metrics, host: Metrics, rel = 1e-7): void {
  for (const [name, value] of Object.entries(host)) {
    const got = (device as unknown as Record<string, number>)[name];
    expect(Math.abs(got - value), `${name}: ${got} vs ${value}`).toBeLessThanOrEqual(
      rel * Math.max(1, Math.abs(value)),
    );
  }
}

/**
 * The device trace against the host rollout up to its first tie (which must come after `minTie`
 * of the steps, 90% unless told): the same actions, equity and exposure within `rel` relative, traded within f32
 * rounding (of the equity where rel > 0); with no tie, the metrics too.
 */
function expectSameBacktest(
  device: BacktestResult,
  host: ReturnType<typeof hostRollout>,
  rel: number,
  minTie = 0.9,
): void {
  const steps = host.actions.length;
  expect(host.tie, 'the first near-tie of the reference').toBeGreaterThanOrEqual(Math.floor(minTie * steps));
  const upTo = host.tie;
  expect(Array.from(device.actions.subarray(0, upTo))).toEqual(Array.from(host.actions.subarray(0, upTo)));
  for (let k = 0; k < upTo; k++) {
    const e = host.trace.equity[k + 1];
    expect(Math.abs(device.trace.equity[k + 1] - e), `equity ${k}`).toBeLessThanOrEqual(rel * Math.abs(e));
    const x = host.trace.exposure[k];
    expect(Math.abs(device.trace.exposure[k] - x), `exposure ${k}`).toBeLessThanOrEqual(
      rel * Math.max(1, Math.abs(x)),
    );
    // CUDA rounds |units| * price to f32; WGSL takes |cash change + fee change|, within the f32
    // rounding of the cash (rel > 0).
    const t = host.trace.traded[k];
    expect(Math.abs(device.trace.traded[k] - t), `traded ${k}`).toBeLessThanOrEqual(
      2e-7 * Math.abs(t) + (rel > 0 ? 2 * rel * e : 0),
    );
  }
  if (upTo === steps)
    expectSameMetrics(device.metrics, computeMetrics(host.trace, BARS_PER_YEAR), Math.max(rel, 1e-7));
}

/** The same trace, bit for bit. */
function expectSameTrace(got: BacktestResult, want: BacktestResult, what: string): void {
  expect(Array.from(got.actions), `${what}: actions`).toEqual(Array.from(want.actions));
  expect(Array.from(got.trace.equity), `${what}: equity`).toEqual(Array.from(want.trace.equity));
  expect(Array.from(got.trace.exposure), `${what}: exposure`).toEqual(Array.from(want.trace.exposure));
  expect(Array.from(got.trace.traded), `${what}: traded`).toEqual(Array.from(want.trace.traded));
}

/**
 * Chunk sizes that cut the backtest of `host` at awkward places: without a collapse, with `whole`
 * (the plain head: the others' full runs are slow on the emulator and lavapipe), one step a launch
 * and 37 (not a divisor of 299); under a collapse at step c, chunks of c (the collapse opens the
 * second launch, which reads the net the first transposed), c + 1 (it closes the first: the second
 * starts stopped), c + 10 (it falls inside the first, whose tail and every later launch stay
 * flat) and, where c > 3, one of 3 to 7 steps that puts it inside a later launch.
 */
function awkwardChunks(host: ReturnType<typeof hostRollout>, whole: boolean): number[] {
  const steps = host.actions.length;
  if (host.collapse === steps) return whole ? [1, 37] : [];
  const c = host.collapse;
  expect(c, 'the collapse step').toBeGreaterThanOrEqual(1);
  expect(c + 10, 'the collapse step').toBeLessThan(steps);
  // Where the collapse comes late enough: a short chunk that puts it inside a later launch
  // (neither its first nor its last step).
  const inner = [3, 4, 5, 6, 7].find((k) => k < c && c % k !== 0 && c % k !== k - 1);
  return inner === undefined ? [c, c + 1, c + 10] : [c, c + 1, c + 10, inner];
}

/**
 * The backtest of randomNet(head, 8) under `p` on `backend` in launches of awkward sizes gives
 * `whole`, its one-launch trace, bit for bit.
 */
async function expectChunksAgree(backend: Backend, head: QHead, p: EnvParams, whole: BacktestResult) {
  const nets = randomNet(head, 8);
  for (const k of awkwardChunks(randomHost(head, p), head === 'plain')) {
    const chunked = await deviceRun(backend, head, nets, 8, market, split, p, SUPPORT, ACT_TAUS, k, 0);
    expectSameTrace(chunked, whole, `${head}, chunks of ${k}`);
  }
}

const smallConfig = smallDqnConfig;

/**
 * The share of the steps before the first near-tie of a trained net's reference: the IQN net
 * after 10 train steps averages its 32 quantiles into Q values of which two come within 1e-5 at
 * 18% of the validation split (73 of 395 steps), the others after 90%.
 */
const trainedMinTie = (head: QHead) => (head === 'iqn' ? 0.18 : 0.9);

type Trained = Awaited<ReturnType<typeof trainNet>>;
const trained = new Map<QHead, Promise<Trained>>();

/**
 * The online net after two epochs of the CPU engine (collect + 5 train steps each), with its
 * market and the host rollout on its validation split: trained once per head, as the emulator's
 * and WebGPU's cases check the same net (IQN's training takes ~15 s).
 */
function trainedNet(head: QHead): Promise<Trained> {
  let t = trained.get(head);
  if (!t) {
    t = trainNet(head);
    trained.set(head, t);
  }
  return t;
}

async function trainNet(head: QHead) {
  const cfg = smallConfig(head === 'plain' ? 'dqn' : head);
  expect([cfg.dqn.iqnActTau, cfg.dqn.iqnEmbed]).toEqual([ACT_TAUS, 64]);
  const data = await prepareData(cfg);
  const engine = createCpuDqnEngine(cfg, data.market, data.splits.train);
  try {
    for (const round of [0, 1]) {
      await engine.collect(round, 0.5);
      const trained = await engine.train(round);
      expect(trained.steps).toBe(5);
    }
    const online = (await engine.params()).online;
    const split = data.splits.val;
    const host = hostRollout(head, online, data.market, split, envParams(cfg.env));
    return { online, market: data.market, split, cfg, host };
  } finally {
    engine.destroy();
  }
}

const randomHosts = new Map<EnvParams, Map<QHead, ReturnType<typeof hostRollout>>>();

/**
 * The host rollout of randomNet(head, 8)'s online net on the test market under `p`, once per head
 * and simulator (the emulator's and WebGPU's cases compare with the same rollout).
 */
function randomHost(head: QHead, p: EnvParams): ReturnType<typeof hostRollout> {
  let byHead = randomHosts.get(p);
  if (!byHead) {
    byHead = new Map();
    randomHosts.set(p, byHead);
  }
  let host = byHead.get(head);
  if (!host) {
    const nets = randomNet(head, 8);
    host = hostRollout(head, nets.subarray(8, 8 + duelingLayout(head, SUPPORT.atoms).size), market, split, p);
    byHead.set(head, host);
  }
  return host;
}

describe('validate_dqn on the CPU backend', () => {
  for (const head of HEADS) {
    it(`gives the host backtest, metrics and all (${head}, random weights, net at float 16)`, async () => {
      const nets = randomNet(head, 16);
      const online = nets.subarray(16, 16 + duelingLayout(head, SUPPORT.atoms).size);
      const backend = createCpuBackend();
      const device = await deviceRun(backend, head, nets, 16, market, split, params);
      const host = backtest(
        market,
        split,
        cloneDefaults().env,
        dqnGreedyPolicy(head, duelingLayout(head, SUPPORT.atoms), online, SUPPORT, ACT_TAUS),
        BARS_PER_YEAR,
      );
      expect(new Set(host.actions).size).toBeGreaterThan(5);
      expect(host.metrics.trades).toBeGreaterThan(10);
      expect(Array.from(device.actions)).toEqual(Array.from(host.actions));
      expect(Array.from(device.trace.equity)).toEqual(Array.from(host.trace.equity));
      for (let k = 0; k < STEPS; k++) expect(device.trace.traded[k]).toBe(Math.fround(host.trace.traded[k]));
      expectSameMetrics(device.metrics, host.metrics);
    });
  }

  it('speculates only where asked (the reference runs the whole backtest in its first roll)', async () => {
    const backend = createCpuBackend();
    const nets = randomNet('c51', 16);
    const shared = upload(backend, market, params, nets);
    const policy = { kind: 'dqn', head: 'c51', netBase: 16, ...SUPPORT } as const;
    const host = randomHost('c51', params);
    try {
      for (const window of [undefined, 8]) {
        const v = new DeviceValidator(backend, shared, params, split, policy, { window });
        expect(v.window).toBe(window ?? 0);
        expectSameBacktest(await v.run(BARS_PER_YEAR), host, 0);
        expect(v.lastRun).toEqual({ rounds: window ? 1 : 0, fellBackAt: -1, sequentialSteps: 0 });
        v.destroy();
      }
      expect(tuningFor(backend).validate.speculateWindow).toBe(0);
      expect(TUNING.webgpu.validate.speculateWindow).toBeGreaterThan(0);
      expect(TUNING['webgpu-software'].validate.speculateWindow).toBe(0);
      expect(TUNING.cuda.validate.speculateWindow).toBe(0);
    } finally {
      for (const b of shared) backend.destroyBuffer(b);
    }
  });

  it('refuses too many atoms or act taus, and a split without a step', () => {
    expect(validateDqnUnsupported({ head: 'iqn', atoms: 51 })).toBeNull();
    // IQN's workgroup plan does not grow with the taus or the embedding (phi lives in out_f).
    for (const [actTaus, iqnEmbed] of [
      [32, 64],
      [55, 64],
      [128, 256],
    ]) {
      const iqn = { head: 'iqn' as const, atoms: 51, actTaus, iqnEmbed };
      expect(validateDqnUnsupported(iqn)).toBeNull();
      expect(validateDqnSpec(iqn).constants?.IQN_TAUS).toBe(actTaus);
    }
    expect(validateDqnUnsupported({ head: 'iqn', atoms: 51, actTaus: 129, iqnEmbed: 8 })).toMatch(
      /act taus 129 must be an integer in 1 \.\. 128/,
    );
    expect(validateDqnUnsupported({ head: 'iqn', atoms: 51, actTaus: 128, iqnEmbed: 8 })).toBeNull();
    expect(() => validateDqnSpec({ head: 'c51', atoms: 200 })).toThrow(/workgroup memory/);
    expect(validateDqnUnsupported({ head: 'c51', atoms: 51 })).toBeNull();
    const net = { head: 'plain' as const, atoms: 1, vMin: -10, vMax: 10, netBase: 0 };
    expect(() => validateDqnUniforms(params, { start: 10, end: 11 }, net)).toThrow(/no step/);
    expect(() => validateDqnUniforms(params, split, { ...net, netBase: -1 })).toThrow(/netBase/);
    expect(() => validateDqnUniforms(params, split, { ...net, netBase: 13 })).toThrow(/multiple of 4/);
    expect(validateDqnKernel.spec.name).toBe('validate_dqn');
  });

  it('takes 1024 threads where the device allows them and the plan fits 16 KiB, else 256', () => {
    const gpu = (invocations: number, x = invocations) => ({
      kind: 'webgpu' as const,
      features: { clusters: false },
      limits: { invocationsPerWorkgroup: invocations, workgroupSizeX: x },
    });
    const iqn = { head: 'iqn' as const, atoms: 51, actTaus: 32, iqnEmbed: 64 };
    for (const head of [{ head: 'plain' as const, atoms: 1 }, { head: 'c51' as const, atoms: 51 }, iqn]) {
      expect(validateDqnThreads(head, gpu(1024)), head.head).toBe(1024);
      expect(validateDqnThreads(head, gpu(256)), head.head).toBe(256);
      expect(validateDqnThreads(head, gpu(1024, 256)), head.head).toBe(256);
      expect(validateDqnThreads(head), head.head).toBe(256);
      const spec = validateDqnSpecFor(head, gpu(1024));
      expect(spec.workgroupSize).toEqual([1024, 1, 1]);
      expect(spec.constants?.TRUNK_PARTS).toBe(4);
      expect(spec.constants?.HEADS_LEN).toBeGreaterThanOrEqual(1024);
      expect(validateDqnSpecFor(head, gpu(256)).constants?.TRUNK_PARTS).toBe(1);
    }
    // Every head the 256 build runs also fits the wide build's 16 KiB (C51 at 75 atoms, IQN at 128 taus).
    expect(validateDqnThreads({ head: 'c51', atoms: 75 }, gpu(1024))).toBe(1024);
    expect(validateDqnThreads({ ...iqn, actTaus: 128 }, gpu(1024))).toBe(1024);
    expect(() => validateDqnSpec(iqn, 512)).toThrow(/256 or 1024/);
  });

  it('keeps 64 weight loads in flight on a GPU and 16 on a software adapter (its compiler)', () => {
    const target = (software: boolean) => ({
      kind: 'webgpu' as const,
      software,
      features: { clusters: false },
    });
    for (const head of [
      { head: 'plain' as const, atoms: 1 },
      { head: 'c51' as const, atoms: 51 },
    ]) {
      expect(validateDqnSpecFor(head, target(false)).constants?.LOADS).toBe(GPU_LOADS);
      expect(validateDqnSpecFor(head, target(true)).constants?.LOADS).toBe(SOFTWARE_LOADS);
    }
    expect([GPU_LOADS, SOFTWARE_LOADS]).toEqual([64, 16]);
    expect(() => validateDqnSpec({ head: 'plain', atoms: 1 }, 256, 32)).toThrow(/64 or 16/);
  });

  it('runs as one thread-block cluster on CUDA: the fewest CTAs whose shared memory holds the net', () => {
    const sm90 = { kind: 'cuda' as const, features: { clusters: true } };
    const cases = [
      [{ head: 'plain', atoms: 51 }, 4],
      [{ head: 'c51', atoms: 51 }, 16],
      [{ head: 'iqn', atoms: 51, actTaus: 32, iqnEmbed: 64 }, 16],
    ] as const;
    for (const [head, ctas] of cases) {
      const spec = validateDqnSpecFor(head, sm90);
      expect([spec.name, spec.cluster], head.head).toEqual(['validate_dqn_cluster', [ctas, 1, 1]]);
      expect(spec.sharedBytes).toBe(4 * clusterPlanFloats(head, ctas));
      expect(spec.sharedBytes).toBeLessThanOrEqual(227 * 1024);
      expect(4 * clusterPlanFloats(head, ctas / 2)).toBeGreaterThan(ctas > 4 ? 227 * 1024 : 0);
      expect(validateDqnSpecFor(head, { kind: 'webgpu', features: { clusters: false } }).name).toBe(
        'validate_dqn',
      );
      expect(validateDqnUnsupported(head, sm90)).toBeNull();
      // Given the device's opt-in bytes, each CTA launches with all of them (no other block beside
      // it on its SM); the kernel's plan stays DYN_SMEM_BYTES.
      const whole = validateDqnSpecFor(head, { ...sm90, limits: { sharedOptinBytes: 232448 } });
      expect(whole.sharedBytes).toBe(232448);
      expect(whole.constants?.DYN_SMEM_BYTES).toBe(4 * clusterPlanFloats(head, ctas));
    }
    // Past the WGSL workgroup plan, CUDA still validates on the device.
    expect(validateDqnUnsupported({ head: 'c51', atoms: 76 }, sm90)).toBeNull();
    expect(validateDqnSpecFor({ head: 'c51', atoms: 76 }, sm90).constants?.ATOMS).toBe(76);
    expect(validateDqnUnsupported({ head: 'c51', atoms: 400 }, sm90)).toMatch(/does not fit/);
    expect(
      validateDqnUnsupported({ head: 'plain', atoms: 1 }, { kind: 'cuda', features: { clusters: false } }),
    ).toMatch(/compute capability 9\.0/);
  });
});

describe('the device DQN engine validates on the device', () => {
  // C51 past its plan (76 atoms) is refused by the config (dqn.atoms <= 64, dqn_loss's arrays).
  const beyondPlan = [['IQN past 128 act taus', 'iqn', { 'dqn.iqnActTau': '129' }, {}]] as const;
  for (const [what, algo, wideFlags, fitsFlags] of beyondPlan) {
    it(`leaves ${what} to the host backtest`, async () => {
      const cfg = smallConfig(algo, wideFlags);
      const data = await prepareData(cfg);
      const backend = createCpuBackend();
      const wide = createDeviceDqnEngine(cfg, data.market, data.splits.train, backend);
      const fits = createDeviceDqnEngine(
        smallConfig(algo, fitsFlags),
        data.market,
        data.splits.train,
        backend,
      );
      try {
        expect(wide.validate).toBeUndefined();
        expect(fits.validate).toBeTypeOf('function');
      } finally {
        wide.destroy();
        fits.destroy();
        backend.destroy();
      }
    });
  }

  for (const algo of ['dqn', 'c51', 'iqn'] as const) {
    it(`logs the host backtest's metrics over 2 epochs of trainDqn (${algo}, CPU backend)`, async () => {
      const cfg = smallConfig(algo, { 'train.epochs': '2' });
      const data = await prepareData(cfg);
      const backend = createCpuBackend();
      const engine = createDeviceDqnEngine(cfg, data.market, data.splits.train, backend);
      let validated = 0;
      const validate = engine.validate!;
      expect(validate).toBeTypeOf('function');
      engine.validate = (s, barsPerYear) => {
        validated++;
        return validate(s, barsPerYear);
      };
      const onlines: Float32Array[] = [];
      try {
        const { records } = await trainDqn({
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
          onEpoch: async () => {
            onlines.push((await engine.params()).online);
          },
        });
        expect(validated).toBe(2);
        expect(records.length).toBe(2);
        const head = algo === 'dqn' ? 'plain' : algo;
        for (const [k, record] of records.entries()) {
          const host = backtest(
            data.market,
            data.splits.val,
            cfg.env,
            dqnGreedyPolicy(
              head,
              duelingLayout(head, cfg.dqn.atoms),
              onlines[k],
              c51Support(cfg.dqn),
              cfg.dqn.iqnActTau,
            ),
            data.barsPerYear,
          );
          expectSameMetrics(record.validation.policy, host.metrics);
        }
      } finally {
        engine.destroy();
        backend.destroy();
      }
    }, 120_000);
  }
});

describe('the device DQN engine on WebGPU', () => {
  const webgpu = useWebgpu();

  for (const algo of ['dqn', 'c51', 'iqn'] as const) {
    it(`validates the trained online net as the host backtest does (${algo}, 2 epochs)`, async (ctx) => {
      const backend = webgpu(ctx);
      const cfg = smallConfig(algo);
      const data = await prepareData(cfg);
      const engine = createDeviceDqnEngine(cfg, data.market, data.splits.train, backend);
      try {
        for (const round of [0, 1]) {
          await engine.collect(round, 0.5);
          expect((await engine.train(round)).steps).toBe(5);
        }
        const device = await engine.validate!(data.splits.val, BARS_PER_YEAR);
        const head = algo === 'dqn' ? 'plain' : algo;
        const host = hostRollout(
          head,
          (await engine.params()).online,
          data.market,
          data.splits.val,
          envParams(cfg.env),
        );
        expect(device.trace.equity.length).toBe(data.splits.val.end - data.splits.val.start);
        expectSameBacktest(device, host, 1e-6, trainedMinTie(head));
      } finally {
        engine.destroy();
      }
    }, 300_000);
  }
});

const unavailable = emuUnavailable();

describe.skipIf(unavailable !== null)(
  `validate_dqn CUDA twin (validate_dqn_cluster) on the CPU emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    // As an sm_90 device: DeviceValidator runs the cluster kernel.
    const emu = new CudaEmuBackend({ as: 'cuda' });
    for (const head of HEADS) {
      for (const [name, p] of [
        ['default simulator', params],
        ['collapse at 99.9% of V_0', collapsing],
      ] as const) {
        it(`matches the host rollout in one launch and in launches of awkward sizes (${head}, random weights, ${name})`, async () => {
          const device = await deviceRun(emu, head, randomNet(head, 8), 8, market, split, p);
          const host = randomHost(head, p);
          if (p === params) expect(new Set(host.actions).size).toBeGreaterThan(5);
          if (head === 'plain') {
            // No exp: the reference's arithmetic exactly.
            expect(Array.from(device.actions)).toEqual(Array.from(host.actions));
            expect(Array.from(device.trace.equity)).toEqual(Array.from(host.trace.equity));
            expect(Array.from(device.trace.exposure)).toEqual(Array.from(host.trace.exposure));
          }
          expectSameBacktest(device, host, 0);
          if (p === collapsing) {
            const e = device.trace.equity;
            expect(e[e.length - 1]).toBe(e[e.length - 100]);
            expect(e[e.length - 1]).toBeLessThanOrEqual(Math.fround(0.999) * p.initialCapital);
          }
          // Launches of awkward sizes (the episode and the stop flag carried between them in
          // env_f / env_i) give the one-launch trace bit for bit.
          await expectChunksAgree(emu, head, p, device);
        }, 300_000);
      }
      it(`matches the host rollout (${head}, weights after 10 train steps)`, async () => {
        const t = await trainedNet(head);
        const device = await deviceRun(emu, head, t.online, 0, t.market, t.split, envParams(t.cfg.env));
        expectSameBacktest(device, t.host, 0, trainedMinTie(head));
      }, 120_000);
    }
  },
);

describe('validate_dqn on WebGPU', () => {
  const webgpu = useWebgpu();

  for (const head of HEADS) {
    it(`matches the host rollout in one launch and in launches of awkward sizes (${head}, random weights, collapse included)`, async (ctx) => {
      const backend = webgpu(ctx);
      const nets = randomNet(head, 8);
      for (const p of [params, collapsing]) {
        const device = await deviceRun(backend, head, nets, 8, market, split, p);
        expectSameBacktest(device, randomHost(head, p), 1e-6);
        // Launches of awkward sizes give the one-launch trace bit for bit (C51's and IQN's later
        // launches read the transposed net the first one wrote).
        await expectChunksAgree(backend, head, p, device);
      }
    }, 600_000);

    it(`matches the host rollout (${head}, weights after 10 train steps)`, async (ctx) => {
      const backend = webgpu(ctx);
      const t = await trainedNet(head);
      const p = envParams(t.cfg.env);
      const device = await deviceRun(backend, head, t.online, 0, t.market, t.split, p);
      expectSameBacktest(device, t.host, 1e-6, trainedMinTie(head));
    }, 300_000);
  }

  // Speculation (validate_dqn.ts): rounds of a window of guessed steps, each confirmed by the net.
  // The random plain net changes its action often, so small windows miss often. The rounds are the
  // same for every head but the net (greedy(), the sequential loop's); lavapipe runs a window's
  // states one after another, so the slow heads are left to the GPU (probe-speculate's check).
  it('speculates in rounds: the sequential trace bit for bit at any window, collapse included', async (ctx) => {
    const backend = webgpu(ctx);
    for (const head of ['plain'] as const) {
      const nets = randomNet(head, 8);
      for (const p of [params, collapsing]) {
        const sequential = await deviceRun(
          backend,
          head,
          nets,
          8,
          market,
          split,
          p,
          SUPPORT,
          ACT_TAUS,
          100,
          0,
        );
        expectSameBacktest(sequential, randomHost(head, p), 1e-6);
        for (const window of [5, 24]) {
          const shared = upload(backend, market, p, nets);
          const policy = { kind: 'dqn', head, netBase: 8, ...SUPPORT } as const;
          const v = new DeviceValidator(backend, shared, p, split, policy, { window });
          try {
            const what = `${head}, window ${window}${p === collapsing ? ', collapse' : ''}`;
            expectSameTrace(await v.run(BARS_PER_YEAR), sequential, what);
            // Every window rolled, none left to the sequential launches, and (away from a collapse)
            // misses: more windows than the steps need.
            expect(v.lastRun.fellBackAt, what).toBe(-1);
            if (p !== collapsing) expect(v.lastRun.rounds, what).toBeGreaterThan(Math.ceil(STEPS / window));
            // A second run guesses the previous trace's actions: the same trace, every guess confirmed.
            expectSameTrace(await v.run(BARS_PER_YEAR), sequential, `${what}, again`);
            if (p !== collapsing) expect(v.lastRun.rounds, what).toBe(Math.ceil(STEPS / window));
          } finally {
            v.destroy();
            for (const b of shared) backend.destroyBuffer(b);
          }
        }
      }
    }
  }, 600_000);

  it('runs the sequential launches where rounds commit too few steps, then speculates again', async (ctx) => {
    const backend = webgpu(ctx);
    const nets = randomNet('plain', 8);
    const host = randomHost('plain', params);
    const shared = upload(backend, market, params, nets);
    const policy = { kind: 'dqn', head: 'plain', netBase: 8, ...SUPPORT } as const;
    try {
      // A window of 1 commits at most one step a round, below speculateMinSteps: after the first
      // batch (the first roll, then SPECULATE_ROUNDS rounds) the rest runs sequentially (it is
      // shorter than VALIDATE_CHUNK_STEPS), resumed where the rounds left the episode.
      const one = new DeviceValidator(backend, shared, params, split, policy, { window: 1, chunkSteps: 100 });
      expectSameBacktest(await one.run(BARS_PER_YEAR), host, 1e-6);
      expect(one.lastRun.rounds).toBe(SPECULATE_ROUNDS + 1);
      expect(one.lastRun.fellBackAt).toBeGreaterThan(0);
      expect(one.lastRun.fellBackAt).toBeLessThanOrEqual(SPECULATE_ROUNDS);
      expect(one.lastRun.sequentialSteps).toBe(STEPS - one.lastRun.fellBackAt);
      one.destroy();
      // Over a longer split: VALIDATE_CHUNK_STEPS sequential steps, then rounds again from there,
      // then twice as many, ...: the trace is the sequential one.
      const long = { start: 20, end: 390 + VALIDATE_CHUNK_STEPS };
      const wide = randomMarket(long.end + 10, 5);
      const sharedLong = upload(backend, wide, params, nets);
      try {
        const sequential = await deviceRun(
          backend,
          'plain',
          nets,
          8,
          wide,
          long,
          params,
          SUPPORT,
          ACT_TAUS,
          100,
          0,
        );
        const v = new DeviceValidator(backend, sharedLong, params, long, policy, {
          window: 1,
          chunkSteps: 100,
        });
        expectSameTrace(await v.run(BARS_PER_YEAR), sequential, 'window 1 over a long split');
        expect(v.lastRun.sequentialSteps).toBeGreaterThanOrEqual(VALIDATE_CHUNK_STEPS);
        expect(v.lastRun.rounds).toBeGreaterThan(2 * SPECULATE_ROUNDS);
        v.destroy();
      } finally {
        for (const b of sharedLong) backend.destroyBuffer(b);
      }
    } finally {
      for (const b of shared) backend.destroyBuffer(b);
    }
  }, 300_000);

  it('validates the net the nets buffer holds at each run: the first launch transposes it again', async (ctx) => {
    const backend = webgpu(ctx);
    const first = randomNet('plain', 8);
    const second = randomNet('plain', 8, SUPPORT.atoms, 9);
    const shared = upload(backend, market, params, first);
    const policy = { kind: 'dqn', head: 'plain', netBase: 8, ...SUPPORT } as const;
    const v = new DeviceValidator(backend, shared, params, split, policy, { chunkSteps: 100 });
    try {
      expect(v.dispatches().map((d) => [d.uniforms.stepBegin, d.uniforms.stepEnd])).toEqual([
        [0, 100],
        [100, 200],
        [200, STEPS],
      ]);
      expectSameBacktest(await v.run(BARS_PER_YEAR), randomHost('plain', params), 1e-6);
      backend.upload(shared[4], second);
      const online = second.subarray(8, 8 + duelingLayout('plain', SUPPORT.atoms).size);
      const host = hostRollout('plain', online, market, split, params);
      expect(Array.from(host.actions)).not.toEqual(Array.from(randomHost('plain', params).actions));
      expectSameBacktest(await v.run(BARS_PER_YEAR), host, 1e-6);
    } finally {
      v.destroy();
      for (const b of shared) backend.destroyBuffer(b);
    }
  }, 300_000);

  it('runs the 256-thread build where the device allows no more (c51, random weights)', async (ctx) => {
    const backend = webgpu(ctx);
    const limits = { ...backend.info.limits, maxComputeInvocationsPerWorkgroup: 256 };
    const narrow = Object.create(backend, { info: { value: { ...backend.info, limits } } }) as Backend;
    const policy = { head: 'c51' as const, atoms: SUPPORT.atoms };
    expect(validateDqnThreads(policy, capsOf(backend))).toBe(1024);
    expect(validateDqnThreads(policy, capsOf(narrow))).toBe(256);
    const device = await deviceRun(narrow, 'c51', randomNet('c51', 8), 8, market, split, params);
    expectSameBacktest(device, randomHost('c51', params), 1e-6);
  }, 300_000);

  it('runs C51 at 75 atoms, the most its 16 KiB of workgroup memory holds', async (ctx) => {
    const backend = webgpu(ctx);
    const support = { vMin: -10, vMax: 10, atoms: 75 };
    const nets = randomNet('c51', 4, 75, 8);
    const online = nets.subarray(4, 4 + duelingLayout('c51', 75).size);
    const device = await deviceRun(backend, 'c51', nets, 4, market, split, params, support);
    const host = hostRollout('c51', online, market, split, params, support);
    expect(new Set(host.actions).size).toBeGreaterThan(5);
    expectSameBacktest(device, host, 1e-6);
  }, 300_000);

  // The taus go through the streams 8 at a time: 13 leaves a partial group; the 256-thread build
  // sums 8 taus an invocation, the 1024 build 2.
  it('runs IQN at 13 act taus (a partial group of taus) on both builds', async (ctx) => {
    const backend = webgpu(ctx);
    const limits = { ...backend.info.limits, maxComputeInvocationsPerWorkgroup: 256 };
    const narrow = Object.create(backend, { info: { value: { ...backend.info, limits } } }) as Backend;
    const policy = { head: 'iqn' as const, atoms: 51, actTaus: 13, iqnEmbed: 64 };
    expect(validateDqnThreads(policy, capsOf(backend))).toBe(1024);
    expect(validateDqnThreads(policy, capsOf(narrow))).toBe(256);
    const nets = randomNet('iqn', 4);
    const online = nets.subarray(4, 4 + duelingLayout('iqn').size);
    const host = hostRollout('iqn', online, market, split, params, SUPPORT, 13);
    expect(new Set(host.actions).size).toBeGreaterThan(5);
    for (const b of [backend, narrow]) {
      const device = await deviceRun(b, 'iqn', nets, 4, market, split, params, SUPPORT, 13);
      expectSameBacktest(device, host, 1e-6);
    }
  }, 300_000);
});
