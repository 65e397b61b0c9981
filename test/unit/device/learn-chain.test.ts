import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import { nvccCandidates, nvccVersion } from '../../../src/backend/cuda/compile.js';
import { packageRoot } from '../../../src/backend/cuda/native.js';
import { createBackend } from '../../../src/backend/index.js';
import { type Backend, BackendUnavailableError, type Dispatch } from '../../../src/backend/types.js';
import { defaultConfig, type PpoConfig } from '../../../src/config.js';
import { DevicePpoLearner } from '../../../src/device/learn.js';
import { createMlpBuffers, forwardDispatches, planMlps } from '../../../src/device/learn_mlp.js';
import { syntheticPpoRollout, uploadPpoRollout } from '../../../src/device/rollout.js';
import {
  CHAIN_MAX_WIDTH,
  CHAIN_ROWS,
  CHAIN_ROWS_STAGED,
  CHAIN_STAGED_SHARED_LIMIT,
  chainGroups,
  chainStagedGroups,
  chainStaging,
  MAX_CHAIN_LAYERS,
  mlpChainForwardDispatch,
  mlpChainForwardSpec,
  mlpChainForwardSpecFor,
  mlpChainForwardStagedSpecFor,
} from '../../../src/kernels/mlp_chain_forward.js';
import { createMlpCache, forwardMlpBatch } from '../../../src/learn/mlp.js';
import { initParams } from '../../../src/nets/forward.js';
import {
  buildLayout,
  NetId,
  type NetLayout,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';
import { ptxEntry } from '../learn/helpers.js';

const backends: Backend[] = [];
afterEach(() => {
  for (const b of backends.splice(0)) b.destroy();
});

/** Deterministic inputs in [-2, 2). */
function inputs(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let x = seed >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = (x / 2 ** 32) * 4 - 2;
  }
  return out;
}

/** A chain whose widths are ragged (not multiples of 4 or of CHUNK), every activation. */
const ragged = buildLayout('ragged', [
  { name: 'r0', in: 37, out: 70, act: 'relu' },
  { name: 'r1', in: 70, out: 37, act: 'leaky' },
  { name: 'r2', in: 37, out: 3, act: 'none' },
]);
/** The PPO critic's tail shape (256 -> 128 -> 64 -> 1). */
const tail = buildLayout('ppo_tail', [
  { name: 't0', in: 256, out: 128, act: 'relu' },
  { name: 't1', in: 128, out: 64, act: 'relu' },
  { name: 't2', in: 64, out: 1, act: 'none' },
]);

/**
 * Runs `layout` as one mlp_chain_forward launch over `batch` rows on `backend` (params at an odd
 * offset, as the critic's are after the actor's) and returns each layer's outputs, with mlp.ts's.
 */
async function chainAgainstMlp(backend: Backend, layout: NetLayout, batch: number, rows = CHAIN_ROWS) {
  const base = 5;
  const params = initParams(layout, NetId.Critic, 7);
  const x = inputs(batch * layout.layers[0].in, 3);
  const cache = createMlpCache(layout, batch);
  cache.acts[0].set(x);
  forwardMlpBatch(layout, params, cache, batch);
  const xOff = 3;
  const yOff: number[] = [];
  let at = xOff + x.length;
  for (const l of layout.layers) {
    yOff.push(at);
    at += batch * l.out;
  }
  const pBuf = backend.createBuffer(4 * (base + params.length), 'chain.params');
  const aBuf = backend.createBuffer(4 * at, 'chain.acts');
  try {
    backend.upload(pBuf, params, 4 * base);
    backend.upload(aBuf, x, 4 * xOff);
    const d = mlpChainForwardDispatch(
      pBuf,
      aBuf,
      batch,
      xOff,
      layout.layers.map((layer, c) => ({ layer, netBase: base, yOff: yOff[c] })),
      rows,
    );
    expect(d.groups[0]).toBe(Math.ceil(batch / rows));
    expect(d.kernel.constants?.ROWS).toBe(rows);
    backend.run([d]);
    const got: Float32Array[] = [];
    for (const [c, l] of layout.layers.entries()) {
      got.push(new Float32Array(await backend.download(aBuf, 4 * yOff[c], 4 * batch * l.out)));
    }
    return { got, want: cache.acts.slice(1) as Float32Array[] };
  } finally {
    backend.destroyBuffer(pBuf);
    backend.destroyBuffer(aBuf);
  }
}

