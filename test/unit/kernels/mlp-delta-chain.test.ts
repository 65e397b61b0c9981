import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { nvccCandidates, nvccVersion } from '../../../src/backend/cuda/compile.js';
import { packageRoot } from '../../../src/backend/cuda/native.js';
import { createBackend } from '../../../src/backend/index.js';
import { type Backend, BackendUnavailableError, type KernelSpec } from '../../../src/backend/types.js';
import { deltaChainNets, type MlpPlan, planMlps } from '../../../src/device/learn_mlp.js';
import {
  DELTA_ROWS,
  DELTA_STAGED_SHARED_LIMIT,
  type DeltaChainLoss,
  type DeltaChainNet,
  deltaChainLossGroups,
  deltaChainStaging,
  deltaChainTileFloats,
  MAX_DELTA_LAYERS,
  mlpDeltaChainDispatch,
  mlpDeltaChainSpecFor,
  mlpDeltaChainStagedSpecFor,
} from '../../../src/kernels/mlp_delta_chain.js';
import { LOSS_PARTS, lossGroups, ppoLossDispatch } from '../../../src/kernels/ppo_loss.js';
import { kernels } from '../../../src/kernels/registry.js';
import { backwardMlp, createMlpCache, forwardMlpBatch } from '../../../src/learn/mlp.js';
import { initParams } from '../../../src/nets/forward.js';
import {
  buildLayout,
  NetId,
  type NetLayout,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';
import { CudaEmuBackend, emuUnavailable } from '../../emu/backend.js';
import { ptxEntry } from '../learn/helpers.js';

const backends: Backend[] = [];
afterEach(() => {
  for (const b of backends.splice(0)) b.destroy();
});

/** Deterministic values in [-scale, scale). */
function inputs(n: number, seed: number, scale = 2): Float32Array {
  const out = new Float32Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = ((x / 2 ** 32) * 2 - 1) * scale;
  }
  return out;
}

/** What the delta rows hold before a launch, where it writes: a launch that misses one shows it. */
const UNWRITTEN = 12345.5;

/**
 * The layouts in the learner's buffers (planMlps: the networks' params back to back, every layer's
 * output and delta rows), run forward and backward by mlp.ts on `batch` rows: `acts` and the top
 * delta rows are the launch's inputs, `want` the deltas mlp.ts's backward computed for the layers
 * below each network's chain (its layers `from[n]` .. last, given to the launch top first).
 */
function learnerCase(layouts: NetLayout[], from: number[], batch: number) {
  const plan: MlpPlan = planMlps(layouts, batch);
  const params = new Float32Array(plan.paramFloats);
  const acts = new Float32Array(plan.actFloats);
  const deltas = new Float32Array(plan.deltaFloats).fill(UNWRITTEN);
  const want = new Float32Array(plan.deltaFloats).fill(UNWRITTEN);
  const x = inputs(batch * plan.inDim, 11);
  acts.set(x, 0);
  plan.nets.forEach((net, n) => {
    const layers = net.layout.layers;
    const last = layers.length - 1;
    const p = initParams(net.layout, n === 0 ? NetId.Actor : NetId.Critic, 5 + n);
    params.set(p, net.base);
    const cache = createMlpCache(net.layout, batch);
    cache.acts[0].set(x);
    forwardMlpBatch(net.layout, p, cache, batch);
    const dOut = inputs(batch * layers[last].out, 21 + n, 0.5);
    backwardMlp(net.layout, p, cache, dOut, batch, new Float32Array(net.layout.size));
    layers.forEach((l, k) => {
      acts.set(cache.acts[k + 1].subarray(0, batch * l.out), net.outputAt[k]);
    });
    deltas.set(cache.deltas[last].subarray(0, batch * layers[last].out), net.deltaAt[last]);
    for (let k = from[n] - 1; k < last; k++) {
      want.set(cache.deltas[k].subarray(0, batch * layers[k].out), net.deltaAt[k]);
    }
    want.set(cache.deltas[last].subarray(0, batch * layers[last].out), net.deltaAt[last]);
  });
  // The launch's networks as the learner's plan builds them: layers `from[n]` .. last, top first.
  const nets: DeltaChainNet[] = deltaChainNets(plan, from);
  expect(nets.map((c) => c.layers.length)).toEqual(
    plan.nets.map((net, n) => net.layout.layers.length - from[n]),
  );
  return { plan, params, acts, deltas, want, nets, batch };
}

