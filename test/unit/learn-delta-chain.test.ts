/**
 * mlp_delta_chain (the input gradients of the networks' top layers in one launch): the TS twin
 * gives the same bits as mlp.ts's backward on the PPO actor and critic (the deltas of
 * policy_layer_1, policy_layer_0, value_layer_4, value_layer_3 and value_layer_2 from the output
 * deltas), and on a ragged single chain with every activation; the CUDA twin on the fiber emulator
 * gives the TS twin's bits (it adds in the same order, and the emulator does not fuse), as the
 * staged build (the PPO weights copied into shared memory from the critic's odd params offset) at
 * 2 and 4 rows and as the 256-thread build; the WGSL twin on WebGPU (lavapipe here) agrees to the
 * matmul tolerance; the CUDA source compiles for sm_90 without spills with the PDL wait first.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../src/backend/cpu/index.js';
import { compileOptions, nvccCandidates, nvccVersion } from '../../src/backend/cuda/compile.js';
import { packageRoot } from '../../src/backend/cuda/native.js';
import { cudaPreamble } from '../../src/backend/cuda/preamble.js';
import { createBackend } from '../../src/backend/index.js';
import { type Backend, BackendUnavailableError, type KernelSpec } from '../../src/backend/types.js';
import {
  DELTA_ROWS,
  DELTA_STAGED_SHARED_LIMIT,
  type DeltaChainNet,
  deltaChainStaging,
  deltaChainTileFloats,
  MAX_DELTA_LAYERS,
  mlpDeltaChainDispatch,
  mlpDeltaChainSpecFor,
  mlpDeltaChainStagedSpecFor,
} from '../../src/kernels/mlp_delta_chain.js';
import { kernels } from '../../src/kernels/registry.js';
import { type MlpPlan, planMlps } from '../../src/learn/device_mlp.js';
import { backwardMlp, createMlpCache, forwardMlpBatch } from '../../src/learn/mlp.js';
import { initParams } from '../../src/nets/forward.js';
import {
  buildLayout,
  NetId,
  type NetLayout,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../src/nets/layout.js';
import { CudaEmuBackend, emuUnavailable } from './learn-device-cuda/emu_backend.js';

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
  const nets: DeltaChainNet[] = plan.nets.map((net, n) => {
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
    const chain = [];
    for (let k = last; k >= from[n]; k--) {
      chain.push({
        layer: layers[k],
        netBase: net.base,
        xOff: net.inputAt[k],
        dOff: net.deltaAt[k],
        pOff: net.deltaAt[k - 1],
        pAct: layers[k - 1].act,
      });
    }
    return { layers: chain };
  });
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

/** Runs the case's launch on `backend`; returns the deltas buffer and the dispatched kernel. */
async function runCase(backend: Backend, c: Case, rows: number, staged: boolean) {
  const pBuf = backend.createBuffer(4 * c.params.length, 'delta.params');
  const aBuf = backend.createBuffer(4 * c.acts.length, 'delta.acts');
  const dBuf = backend.createBuffer(4 * c.deltas.length, 'delta.deltas');
  try {
    backend.upload(pBuf, c.params);
    backend.upload(aBuf, c.acts);
    backend.upload(dBuf, c.deltas);
    const d = mlpDeltaChainDispatch(pBuf, aBuf, dBuf, c.batch, c.nets, rows, staged);
    expect(d.groups[0]).toBe(Math.ceil(c.batch / rows));
    backend.run([d]);
    return { got: new Float32Array(await backend.download(dBuf)), kernel: d.kernel };
  } finally {
    backend.destroyBuffer(pBuf);
    backend.destroyBuffer(aBuf);
    backend.destroyBuffer(dBuf);
  }
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
    const buf = createCpuBackend().createBuffer(4, 'x');
    const d16 = mlpDeltaChainDispatch(buf, buf, buf, 512, c.nets, 16, true);
    expect(d16.kernel).toBe(mlpDeltaChainSpecFor(16, 16 * 576));
    const d4 = mlpDeltaChainDispatch(buf, buf, buf, 512, c.nets, DELTA_ROWS, true);
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
        mlpDeltaChainDispatch(buf, buf, buf, 8, nets, rows);
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
  });

  const nvcc = nvccCandidates().find((p) => nvccVersion(p) !== undefined);
  it.skipIf(!nvcc)(
    'CUDA twin: both builds compile for sm_90 without spills, the PDL wait first, the copy loads in flight before its stores (skipped without nvcc)',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'foxhunt-delta-'));
      const cuda = join(packageRoot(), 'cuda');
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
        const src = join(dir, `delta${n}.cu`);
        writeFileSync(src, cudaPreamble(spec) + readFileSync(join(cuda, 'mlp_delta_chain.cu'), 'utf8'));
        const out = join(dir, `delta${n}.ptx`);
        const args = [...compileOptions(9, 0), '-Werror', 'all-warnings', '-I', cuda];
        const ptx = spawnSync(nvcc!, ['-ptx', ...args, '-o', out, src], { encoding: 'utf8' });
        expect(ptx.status, ptx.stderr).toBe(0);
        const text = readFileSync(out, 'utf8');
        const body = text.slice(text.indexOf('.entry mlp_delta_chain'));
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
        const cubin = spawnSync(
          nvcc!,
          ['-cubin', '-Xptxas', '-v', ...args, '-o', join(dir, 'c.cubin'), src],
          { encoding: 'utf8' },
        );
        expect(cubin.status, cubin.stderr).toBe(0);
        if (process.env.FOXHUNT_DELTA_PTXAS) console.log(what, src, cubin.stderr.trim());
        expect(cubin.stderr, what).toMatch(/0 bytes spill stores, 0 bytes spill loads/);
        const regs = Number(/Used (\d+) registers/.exec(cubin.stderr)?.[1]);
        expect(regs, what).toBeLessThanOrEqual(65536 / spec.workgroupSize[0]);
      }
    },
  );
});