describe('mlp_chain_forward', () => {
  it('TS twin: every layer output bit for bit equal to mlp.ts (same order: bias, then increasing input)', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    for (const [layout, batch] of [
      [ragged, 21],
      [tail, 19],
    ] as const) {
      const { got, want } = await chainAgainstMlp(backend, layout, batch);
      got.forEach((g, c) => {
        expect(Buffer.from(g.buffer).equals(Buffer.from(want[c].buffer)), `${layout.kind} layer ${c}`).toBe(
          true,
        );
      });
    }
  });

  it('WGSL twin on WebGPU: within the matmul tolerance of mlp.ts (1e-6 + 1e-4 |x|), every layer', async (ctx) => {
    let backend: Backend;
    try {
      backend = await createBackend('webgpu');
    } catch (err) {
      if (err instanceof BackendUnavailableError && process.env.FOXHUNT_REQUIRE_WEBGPU !== '1') {
        ctx.skip(`WebGPU unavailable: ${err.message}`);
      }
      throw err;
    }
    backends.push(backend);
    for (const [layout, batch, rows] of [
      [ragged, 21, CHAIN_ROWS],
      [tail, 19, CHAIN_ROWS],
      [tail, 37, 16],
      [ragged, 5, 2],
    ] as const) {
      const { got, want } = await chainAgainstMlp(backend, layout, batch, rows);
      got.forEach((g, c) => {
        let worst = 0;
        g.forEach((v, k) => {
          worst = Math.max(worst, Math.abs(v - want[c][k]) / (1e-6 + 1e-4 * Math.abs(want[c][k])));
        });
        expect(worst, `${layout.kind} ${rows} rows layer ${c}: worst |diff| / tolerance`).toBeLessThanOrEqual(
          1,
        );
        expect(g.some((v) => v !== 0)).toBe(true);
      });
    }
  });

  it('k-groups fit the workgroup tile for every width; the PPO tail takes 2, 4 and 4 groups', () => {
    expect([chainGroups(256, 128), chainGroups(128, 64), chainGroups(64, 1)]).toEqual([2, 4, 4]);
    for (let nIn = 1; nIn <= CHAIN_MAX_WIDTH; nIn++) {
      for (let nOut = 1; nOut <= CHAIN_MAX_WIDTH; nOut++) {
        const g = chainGroups(nIn, nOut);
        // The groups' sums are parked in the ROWS x MAX_WIDTH tile: g * nOut <= MAX_WIDTH.
        expect(g * nOut <= CHAIN_MAX_WIDTH && g >= 1 && (g & (g - 1)) === 0).toBe(true);
      }
    }
  });

  const nvcc = nvccCandidates().find((p) => nvccVersion(p) !== undefined);
  it.skipIf(!nvcc)(
    'CUDA twin: every rows variant of both builds compiles for sm_90 without spills, the PDL wait first (skipped without nvcc)',
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'foxhunt-chain-'));
      const _cuda = join(packageRoot(), 'cuda');
      // The staged build at the PPO critic's tail in the learner's layout (an odd params offset).
      const plan = planMlps([ppoActorLayout(), ppoCriticLayout()], 512, 1, 0, 'last', 'most', true);
      const critic = plan.nets[1];
      const tailLayers = critic.layout.layers
        .slice(critic.chainFrom)
        .map((layer) => ({ layer, netBase: critic.base, yOff: 0 }));
      const specs = [2, 4, 8, 16].flatMap((rows) => {
        const staging = chainStaging(tailLayers, rows)!;
        expect(staging.wShift, 'the critic starts at an odd float').toBeOneOf([1, 3]);
        return [mlpChainForwardSpecFor(rows), mlpChainForwardStagedSpecFor(rows, staging)];
      });
      for (const [n, spec] of specs.entries()) {
        const what = `${spec.constants?.STAGED ? 'staged' : 'tiled'}, ${spec.constants?.ROWS} rows`;
        const ptx = ptxEntry(nvcc!, dir, spec, `chain${n}`);
        expect(ptx.ok, ptx.log).toBe(true);
        const body = ptx.body;
        // The wait comes before the first global load.
        expect(body.indexOf('griddepcontrol.wait'), what).toBeGreaterThan(0);
        expect(body.indexOf('griddepcontrol.wait'), what).toBeLessThan(body.indexOf('ld.global'));
        if (spec.constants?.STAGED) {
          // Every float4 load of the copy (21 per thread at the PPO tail: 31 per warp and round)
          // is issued before the first store to shared memory.
          const perThread = Math.ceil(spec.constants.STAGE_FLOATS / 4 / (31 * 16));
          expect(perThread).toBe(21);
          const before = body.slice(0, body.indexOf('st.shared'));
          expect(before.match(/ld\.global\.nc\.v4\.f32/g)?.length, what).toBe(perThread);
        }
        const cubin = ptx.ptxas();
        expect(cubin.ok, cubin.log).toBe(true);
        expect(cubin.log, what).toMatch(/0 bytes spill stores, 0 bytes spill loads/);
        // 512 threads per block: at most 128 registers each.
        const regs = Number(/Used (\d+) registers/.exec(cubin.log)?.[1]);
        expect(regs, what).toBeLessThanOrEqual(65536 / spec.workgroupSize[0]);
        if (process.env.FOXHUNT_CHAIN_PTXAS) console.log(what, cubin.log.trim());
      }
    },
  );

  it('rejects layers that do not chain or are wider than the tile', () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const buf = backend.createBuffer(4, 'x');
    const l = (i: number, o: number) => ({
      layer: { in: i, out: o, wOffset: 0, bOffset: 0, act: 'none' as const },
      netBase: 0,
      yOff: 0,
    });
    expect(() => mlpChainForwardDispatch(buf, buf, 8, 0, [l(4, 300)])).toThrow(/widths <= 256/);
    expect(() => mlpChainForwardDispatch(buf, buf, 8, 0, [l(4, 5), l(6, 1)])).toThrow(/chained/);
    expect(() =>
      mlpChainForwardDispatch(buf, buf, 8, 0, Array(MAX_CHAIN_LAYERS + 1).fill(l(4, 4))),
    ).toThrow();
  });
});