type Case = ReturnType<typeof learnerCase>;

/** The PPO actor's policy_output, policy_layer_1 and the critic's value_output .. value_layer_3. */
const ppoCase = (batch: number) => learnerCase([ppoActorLayout(), ppoCriticLayout()], [1, 3], batch);

/** One ragged chain (widths not multiples of 4), 4 layers, every activation below them. */
const raggedLayout = buildLayout('ragged', [
  { name: 'r0', in: 54, out: 37, act: 'leaky' },
  { name: 'r1', in: 37, out: 70, act: 'relu' },
  { name: 'r2', in: 70, out: 33, act: 'none' },
  { name: 'r3', in: 33, out: 5, act: 'leaky' },
  { name: 'r4', in: 5, out: 3, act: 'none' },
]);
const raggedCase = (batch: number) => learnerCase([raggedLayout], [1], batch);

/** Floats of the partials buffer of the loss cases (more rows than any launch here writes). */
const PARTIAL_FLOATS = LOSS_PARTS * 64 + 3;
/** Where the loss sums go in it (not 0: a launch that ignores lossAt shows it). */
const LOSS_AT = 3;

/**
 * The loss mode's inputs for a PPO case: ppo_gather's per-sample floats (action, old log-prob,
 * advantage, return; actions in range, clipped and unclipped ratios) and the loss head's
 * arguments (net 0 the actor, net 1 the critic, as the learner has them).
 */
function lossInputs(c: Case, normalize = true) {
  const n = c.batch;
  const [actor, critic] = c.plan.nets;
  const lastA = actor.layout.layers.length - 1;
  const lastC = critic.layout.layers.length - 1;
  const nActions = actor.layout.layers[lastA].out;
  const mb = new Float32Array(4 * n);
  const noise = inputs(4 * n, 31, 1);
  for (let b = 0; b < n; b++) {
    mb[b] = (b * 7) % nActions;
    mb[n + b] = -Math.log(nActions) + 0.4 * noise[b];
    mb[2 * n + b] = 2 * noise[n + b] + 0.3;
    mb[3 * n + b] = noise[2 * n + b];
  }
  const loss: DeltaChainLoss = {
    nActions,
    logitsOff: actor.outputAt[lastA],
    valuesOff: critic.outputAt[lastC],
    dLogitsOff: actor.deltaAt[lastA],
    dValueOff: critic.deltaAt[lastC],
    clip: 0.2,
    valueCoef: 0.5,
    entropyCoef: 0.01,
    normalize,
    lossAt: LOSS_AT,
  };
  return { mb, loss };
}

type LossInputs = ReturnType<typeof lossInputs>;

/**
 * Runs the case's launch on `backend` (with `loss`: the loss mode; `unfused`: a ppo_loss launch
 * then the plain chain launch instead); returns the deltas and partials buffers and the chain's
 * kernel.
 */
async function runCase(
  backend: Backend,
  c: Case,
  rows: number,
  staged: boolean,
  loss?: LossInputs,
  unfused = false,
) {
  const pBuf = backend.createBuffer(4 * c.params.length, 'delta.params');
  const aBuf = backend.createBuffer(4 * c.acts.length, 'delta.acts');
  const dBuf = backend.createBuffer(4 * c.deltas.length, 'delta.deltas');
  const mBuf = backend.createBuffer(4 * Math.max(1, loss?.mb.length ?? 0), 'delta.mb');
  const sBuf = backend.createBuffer(4 * PARTIAL_FLOATS, 'delta.partials');
  try {
    backend.upload(pBuf, c.params);
    backend.upload(aBuf, c.acts);
    backend.upload(dBuf, c.deltas);
    if (loss) backend.upload(mBuf, loss.mb);
    backend.upload(sBuf, new Float32Array(PARTIAL_FLOATS).fill(UNWRITTEN));
    const fused = loss && !unfused ? loss.loss : undefined;
    const io = { mb: mBuf, partials: sBuf, loss: fused };
    const d = mlpDeltaChainDispatch(pBuf, aBuf, dBuf, c.batch, c.nets, rows, staged, io);
    expect(d.groups[0]).toBe(Math.ceil(c.batch / rows));
    const head =
      loss && unfused
        ? [
            ppoLossDispatch({
              ...loss.loss,
              acts: aBuf,
              mb: mBuf,
              deltas: dBuf,
              partials: sBuf,
              batch: c.batch,
            }),
          ]
        : [];
    backend.run([...head, d]);
    return {
      got: new Float32Array(await backend.download(dBuf)),
      partials: new Float32Array(await backend.download(sBuf)),
      kernel: d.kernel,
    };
  } finally {
    for (const b of [pBuf, aBuf, dBuf, mBuf, sBuf]) backend.destroyBuffer(b);
  }
}

