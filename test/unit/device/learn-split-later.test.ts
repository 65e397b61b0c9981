/**
 * Split matmuls with the 'later' hand-off (WebGPU: src/device/learn_mlp.ts, wgsl/mlp_backward.wgsl,
 * wgsl/mlp_forward.wgsl): split workgroups only store their slices and a later launch adds them
 * (backward: the next launch, or one after the last; forward: the next layer's launch, as it stages
 * its inputs). Checks the plan WebGPU gets, the launch lists it makes, and that the TS references
 * of the hand-offs (what the CPU backend runs) give the unsplit results. The WGSL twins are checked
 * against the references by the parity suite on lavapipe, whose mlp_forward, mlp_backward and
 * learner cases split (asserted here).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { devMain } from '../../../dev/main.js';
import { CpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend } from '../../../src/backend/types.js';
import { defaultConfig } from '../../../src/config.js';
import { DevicePpoLearner } from '../../../src/device/learn.js';
import {
  backwardDispatches,
  createMlpBuffers,
  dwHandoffFor,
  dwSplitBudgetFor,
  forwardDispatches,
  type MlpPlan,
  planMlps,
  WEBGPU_SPLIT_BUDGET,
} from '../../../src/device/learn_mlp.js';
import { initParams } from '../../../src/nets/forward.js';
import {
  buildLayout,
  NetId,
  type NetLayout,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';

const cpu = new CpuBackend();
const webgpu: Pick<Backend, 'kind' | 'info'> = {
  kind: 'webgpu',
  info: { kind: 'webgpu', device: 'test', driver: '', limits: {} },
};

function launches(plan: MlpPlan) {
  const b = createMlpBuffers(cpu, plan, 'split-later');
  try {
    return backwardDispatches(plan, b).map((d) => ({
      splits: d.uniforms.splits,
      sum: d.uniforms.sumSplits,
      d,
    }));
  } finally {
    for (const buf of Object.values(b)) cpu.destroyBuffer(buf);
  }
}

const ppo = () => [ppoActorLayout(), ppoCriticLayout()];

describe("split dW, 'later' hand-off", () => {
  it('is what WebGPU plans, with a budget; CUDA keeps the last-block hand-off, the CPU never splits', () => {
    expect(dwSplitBudgetFor(webgpu)).toBe(WEBGPU_SPLIT_BUDGET);
    expect(dwHandoffFor(webgpu)).toBe('later');
    expect(dwHandoffFor({ kind: 'cuda' })).toBe('last');
    expect(dwSplitBudgetFor(cpu)).toBe(0);
  });

  it('finishes each launch’s split tiles in the next launch, and the last ones in one more', () => {
    const plan = planMlps(ppo(), 512, 4, WEBGPU_SPLIT_BUDGET, 'later');
    expect(plan.splitPolicy).toBe('waves');
    const l = launches(plan);
    // Fewest waves (of 128 workgroups) x rounds: 80, 104 + 6, 108 + 10, 200 + 22, 230 + 52, 128 groups.
    expect(l.map((x) => x.splits)).toEqual([8, 4, 2, 2, 1, 8, 1]);
    expect(l.map((x) => x.sum)).toEqual([0, 8, 4, 2, 2, 0, 8]);
    expect(l.map((x) => x.d.uniforms.sliceOnly)).toEqual([1, 1, 1, 1, 0, 1, 0]);
    // Policy 'most' (the first WebGPU plan): as many slices as the budget allows.
    const most = launches(planMlps(ppo(), 512, 4, WEBGPU_SPLIT_BUDGET, 'later', 'most'));
    expect(most.map((x) => x.splits)).toEqual([8, 8, 8, 2, 1, 8, 1]);
    expect(most.map((x) => x.sum)).toEqual([0, 8, 8, 8, 2, 0, 8]);
    // The extra launch has no jobs of its own: one workgroup per split tile of value_layer_0.
    const last = l[6].d;
    expect(last.uniforms.out0).toBe(0);
    expect(last.uniforms.out1).toBe(0);
    expect(last.groups[0] * last.groups[1] * last.groups[2]).toBeGreaterThanOrEqual(16);
    // 'last' (CUDA) adds nothing and needs no extra launch.
    const cuda = launches(planMlps(ppo(), 512, 4, 264, 'last'));
    expect(cuda.map((x) => x.sum)).toEqual([0, 0, 0, 0, 0, 0]);
    expect(cuda.every((x) => x.d.uniforms.sliceOnly === 0)).toBe(true);
  });

  it('splits the parity suite’s mlp_forward and mlp_backward cases (B = 70) on WebGPU', () => {
    const plan = planMlps(ppo(), 70, 4, dwSplitBudgetFor(webgpu), dwHandoffFor(webgpu), 'most');
    const l = launches(plan);
    expect(l.filter((x) => x.splits > 1).length).toBeGreaterThanOrEqual(4);
    expect(l.at(-1)?.sum).toBeGreaterThan(1);
    expect(plan.nets[1].fwdSplits.filter((s) => s > 1).length).toBeGreaterThanOrEqual(3);
  });

  it('splits the forward K of the hidden layers, never an output layer, within the budget', () => {
    // Fewest waves x rounds: only the critic's 256- and 128-input layers gain (one wave either way).
    expect(planMlps(ppo(), 512, 4, WEBGPU_SPLIT_BUDGET, 'later').nets.map((n) => n.fwdSplits)).toEqual([
      [1, 1, 1],
      [1, 1, 1, 4, 2, 1],
    ]);
    const plan = planMlps(ppo(), 512, 4, WEBGPU_SPLIT_BUDGET, 'later', 'most');
    expect(plan.nets.map((n) => n.fwdSplits)).toEqual([
      [1, 2, 1],
      [1, 2, 3, 4, 2, 1],
    ]);
    // Split layers' scratch lies after every layer's rows, without overlap.
    const rows = planMlps(ppo(), 512, 4, 0).actFloats;
    const regions = plan.nets
      .flatMap((n) =>
        n.layout.layers.map((l, i) => [n.fwdScratchAt[i], n.fwdSplits[i] * 512 * l.out, n.fwdSplits[i]]),
      )
      .filter(([, , s]) => s > 1)
      .sort((a, b) => a[0] - b[0]);
    expect(regions[0][0]).toBe(rows);
    for (let i = 1; i < regions.length; i++)
      expect(regions[i][0]).toBe(regions[i - 1][0] + regions[i - 1][1]);
    expect(plan.actFloats).toBe(regions.at(-1)![0] + regions.at(-1)![1]);
    // The next layer's launch reads the slices.
    const b = createMlpBuffers(cpu, plan, 'split-later');
    try {
      const f = forwardDispatches(plan, b);
      expect(f.map((d) => [d.uniforms.splits0, d.uniforms.splits1])).toEqual([
        [1, 1],
        [2, 2],
        [1, 3],
        [4, 1],
        [2, 1],
        [1, 1],
      ]);
      expect(f.map((d) => [d.uniforms.xSplits0, d.uniforms.xSplits1])).toEqual([
        [1, 1],
        [1, 1],
        [2, 2],
        [3, 1],
        [4, 1],
        [2, 1],
      ]);
      // Only launches reading a split input take the SPLIT_IN pipeline (the others stage plain reads).
      expect(f.map((d) => d.kernel.constants?.SPLIT_IN)).toEqual([0, 0, 1, 1, 1, 1]);
      expect(f[0].kernel).toBe(f[1].kernel);
      expect(f[2].kernel).not.toBe(f[1].kernel);
    } finally {
      for (const buf of Object.values(b)) cpu.destroyBuffer(buf);
    }
    // CUDA: half the budget (one mlp_forward block per SM): the critic's 256- and 128-input layers.
    const cuda = planMlps(ppo(), 512, 4, 264, 'last');
    expect(cuda.nets.map((n) => n.fwdSplits)).toEqual([
      [1, 1, 1],
      [1, 1, 1, 4, 2, 1],
    ]);
  });

  it('gives the unsplit layer outputs in the TS reference of the forward K split', async () => {
    const layouts = [
      buildLayout('small_actor', [
        { name: 'a0', in: 54, out: 40, act: 'relu' },
        { name: 'a1', in: 40, out: 45, act: 'none' },
      ]),
      buildLayout('small_critic', [
        { name: 'c0', in: 54, out: 130, act: 'relu' },
        { name: 'c1', in: 130, out: 70, act: 'leaky' },
        { name: 'c2', in: 70, out: 1, act: 'none' },
      ]),
    ];
    const batch = 70;
    const run = async (plan: MlpPlan) => {
      const b = createMlpBuffers(cpu, plan, 'split-later');
      try {
        plan.nets.forEach((net, n) => {
          cpu.upload(b.params, initParams(net.layout, n === 0 ? NetId.Actor : NetId.Critic, 6), 4 * net.base);
        });
        cpu.upload(
          b.acts,
          new Float32Array(batch * plan.inDim).map((_, i) => Math.sin(i * 0.7)),
        );
        const dispatches = forwardDispatches(plan, b);
        cpu.run(dispatches);
        const outs = await Promise.all(
          plan.nets.flatMap((net) =>
            net.layout.layers.map(
              async (l, i) =>
                new Float32Array(await cpu.download(b.acts, 4 * net.outputAt[i], 4 * batch * l.out)),
            ),
          ),
        );
        return { dispatches, outs };
      } finally {
        for (const buf of Object.values(b)) cpu.destroyBuffer(buf);
      }
    };
    const plain = await run(planMlps(layouts, batch, 1, 0));
    const split = await run(planMlps(layouts, batch, 1, 40, 'later', 'most'));
    // c0 (4 k-tiles) and c1 (9 k-tiles) split, c1 reading c0's slices; every layer's rows are in place.
    expect(split.dispatches.some((d) => d.uniforms.splits1 > 1 && d.uniforms.xSplits1 > 1)).toBe(true);
    expect(split.outs.length).toBe(plain.outs.length);
    split.outs.forEach((o, i) => {
      expect(o.some((v) => v !== 0)).toBe(true);
      for (let k = 0; k < o.length; k++) {
        expect(Math.abs(o[k] - plain.outs[i][k])).toBeLessThanOrEqual(
          1e-6 + 1e-5 * Math.abs(plain.outs[i][k]),
        );
      }
    });
  });

  it('gives the unsplit gradients, deltas and tile norms in the TS reference', async () => {
    const actor = buildLayout('small_actor', [
      { name: 'a0', in: 54, out: 40, act: 'relu' },
      { name: 'a1', in: 40, out: 45, act: 'none' },
    ]);
    const critic = buildLayout('small_critic', [
      { name: 'c0', in: 54, out: 100, act: 'relu' },
      { name: 'c1', in: 100, out: 70, act: 'leaky' },
      { name: 'c2', in: 70, out: 1, act: 'none' },
    ]);
    const layouts: NetLayout[] = [actor, critic];
    const batch = 70;
    const run = async (plan: MlpPlan) => {
      const b = createMlpBuffers(cpu, plan, 'split-later');
      try {
        plan.nets.forEach((net, n) => {
          cpu.upload(b.params, initParams(net.layout, n === 0 ? NetId.Actor : NetId.Critic, 5), 4 * net.base);
        });
        // Inputs and every layer's outputs (ReLU-like: half of them zero), and the output deltas.
        const acts = new Float32Array(plan.actFloats).map((_, i) => Math.max(0, Math.sin(i * 0.37)));
        cpu.upload(b.acts, acts);
        for (const net of plan.nets) {
          const last = net.layout.layers.length - 1;
          const d = new Float32Array(batch * net.layout.layers[last].out).map(
            (_, i) => 0.05 * Math.cos(i * 0.11),
          );
          cpu.upload(b.deltas, d, 4 * net.deltaAt[last]);
        }
        const dispatches = backwardDispatches(plan, b);
        cpu.run(dispatches);
        const read = async (buf: typeof b.grads, floats: number) =>
          new Float32Array(await cpu.download(buf, 0, 4 * floats));
        return {
          dispatches,
          grads: await read(b.grads, plan.paramFloats),
          deltas: (await read(b.deltas, plan.deltaFloats)).slice(0, plan.nets.at(-1)!.deltaAt.at(-1)),
          partials: await read(b.partials, plan.partialCount),
        };
      } finally {
        for (const buf of Object.values(b)) cpu.destroyBuffer(buf);
      }
    };
    const plain = await run(planMlps(layouts, batch, 4, 0));
    const split = await run(planMlps(layouts, batch, 4, 32, 'later', 'most'));
    expect(split.dispatches.some((d) => d.uniforms.splits > 1)).toBe(true);
    expect(split.dispatches.some((d) => d.uniforms.sumSplits > 1 && d.uniforms.out0 > 0)).toBe(true);
    expect(split.dispatches.length).toBe(plain.dispatches.length + 1);
    // Slices add the same products in another grouping: equal to f32 rounding.
    const close = (a: Float32Array, b: Float32Array, rtol: number) => {
      expect(a.length).toBe(b.length);
      let worst = 0;
      for (let i = 0; i < a.length; i++)
        worst = Math.max(worst, Math.abs(a[i] - b[i]) - rtol * Math.abs(b[i]));
      expect(worst).toBeLessThanOrEqual(1e-7);
    };
    expect(plain.grads.some((g) => g !== 0)).toBe(true);
    close(split.grads, plain.grads, 1e-5);
    close(split.partials, plain.partials, 1e-5);
    // dX does not split: bit for bit.
    expect(split.deltas).toEqual(plain.deltas);
  });

  describe('the --dw-split switch', () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });

    it('takes a workgroup budget in place of the backend’s (and off: none)', () => {
      const actorLayout = ppoActorLayout();
      const criticLayout = ppoCriticLayout();
      const make = (dwSplit: boolean | number) =>
        new DevicePpoLearner({
          backend: cpu,
          actorLayout,
          criticLayout,
          actor: initParams(actorLayout, NetId.Actor, 1),
          critic: initParams(criticLayout, NetId.Critic, 1),
          cfg: defaultConfig.ppo,
          seed: 1,
          dwSplit,
        });
      const learners = [make(132), make(false), make(true)];
      expect(learners.map((l) => l.plan.splitBudget)).toEqual([132, 0, dwSplitBudgetFor(cpu)]);
      for (const l of learners) l.destroy();
      // On WebGPU (the CPU standing in, under WebGPU's name): the 'later' hand-off and its policies.
      const asWebgpu = Object.create(cpu, { kind: { value: 'webgpu' } }) as CpuBackend;
      const onWebgpu = (dwSplit: boolean | number | 'most') =>
        new DevicePpoLearner({
          backend: asWebgpu,
          actorLayout,
          criticLayout,
          actor: initParams(actorLayout, NetId.Actor, 1),
          critic: initParams(criticLayout, NetId.Critic, 1),
          cfg: defaultConfig.ppo,
          seed: 1,
          dwSplit,
        });
      const web = [onWebgpu(true), onWebgpu('most'), onWebgpu(528)];
      expect(web.map((l) => [l.plan.dwHandoff, l.plan.splitPolicy, l.plan.splitBudget])).toEqual([
        ['later', 'waves', WEBGPU_SPLIT_BUDGET],
        ['later', 'most', WEBGPU_SPLIT_BUDGET],
        ['later', 'waves', 528],
      ]);
      for (const l of web) l.destroy();
    });

    it('refuses a value that is not on, off or a budget with one line', async () => {
      const err: string[] = [];
      vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
      expect(await devMain(['train', '--backend', 'cpu', '--dw-split', 'maybe'])).toBe(1);
      expect(err.at(-1)).toBe(
        'dev/bench train: --dw-split must be on, off, most or a workgroup budget (1-999999), got "maybe"',
      );
    });
  });
});