describe('the chain plan', () => {
  const layouts = [ppoActorLayout(), ppoCriticLayout()];

  it("runs the PPO critic's layers 3..5 as one launch after the paired stages, and splits none of the layers it reads", () => {
    // WebGPU's 'most' plan splits value_layer_2 .. value_layer_4's K without the chain.
    const off = planMlps(layouts, 512, 4, 256, 'later', 'most', false);
    const on = planMlps(layouts, 512, 4, 256, 'later', 'most', true);
    expect(off.nets[1].fwdSplits.slice(2, 5).some((s) => s > 1)).toBe(true);
    expect(on.nets.map((n) => n.chainFrom)).toEqual([3, 3]);
    expect(on.nets[1].fwdSplits.slice(2)).toEqual([1, 1, 1, 1]);
    const buffers = createMlpBuffers(createCpuBackend(), on, 'plan');
    const launches = forwardDispatches(on, buffers);
    expect(launches.map((d) => d.kernel.name)).toEqual([
      'mlp_forward',
      'mlp_forward',
      'mlp_forward',
      'mlp_chain_forward',
    ]);
    const critic = on.nets[1];
    expect(launches[3].uniforms).toMatchObject({
      batch: 512,
      layers: 3,
      xOff: critic.inputAt[3],
      in0: 256,
      out0: 128,
      out1: 64,
      out2: 1,
      yOff0: critic.outputAt[3],
      yOff1: critic.outputAt[4],
      yOff2: critic.outputAt[5],
      wOff0: critic.base + critic.layout.layers[3].wOffset,
    });
    expect(launches[3].groups[0]).toBe(512 / CHAIN_ROWS);
    // The paired stages are the same launches as without the chain (their value_layer_2 unsplit).
    expect(forwardDispatches(off, createMlpBuffers(createCpuBackend(), off, 'plan'))).toHaveLength(6);
  });

  it('is off unless asked for (the curiosity learner and mlp_forward cases keep their launches)', () => {
    const plan = planMlps(layouts, 512);
    expect(plan.nets.map((n) => n.chainFrom)).toEqual([3, 6]);
    expect(plan.chainRows).toBe(0);
  });

  it('takes 2, 4, 8 or 16 rows per workgroup (one pipeline each), nothing else', () => {
    // 'later' (WebGPU): the 256-thread build; 'last' (CUDA): the staged build.
    for (const handoff of ['later', 'last'] as const) {
      const plan = planMlps(layouts, 512, 1, 0, handoff, 'most', 16);
      expect(plan.chainStaged).toBe(handoff === 'last');
      const launches = forwardDispatches(plan, createMlpBuffers(createCpuBackend(), plan, 'plan'));
      const chain = launches.at(-1)!;
      expect([chain.kernel.name, chain.kernel.constants?.ROWS, chain.groups[0]]).toEqual([
        'mlp_chain_forward',
        16,
        32,
      ]);
      if (handoff === 'later') expect(mlpChainForwardSpecFor(16)).toBe(chain.kernel);
      else expect(chain.kernel.workgroupSize).toEqual([512, 1, 1]);
    }
    expect(mlpChainForwardSpecFor(CHAIN_ROWS)).toBe(mlpChainForwardSpec);
    expect(() => planMlps(layouts, 512, 1, 0, 'last', 'most', 32)).toThrow(/2, 4, 8, 16/);
  });

  it("CUDA's staged build copies the PPO critic's whole tail (161 KiB) into shared memory for every rows choice", () => {
    const plan = planMlps(layouts, 512, 1, 0, 'last', 'most', true);
    const critic = plan.nets[1];
    const tailLayers = critic.layout.layers
      .slice(critic.chainFrom)
      .map((layer) => ({ layer, netBase: critic.base, yOff: 0 }));
    const w0 = critic.base + critic.layout.layers[3].wOffset;
    const tailFloats = tailLayers.reduce((n, l) => n + l.layer.in * l.layer.out + l.layer.out, 0);
    expect(tailFloats).toBe(41217);
    for (const rows of [2, 4, 8, 16]) {
      const s = chainStaging(tailLayers, rows)!;
      expect(s.wShift).toBe(w0 % 4);
      expect(s.stageFloats).toBe(Math.ceil(tailFloats / 4) * 4);
      expect(s.sharedBytes).toBe(4 * (s.stageFloats + 2 * rows * CHAIN_MAX_WIDTH));
      expect(s.sharedBytes).toBeLessThanOrEqual(CHAIN_STAGED_SHARED_LIMIT);
      const spec = mlpChainForwardStagedSpecFor(rows, s);
      expect(spec.constants).toMatchObject({ STAGED: 1, ROWS: rows, WSHIFT: w0 % 4 });
      expect(spec.sharedBytes).toBe(s.sharedBytes);
      expect(mlpChainForwardStagedSpecFor(rows, { ...s })).toBe(spec); // one pipeline per shape
    }
    const d = forwardDispatches(plan, createMlpBuffers(createCpuBackend(), plan, 'plan')).at(-1)!;
    // The default rows of the staged build (CHAIN_ROWS_STAGED = 4, measured fastest): 128 blocks.
    expect([d.kernel.constants?.STAGED, d.kernel.workgroupSize[0], d.groups[0]]).toEqual([
      1,
      512,
      512 / CHAIN_ROWS_STAGED,
    ]);
    expect(CHAIN_ROWS_STAGED).toBe(4);
    // The k-groups: 128 x 4, 64 x 8 and 1 x 16 threads; every width within 512 threads, <= 32 lanes.
    expect([chainStagedGroups(256, 128), chainStagedGroups(128, 64), chainStagedGroups(64, 1)]).toEqual([
      4, 8, 16,
    ]);
    for (let nIn = 1; nIn <= CHAIN_MAX_WIDTH; nIn++) {
      for (let nOut = 1; nOut <= CHAIN_MAX_WIDTH; nOut++) {
        const g = chainStagedGroups(nIn, nOut);
        expect(g * nOut <= 512 && g <= 32 && g <= Math.ceil(nIn / 4) && (g & (g - 1)) === 0).toBe(true);
      }
    }
  });

  it('a tail too large for shared memory takes the 256-thread build on CUDA too', () => {
    const wide = buildLayout('wide', [
      { name: 'w0', in: 256, out: 256, act: 'relu' },
      { name: 'w1', in: 256, out: 256, act: 'relu' },
      { name: 'w2', in: 256, out: 1, act: 'none' },
    ]);
    const layers = wide.layers.map((layer) => ({ layer, netBase: 3, yOff: 0 }));
    expect(chainStaging(layers, 8)).toBeUndefined();
    const fits = tail.layers.map((layer) => ({ layer, netBase: 3, yOff: 0 }));
    expect(chainStaging(fits, 8)).toBeDefined();
    const buf = createCpuBackend().createBuffer(4, 'x');
    expect(mlpChainForwardDispatch(buf, buf, 64, 0, layers, 8, true).kernel).toBe(mlpChainForwardSpec);
    expect(mlpChainForwardDispatch(buf, buf, 64, 0, fits, 8, true).kernel.constants?.STAGED).toBe(1);
    expect(mlpChainForwardDispatch(buf, buf, 64, 0, fits, 8).kernel).toBe(mlpChainForwardSpec);
  });

  it('DevicePpoLearner: 13 launches per minibatch step with the chain (default), 15 without', () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const cfg: PpoConfig = { ...defaultConfig.ppo, minibatch: 64, updateEpochs: 1 };
    const rollout = uploadPpoRollout(backend, syntheticPpoRollout(128, 54, 45, 1), 54);
    const perStep = (chain?: boolean, check?: (d: Dispatch[]) => void) => {
      const dev = new DevicePpoLearner({
        backend,
        actorLayout: layouts[0],
        criticLayout: layouts[1],
        actor: initParams(layouts[0], NetId.Actor, 1),
        critic: initParams(layouts[1], NetId.Critic, 1),
        cfg,
        seed: 1,
        chain,
      });
      const launches = dev.updateDispatches(rollout);
      check?.(launches);
      const n = launches.length / 2;
      dev.destroy();
      return n;
    };
    expect(
      perStep(undefined, (launches) => {
        // Launched with PDL like the other update kernels (its CUDA source begins with the wait).
        const chain = launches.filter((d) => d.kernel.name === 'mlp_chain_forward');
        expect(chain).toHaveLength(2);
        expect(chain.every((d) => d.kernel.pdl === true)).toBe(true);
      }),
    ).toBe(13);
    expect(perStep(false)).toBe(15);
  });

  it('the learner on the CPU gives the same bits with the chain on and off (the TS twin adds as mlp_forward does)', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const actorLayout = buildLayout('small_actor', [
      { name: 'a0', in: 6, out: 8, act: 'relu' },
      { name: 'a1', in: 8, out: 5, act: 'none' },
    ]);
    const criticLayout = buildLayout('small_critic', [
      { name: 'c0', in: 6, out: 12, act: 'relu' },
      { name: 'c1', in: 12, out: 10, act: 'relu' },
      { name: 'c2', in: 10, out: 7, act: 'leaky' },
      { name: 'c3', in: 7, out: 1, act: 'none' },
    ]);
    const cfg: PpoConfig = { ...defaultConfig.ppo, minibatch: 10, updateEpochs: 2 };
    const rollout = uploadPpoRollout(backend, syntheticPpoRollout(34, 6, 5, 2), 6);
    const run = async (chain: boolean) => {
      const dev = new DevicePpoLearner({
        backend,
        actorLayout,
        criticLayout,
        actor: initParams(actorLayout, NetId.Actor, 4),
        critic: initParams(criticLayout, NetId.Critic, 4),
        cfg,
        seed: 4,
        chain,
      });
      expect(dev.plan.nets[1].chainFrom).toBe(chain ? 2 : 4);
      const stats = await dev.update(rollout, 1);
      const params = await dev.readParams();
      dev.destroy();
      return { stats, params };
    };
    const on = await run(true);
    const off = await run(false);
    expect(on.stats).toEqual(off.stats);
    expect(Buffer.from(on.params.critic.buffer).equals(Buffer.from(off.params.critic.buffer))).toBe(true);
    expect(Buffer.from(on.params.actor.buffer).equals(Buffer.from(off.params.actor.buffer))).toBe(true);
  });
});