/** The column sums of `groups` rows of loss parts at LOSS_AT (f64), checking the rows after are unwritten. */
function lossTotals(partials: Float32Array, groups: number): number[] {
  const totals = Array.from({ length: LOSS_PARTS }, (_, p) => {
    let t = 0;
    for (let g = 0; g < groups; g++) t += partials[LOSS_AT + g * LOSS_PARTS + p];
    return t;
  });
  expect(partials[LOSS_AT - 1]).toBe(UNWRITTEN);
  expect(partials[LOSS_AT + groups * LOSS_PARTS]).toBe(UNWRITTEN);
  return totals;
}

function expectTotalsClose(got: number[], want: number[], rel: number, what: string) {
  got.forEach((g, p) => {
    expect(Math.abs(g - want[p]), `${what}: loss part ${p}: ${g} vs ${want[p]}`).toBeLessThanOrEqual(
      rel * (1 + Math.abs(want[p])),
    );
  });
}

/** Every delta row of the case's networks: [net, layer, offset, floats]. */
function regions(c: Case): [number, number, number, number][] {
  return c.plan.nets.flatMap((net, n) =>
    net.layout.layers.map(
      (l, k) => [n, k, net.deltaAt[k], c.batch * l.out] as [number, number, number, number],
    ),
  );
}

function expectSameBits(got: Float32Array, want: Float32Array, c: Case, what: string) {
  for (const [n, k, at, len] of regions(c)) {
    const g = got.subarray(at, at + len);
    const w = want.subarray(at, at + len);
    const first = g.findIndex((v, i) => !Object.is(v, w[i]));
    expect(first, `${what}: net ${n} layer ${k}: first mismatch ${g[first]} vs ${w[first]}`).toBe(-1);
  }
}

describe('mlp_delta_chain', () => {
  it('TS twin: the PPO actor and critic deltas bit for bit equal to mlp.ts backward', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const c = ppoCase(13);
    // The layers below the chains: policy_layer_1, policy_layer_0; value_layer_4 .. value_layer_2.
    expect(c.nets.map((n) => n.layers.map((l) => `${l.layer.in}->${l.layer.out}`))).toEqual([
      ['64->45', '128->64'],
      ['64->1', '128->64', '256->128'],
    ]);
    const { got } = await runCase(backend, c, DELTA_ROWS, false);
    expectSameBits(got, c.want, c, 'PPO');
    // ReLU zeros some deltas and not others (mlp.ts skips zero terms: the twin need not).
    const critic2 = got.subarray(c.plan.nets[1].deltaAt[2], c.plan.nets[1].deltaAt[2] + 13 * 256);
    expect(critic2.some((v) => v === 0) && critic2.some((v) => v !== 0)).toBe(true);
    // Layers above or below the chains are not written.
    const actor0 = c.plan.nets[0].deltaAt[0];
    expect(got[actor0]).not.toBe(UNWRITTEN);
    expect(got[c.plan.nets[1].deltaAt[1]]).toBe(UNWRITTEN);
  });

  it('TS twin: a ragged 4-layer chain (leaky, relu, none) bit for bit equal to mlp.ts backward', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const c = raggedCase(7);
    expect(c.nets[0].layers.map((l) => l.pAct)).toEqual(['leaky', 'none', 'relu', 'leaky']);
    const { got } = await runCase(backend, c, 2, false);
    expectSameBits(got, c.want, c, 'ragged');
  });

  it("TS twin loss mode: ppo_loss's deltas then the plain chain's, bit for bit; the loss sums per workgroup", async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    for (const [batch, normalize] of [
      [13, true],
      [9, false],
    ] as const) {
      const c = ppoCase(batch);
      const li = lossInputs(c, normalize);
      for (const rows of [DELTA_ROWS, 2, 16]) {
        const what = `B=${batch} ${rows} rows${normalize ? '' : ' raw advantages'}`;
        const fused = await runCase(backend, c, rows, false, li);
        const unfused = await runCase(backend, c, rows, false, li, true);
        expectSameBits(fused.got, unfused.got, c, what);
        // The top deltas are the loss head's (not the case's dOut), the chain's below them.
        const top = c.plan.nets[0].deltaAt[2];
        expect(fused.got[top]).not.toBe(c.deltas[top]);
        expect(fused.got[c.plan.nets[1].deltaAt[2]]).not.toBe(UNWRITTEN);
        // ceil(batch / rows) rows of sums; ppo_loss's 16-sample groups coincide at 16 rows.
        const groups = deltaChainLossGroups(batch, rows);
        const got = lossTotals(fused.partials, groups);
        const want = lossTotals(unfused.partials, lossGroups(batch));
        expectTotalsClose(got, want, 1e-6, what);
        if (rows === 16) {
          expect(Array.from(fused.partials)).toEqual(Array.from(unfused.partials));
        }
      }
    }
  });

  const unavailable = emuUnavailable();
  it.skipIf(unavailable !== null)(
    `CUDA twin on the emulator: the TS twin's bits, staged at 2 and 4 rows and the 256-thread build${unavailable ? ` (skipped: ${unavailable})` : ''}`,
    async () => {
      const emu = new CudaEmuBackend();
      const cpu = createCpuBackend();
      backends.push(emu, cpu);
      const check = async (c: Case, rows: number, staged: boolean, what: string) => {
        const want = await runCase(cpu, c, rows, false);
        const { got, kernel } = await runCase(emu, c, rows, staged);
        expectSameBits(got, want.got, c, what);
        return kernel;
      };
      const ppo = ppoCase(6);
      // The critic's chain starts 1 float past a 16-byte boundary (after the actor's 18,221 floats).
      const critic = ppo.plan.nets[1];
      expect(critic.base).toBe(18221);
      expect((critic.base + critic.layout.layers[3].wOffset) % 4).toBe(1);
      for (const rows of [4, 2]) {
        const k = await check(ppo, rows, true, `PPO staged ${rows} rows`);
        expect([k.constants?.STAGED, k.constants?.ROWS, k.workgroupSize[0]]).toEqual([1, rows, 512]);
      }
      // The longer chain first (the actor's starts a step later), the actor's range at an odd offset.
      const reversed = learnerCase([ppoCriticLayout(), ppoActorLayout()], [3, 1], 5);
      expect(reversed.plan.nets[1].base % 4).toBe(1);
      expect((await check(reversed, 4, true, 'PPO critic first, staged 4 rows')).constants?.STAGED).toBe(1);
      const tiled = await check(ppo, 8, false, 'PPO 256-thread build, 8 rows');
      expect([tiled.constants?.STAGED, tiled.workgroupSize[0]]).toEqual([undefined, 256]);
      // One network: all the threads are its; a ragged chain at 16 rows (one partial block).
      const ragged = raggedCase(19);
      expect((await check(ragged, 16, true, 'ragged staged 16 rows')).constants?.STAGED).toBe(1);
      await check(ragged, 4, false, 'ragged 256-thread build');
      expect(emu.launches).toBe(6);
    },
  );

  it.skipIf(unavailable !== null)(
    `CUDA twin loss mode on the emulator: the bits of the emulator's ppo_loss then plain chain, staged at 4 and 2 rows and the 256-thread build${unavailable ? ` (skipped: ${unavailable})` : ''}`,
    async () => {
      const emu = new CudaEmuBackend();
      const cpu = createCpuBackend();
      backends.push(emu, cpu);
      for (const [batch, rows, staged, normalize] of [
        [6, 4, true, true],
        [5, 2, true, false],
        [13, 8, false, true],
        [19, 16, true, true],
        // More than 256 samples: the advantage sums' strided loop (thread 0 takes 2; the staged
        // block's threads 256..511 add +0), ppo_loss's bits all the same. Caught at B = 257:
        // ppo_loss.cuh's sums without `tid < PPO_STAT_THREADS` (thread 256 adds sample 256 twice)
        // or without the stride (`if (tid < n) s += ..`) -> fails.
        [257, 8, true, true],
      ] as const) {
        const c = ppoCase(batch);
        const li = lossInputs(c, normalize);
        const what = `B=${batch} ${rows} rows ${staged ? 'staged' : '256-thread'}`;
        const fused = await runCase(emu, c, rows, staged, li);
        const unfused = await runCase(emu, c, rows, staged, li, true);
        // 16 rows do not fit the staged build's shared memory: the 256-thread build, 2 rows a warp.
        const build = staged && rows < 16 ? 1 : undefined;
        expect([fused.kernel.constants?.STAGED, fused.kernel.constants?.LOSS], what).toEqual([build, 1]);
        expect(unfused.kernel.constants?.LOSS).toBe(0);
        expectSameBits(fused.got, unfused.got, c, what);
        const got = lossTotals(fused.partials, deltaChainLossGroups(batch, rows));
        expectTotalsClose(got, lossTotals(unfused.partials, lossGroups(batch)), 1e-5, what);
        // And the TS twin's loss sums to f32 rounding (its loss head computes in f64).
        const ts = await runCase(cpu, c, rows, false, li);
        expectTotalsClose(
          got,
          lossTotals(ts.partials, deltaChainLossGroups(batch, rows)),
          1e-5,
          `${what} vs TS`,
        );
      }
      expect(emu.launches).toBe(15);
    },
  );

  it('WGSL twin on WebGPU: within the matmul tolerance of the TS twin (1e-6 + 1e-4 |x|)', async (ctx) => {
    let backend: Backend;
    try {
      backend = await createBackend('webgpu');
    } catch (err) {
      if (err instanceof BackendUnavailableError && process.env.FOXHUNT_REQUIRE_WEBGPU !== '1') {
        ctx.skip(`WebGPU unavailable: ${err.message}`);
      }
      throw err;
    }
    const cpu = createCpuBackend();
    backends.push(backend, cpu);
    for (const [c, rows] of [
      [ppoCase(5), DELTA_ROWS],
      [ppoCase(3), 2],
      [raggedCase(21), 16],
    ] as const) {
      const want = (await runCase(cpu, c, rows, false)).got;
      const { got } = await runCase(backend, c, rows, false);
      for (const [n, k, at, len] of regions(c)) {
        let worst = 0;
        for (let i = at; i < at + len; i++) {
          worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1e-6 + 1e-4 * Math.abs(want[i])));
        }
        expect(worst, `${rows} rows net ${n} layer ${k}: worst |diff| / tolerance`).toBeLessThanOrEqual(1);
      }
    }
  });

  it('WGSL twin loss mode on WebGPU: within tolerance of the TS twin (deltas 1e-6 + 1e-4 |x|, loss sums 1e-5)', async (ctx) => {
    let backend: Backend;
    try {
      backend = await createBackend('webgpu');
    } catch (err) {
      if (err instanceof BackendUnavailableError && process.env.FOXHUNT_REQUIRE_WEBGPU !== '1') {
        ctx.skip(`WebGPU unavailable: ${err.message}`);
      }
      throw err;
    }
    const cpu = createCpuBackend();
    backends.push(backend, cpu);
    for (const [batch, rows, normalize] of [
      [5, DELTA_ROWS, true],
      [3, 2, false],
      // 8 rows: 2 rounds of the 8 teams over 20 rows (16 rows' PPO tiles pass lavapipe's 32 KiB).
      [20, 8, true],
    ] as const) {
      const c = ppoCase(batch);
      const li = lossInputs(c, normalize);
      const want = await runCase(cpu, c, rows, false, li);
      const got = await runCase(backend, c, rows, false, li);
      for (const [n, k, at, len] of regions(c)) {
        let worst = 0;
        for (let i = at; i < at + len; i++) {
          worst = Math.max(worst, Math.abs(got.got[i] - want.got[i]) / (1e-6 + 1e-4 * Math.abs(want.got[i])));
        }
        expect(
          worst,
          `B=${batch} ${rows} rows net ${n} layer ${k}: worst |diff| / tolerance`,
        ).toBeLessThanOrEqual(1);
      }
      const groups = deltaChainLossGroups(batch, rows);
      expectTotalsClose(
        lossTotals(got.partials, groups),
        lossTotals(want.partials, groups),
        1e-5,
        `B=${batch}`,
      );
    }
  });

  it("the staged build copies the PPO chains' 52,404 floats (205 KiB) at 2, 4 and 8 rows; 16 rows take the 256-thread build", () => {
    const c = ppoCase(512);
    const [actor, critic] = c.plan.nets;
    const s = deltaChainStaging(c.nets, 4)!;
    expect(s.ranges).toEqual([
      { from: actor.base + actor.layout.layers[1].wOffset, end: actor.base + actor.layout.size },
      { from: critic.base + critic.layout.layers[3].wOffset, end: critic.base + critic.layout.size },
    ]);
    // 11,181 + 41,217 floats of weights and biases (52,398), each range rounded out to float4s.
    expect(s.ranges.map((r) => r.end - r.from)).toEqual([11181, 41217]);
    expect(s.stageFloats).toBe(11184 + 41220);
    // Tiles per row: the actor's 45 + 128 (A) and 64 (B), the critic's 1 + 128 (A) and 64 + 256 (B).
    expect(deltaChainTileFloats(c.nets, 1)).toBe(128 + 64 + 128 + 256);
    expect(s.tileFloats).toBe(4 * 576);
    expect(s.sharedBytes).toBe(4 * (52404 + 4 * 576));
    expect(s.sharedBytes).toBe(218832);
    for (const rows of [2, 4, 8]) {
      const staging = deltaChainStaging(c.nets, rows)!;
      expect(staging.sharedBytes).toBeLessThanOrEqual(DELTA_STAGED_SHARED_LIMIT);
      const spec = mlpDeltaChainStagedSpecFor(rows, staging);
      expect(spec.sharedBytes).toBe(staging.sharedBytes);
      expect(mlpDeltaChainStagedSpecFor(rows, { ...staging })).toBe(spec); // one pipeline per shape
    }
    expect(deltaChainStaging(c.nets, 16)).toBeUndefined();
    // The loss mode's scratch: one float per thread (512) after the tiles; 8 rows still fit.
    for (const rows of [2, 4, 8]) {
      const staging = deltaChainStaging(c.nets, rows, true)!;
      expect(staging.lossFloats).toBe(512);
      expect(staging.sharedBytes).toBe(4 * (52404 + rows * 576 + 512));
      expect(staging.sharedBytes).toBeLessThanOrEqual(DELTA_STAGED_SHARED_LIMIT);
      const spec = mlpDeltaChainStagedSpecFor(rows, staging);
      expect(spec).not.toBe(mlpDeltaChainStagedSpecFor(rows, deltaChainStaging(c.nets, rows)!));
      expect([spec.constants?.LOSS, spec.constants?.LOSS_FLOATS]).toEqual([1, 512]);
    }
    expect(deltaChainStaging(c.nets, 8, true)!.sharedBytes).toBe(230096);
    expect(deltaChainStaging(c.nets, 16, true)).toBeUndefined();
    expect(mlpDeltaChainSpecFor(4, 4 * 576, true).sharedBytes).toBe(4 * (4 * 576 + 256));
    const buf = createCpuBackend().createBuffer(4, 'x');
    const io = { mb: buf, partials: buf };
    const d16 = mlpDeltaChainDispatch(buf, buf, buf, 512, c.nets, 16, true, io);
    expect(d16.kernel).toBe(mlpDeltaChainSpecFor(16, 16 * 576));
    const d4 = mlpDeltaChainDispatch(buf, buf, buf, 512, c.nets, DELTA_ROWS, true, io);
    expect([d4.kernel.constants?.STAGED, d4.kernel.workgroupSize[0], d4.groups[0]]).toEqual([1, 512, 128]);
    expect(d4.uniforms).toMatchObject({
      batch: 512,
      nets: 2,
      layers0: 2,
      layers1: 3,
      in0_0: 64,
      out0_0: 45,
      pAct0_0: 1,
      in1_2: 256,
      out1_2: 128,
      wOff1_2: critic.base + critic.layout.layers[3].wOffset,
      dOff1_2: critic.deltaAt[3],
      xOff1_2: critic.inputAt[3],
      pOff1_2: critic.deltaAt[2],
      in1_3: 0,
    });
  });

  it('rejects chains that do not link, too many layers or networks, wide layers and other rows', () => {
    const buf = createCpuBackend().createBuffer(4, 'x');
    const l = (i: number, o: number, dOff: number, pOff: number) => ({
      layer: { in: i, out: o, wOffset: 0, bOffset: 0 },
      netBase: 0,
      xOff: 0,
      dOff,
      pOff,
      pAct: 'relu' as const,
    });
    const run =
      (nets: DeltaChainNet[], rows = DELTA_ROWS) =>
      () =>
        mlpDeltaChainDispatch(buf, buf, buf, 8, nets, rows, false, { mb: buf, partials: buf });
    expect(run([{ layers: [l(8, 4, 0, 100), l(6, 8, 100, 200)] }])).not.toThrow();
    expect(run([{ layers: [l(8, 4, 0, 100), l(6, 7, 100, 200)] }])).toThrow(/not chained below/);
    expect(run([{ layers: [l(8, 4, 0, 100), l(6, 8, 101, 200)] }])).toThrow(/its dOff the upper/);
    expect(run([{ layers: Array(MAX_DELTA_LAYERS + 1).fill(l(4, 4, 0, 0)) }])).toThrow(/1-4 layers/);
    expect(
      run([{ layers: [l(4, 4, 0, 0)] }, { layers: [l(4, 4, 0, 0)] }, { layers: [l(4, 4, 0, 0)] }]),
    ).toThrow(/1-2 networks/);
    expect(run([])).toThrow(/1-2 networks/);
    expect(run([{ layers: [l(300, 4, 0, 0)] }])).toThrow(/widths 1-256/);
    expect(run([{ layers: [l(4, 4, 0, 0)] }], 3)).toThrow(/2, 4, 8, 16/);
    // The loss mode: net 0's top must be the policy output, net 1's the value output.
    const c = ppoCase(8);
    const { loss } = lossInputs(c);
    const io = { mb: buf, partials: buf, loss };
    const fused = mlpDeltaChainDispatch(buf, buf, buf, 8, c.nets, 4, true, io);
    expect(fused.uniforms).toMatchObject({ loss: 1, rows: 4, nActions: 45, lossAt: LOSS_AT, normalize: 1 });
    expect(fused.uniforms.clip).toBe(Math.fround(0.2));
    expect(fused.kernel.constants?.LOSS).toBe(1);
    const reversed = [c.nets[1], c.nets[0]];
    expect(() => mlpDeltaChainDispatch(buf, buf, buf, 8, reversed, 4, true, io)).toThrow(/loss mode needs/);
    expect(() => mlpDeltaChainDispatch(buf, buf, buf, 8, [c.nets[0]], 4, true, io)).toThrow(
      /loss mode needs/,
    );
    const plain = mlpDeltaChainDispatch(buf, buf, buf, 8, c.nets, 4, true, { mb: buf, partials: buf });
    expect([plain.uniforms.loss, plain.kernel.constants?.LOSS]).toEqual([0, 0]);
  });

  const nvcc = nvccCandidates().find((p) => nvccVersion(p) !== undefined);
  it.skipIf(!nvcc)(
    'CUDA twin: both builds compile for sm_90 without spills, the PDL wait first, the copy loads in flight before its stores (skipped without nvcc)',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'foxhunt-delta-'));
      const _cuda = join(packageRoot(), 'cuda');
      const c = ppoCase(512);
      const specs: KernelSpec[] = [kernels.mlp_delta_chain.spec];
      for (const rows of [2, 4, 8, 16]) {
        specs.push(mlpDeltaChainSpecFor(rows, deltaChainTileFloats(c.nets, rows)));
        const staging = deltaChainStaging(c.nets, rows);
        if (staging) specs.push(mlpDeltaChainStagedSpecFor(rows, staging));
      }
      expect(specs).toHaveLength(8);
      for (const [n, spec] of specs.entries()) {
        const what = `${spec.constants?.STAGED ? 'staged' : '256-thread'}, ${spec.constants?.ROWS} rows`;
        const ptx = ptxEntry(nvcc!, dir, spec, `delta${n}`);
        expect(ptx.ok, ptx.log).toBe(true);
        const body = ptx.body;
        expect(body.indexOf('griddepcontrol.wait'), what).toBeGreaterThan(0);
        expect(body.indexOf('griddepcontrol.wait'), what).toBeLessThan(body.indexOf('ld.global'));
        if (spec.constants?.STAGED) {
          // The PPO copy: 13,101 float4s, 26 per thread in 2 rounds of 13 loads, all of a round
          // issued before the first store to shared memory.
          const perThread = Math.ceil(spec.constants.STAGE_FLOATS / 4 / 512);
          expect(perThread).toBe(26);
          const before = body.slice(0, body.indexOf('st.shared'));
          expect(before.match(/ld\.global\.nc\.v4\.f32/g)?.length, what).toBe(13);
        }
        const cubin = ptx.ptxas();
        expect(cubin.ok, cubin.log).toBe(true);
        if (process.env.FOXHUNT_DELTA_PTXAS) console.log(what, cubin.log.trim());
        expect(cubin.log, what).toMatch(/0 bytes spill stores, 0 bytes spill loads/);
        const regs = Number(/Used (\d+) registers/.exec(cubin.log)?.[1]);
        expect(regs, what).toBeLessThanOrEqual(65536 / spec.workgroupSize[0]);
      }
      // The loss mode's builds: the staged one at 2, 4 and 8 rows (16 take the 256-thread build),
      // its copy's first 13 loads issued before the loss head's first barrier (they are in flight
      // while it runs) and its first store to shared memory after the loss head's trees.
      const lossSpecs: KernelSpec[] = [];
      for (const rows of [2, 4, 8, 16]) {
        lossSpecs.push(mlpDeltaChainSpecFor(rows, deltaChainTileFloats(c.nets, rows), true));
        const staging = deltaChainStaging(c.nets, rows, true);
        if (staging) lossSpecs.push(mlpDeltaChainStagedSpecFor(rows, staging));
      }
      expect(lossSpecs).toHaveLength(7);
      for (const [n, spec] of lossSpecs.entries()) {
        const what = `loss mode ${spec.constants?.STAGED ? 'staged' : '256-thread'}, ${spec.constants?.ROWS} rows`;
        expect(spec.constants?.LOSS, what).toBe(1);
        const ptx = ptxEntry(nvcc!, dir, spec, `loss${n}`);
        expect(ptx.ok, ptx.log).toBe(true);
        const body = ptx.body;
        expect(body.indexOf('griddepcontrol.wait'), what).toBeGreaterThan(0);
        expect(body.indexOf('griddepcontrol.wait'), what).toBeLessThan(body.indexOf('ld.global'));
        if (spec.constants?.STAGED) {
          const barrier = body.indexOf('bar.sync');
          expect(body.slice(0, barrier).match(/ld\.global\.nc\.v4\.f32/g)?.length, what).toBe(13);
          // The first float4 store of the copy comes after the loss head's shuffles (its team trees).
          expect(body.indexOf('st.shared.v4.f32'), what).toBeGreaterThan(body.indexOf('shfl.sync'));
        }
        const cubin = ptx.ptxas();
        expect(cubin.ok, cubin.log).toBe(true);
        if (process.env.FOXHUNT_DELTA_PTXAS) console.log(what, cubin.log.trim());
        expect(cubin.log, what).toMatch(/0 bytes spill stores, 0 bytes spill loads/);
        const regs = Number(/Used (\d+) registers/.exec(cubin.log)?.[1]);
        expect(regs, what).toBeLessThanOrEqual(65536 / spec.workgroupSize[0]);
        expect(spec.sharedBytes ?? 0, what).toBeLessThanOrEqual(DELTA_STAGED_SHARED_LIMIT);
      }
    },
  );
});
