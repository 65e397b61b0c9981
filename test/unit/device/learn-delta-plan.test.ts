/**
 * The learner's delta-chain plan (src/device/learn_mlp.ts planDeltaChain, deltaChainGroups): at the
 * PPO networks one mlp_delta_chain launch computes the input deltas of the actor's top two and the
 * critic's top three layers, then three mlp_backward launches take every layer whose deltas are
 * known (11 launches per minibatch step instead of 13; 10 with the loss head fused into the delta
 * chain launch, fuseLoss, the default with the chain); on the CPU the learner gives the same bits
 * with the delta chain on and off (its TS twin adds as mlp_backward's dX does), and the same params
 * with the fused loss (its loss statistics to f32 rounding). The kernel itself:
 * test/unit/kernels/mlp-delta-chain.test.ts; on every backend: the parity cases `mlp_delta_chain` and
 * `--delta-chain on`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend, DeviceBuffer } from '../../../src/backend/types.js';
import { defaultConfig, type PpoConfig } from '../../../src/config.js';
import { DevicePpoLearner } from '../../../src/device/learn.js';
import {
  backwardDispatches,
  createMlpBuffers,
  deltaChainGroups,
  planDeltaChain,
  planMlps,
} from '../../../src/device/learn_mlp.js';
import { syntheticPpoRollout, uploadPpoRollout } from '../../../src/device/rollout.js';
import { MAX_BACKWARD_JOBS } from '../../../src/kernels/mlp_backward.js';
import { DELTA_ROWS } from '../../../src/kernels/mlp_delta_chain.js';
import { initParams } from '../../../src/nets/forward.js';
import { buildLayout, NetId, ppoActorLayout, ppoCriticLayout } from '../../../src/nets/layout.js';

const backends: Backend[] = [];
afterEach(() => {
  for (const b of backends.splice(0)) b.destroy();
});

const layouts = [ppoActorLayout(), ppoCriticLayout()];
const fakeBuffers = { createBuffer: (bytes: number) => ({ bytes }) as unknown as DeviceBuffer };

describe('the delta-chain plan', () => {
  it("PPO on CUDA's plan: the chain takes policy_output, policy_layer_1 and value_output .. value_layer_3; 3 mlp_backward launches follow", () => {
    const plan = planMlps(layouts, 512, 4, 264, 'last', 'most', true);
    plan.deltaChain = planDeltaChain(plan);
    expect(plan.deltaChain).toEqual({ from: [1, 3], rows: DELTA_ROWS, staged: true });
    const names = deltaChainGroups(plan).map((g) =>
      g.map((j) => {
        const net = plan.nets.find((n) => n.base === j.netBase)!;
        const layer = net.layout.layers.find((l) => l.wOffset === j.layer.wOffset)!;
        return `${layer.name}${j.prev ? ' +dX' : ''}`;
      }),
    );
    // Launch k carries the critic's next dX (value_layer_2, value_layer_1), the last one
    // value_layer_0, whose deltas exist only then; the small dW-only layers fill the launches'
    // spare workgroups (the plan's latency model, deltaChainGroups).
    expect(names).toHaveLength(3);
    expect(names.map((g) => g[0])).toEqual(['value_layer_2 +dX', 'value_layer_1 +dX', 'value_layer_0']);
    expect(names.flat().filter((n) => n.endsWith('+dX'))).toHaveLength(2);
    expect(names).toEqual([
      ['value_layer_2 +dX', 'value_layer_3', 'value_layer_4', 'policy_layer_0', 'value_output'],
      ['value_layer_1 +dX', 'policy_layer_1', 'policy_output'],
      ['value_layer_0'],
    ]);
    // Every layer's dW exactly once; dX exactly where the chain did not compute it (and not for a first layer).
    const all = deltaChainGroups(plan).flat();
    expect(all).toHaveLength(9);
    expect(new Set(all.map((j) => j.netBase + j.layer.wOffset)).size).toBe(9);
    const b = createMlpBuffers(fakeBuffers, plan, 'test');
    const launches = backwardDispatches(plan, b);
    expect(launches.map((d) => d.kernel.name)).toEqual([
      'mlp_delta_chain',
      'mlp_backward',
      'mlp_backward',
      'mlp_backward',
    ]);
    // 2 x 82 dW + 96 dX workgroups; 110 dW + 128 dX tiles, no room to split within 264;
    // value_layer_0's 16 dW tiles in 8 slices. Every launch one wave.
    expect(launches.map((d) => d.uniforms.splits)).toEqual([undefined, 2, 1, 8]);
    expect(launches.slice(1).map((d) => d.groups[0] * d.groups[1] * d.groups[2])).toEqual([260, 238, 128]);
  });

  it('is undefined where no layer qualifies (a single-layer network has no input delta to compute)', () => {
    const one = buildLayout('one', [{ name: 'l', in: 6, out: 3, act: 'none' }]);
    const plan = planMlps([one, one], 16, 1, 0, 'last', 'most', false);
    expect(planDeltaChain(plan)).toBeUndefined();
  });

  it('a launch takes at most MAX_BACKWARD_JOBS layers', () => {
    const deep = buildLayout(
      'deep',
      Array.from({ length: 6 }, (_, l) => ({
        name: `d${l}`,
        in: l === 0 ? 6 : 16,
        out: 16,
        act: 'relu' as const,
      })),
    );
    const plan = planMlps([deep, deep], 16, 1, 0, 'last', 'most', false);
    plan.deltaChain = { from: [1, 1], rows: 4, staged: false };
    const groups = deltaChainGroups(plan);
    expect(groups.every((g) => g.length <= MAX_BACKWARD_JOBS)).toBe(true);
    expect(groups.flat()).toHaveLength(12);
    expect(groups.flat().filter((j) => j.prev !== null)).toHaveLength(0);
  });

  it('DevicePpoLearner: 10 launches per minibatch step with the delta chain and the fused loss, 11 with fuseLoss false, 13 without the chain; on by default on CUDA only', () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const cfg: PpoConfig = { ...defaultConfig.ppo, minibatch: 64, updateEpochs: 1 };
    const rollout = uploadPpoRollout(backend, syntheticPpoRollout(128, 54, 45, 1), 54);
    const perStep = (deltaChain?: boolean, fuseLoss?: boolean) => {
      const dev = new DevicePpoLearner({
        backend,
        actorLayout: layouts[0],
        criticLayout: layouts[1],
        actor: initParams(layouts[0], NetId.Actor, 1),
        critic: initParams(layouts[1], NetId.Critic, 1),
        cfg,
        seed: 1,
        deltaChain,
        fuseLoss,
      });
      const fused = deltaChain === true && fuseLoss !== false;
      expect(dev.fuseLoss).toBe(fused);
      const launches = dev.updateDispatches(rollout);
      const chains = launches.filter((d) => d.kernel.name === 'mlp_delta_chain');
      expect(chains).toHaveLength(deltaChain ? 2 : 0);
      // Launched with PDL like the other update kernels (its CUDA source begins with the wait).
      expect(chains.every((d) => d.kernel.pdl === true)).toBe(true);
      // Fused: no ppo_loss launch; the chain runs the loss head (its loss sums after the
      // backward's partials) and adam_step adds its ceil(64 / 4) groups of sums.
      expect(launches.filter((d) => d.kernel.name === 'ppo_loss')).toHaveLength(fused ? 0 : 2);
      expect(chains.every((d) => d.uniforms.loss === (fused ? 1 : 0))).toBe(true);
      const adam = launches.filter((d) => d.kernel.name === 'adam_step');
      expect(adam.map((d) => d.uniforms.lossGroups)).toEqual(fused ? [16, 16] : [4, 4]);
      if (fused) {
        expect(chains[0].uniforms).toMatchObject({ lossAt: dev.plan.partialCount, rows: DELTA_ROWS });
        expect(chains[0].buffers[3]).toBe(dev.buffers.mb);
        expect(chains[0].buffers[4]).toBe(dev.buffers.partials);
      }
      dev.destroy();
      return launches.length / 2;
    };
    expect(perStep(true)).toBe(10);
    expect(perStep(true, true)).toBe(10);
    expect(perStep(true, false)).toBe(11);
    expect(perStep(false)).toBe(13);
    expect(perStep(false, true)).toBe(13);
    expect(perStep(undefined)).toBe(13);
  });

  it('the learner on the CPU gives the same bits with the delta chain on and off, and the same params with the fused loss (its loss statistics to f32 rounding)', async () => {
    const backend = createCpuBackend();
    backends.push(backend);
    const actorLayout = buildLayout('small_actor', [
      { name: 'a0', in: 6, out: 8, act: 'relu' },
      { name: 'a1', in: 8, out: 9, act: 'leaky' },
      { name: 'a2', in: 9, out: 5, act: 'none' },
    ]);
    const criticLayout = buildLayout('small_critic', [
      { name: 'c0', in: 6, out: 12, act: 'relu' },
      { name: 'c1', in: 12, out: 10, act: 'relu' },
      { name: 'c2', in: 10, out: 7, act: 'leaky' },
      { name: 'c3', in: 7, out: 1, act: 'none' },
    ]);
    const cfg: PpoConfig = { ...defaultConfig.ppo, minibatch: 10, updateEpochs: 2 };
    const rollout = uploadPpoRollout(backend, syntheticPpoRollout(34, 6, 5, 2), 6);
    const run = async (deltaChain: boolean, fuseLoss = false) => {
      const dev = new DevicePpoLearner({
        backend,
        actorLayout,
        criticLayout,
        actor: initParams(actorLayout, NetId.Actor, 4),
        critic: initParams(criticLayout, NetId.Critic, 4),
        cfg,
        seed: 4,
        deltaChain,
        fuseLoss,
      });
      expect(dev.plan.deltaChain?.from).toEqual(deltaChain ? [1, 1] : undefined);
      expect(dev.fuseLoss).toBe(fuseLoss);
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
    // The fused loss: the same gradients, so the same params bit for bit; the loss statistics sum
    // the same per-sample parts grouped by the chain's workgroups (3 of 4 rows, not 1 of 16), so
    // they may differ in their last bits.
    const fused = await run(true, true);
    expect(Buffer.from(fused.params.critic.buffer).equals(Buffer.from(off.params.critic.buffer))).toBe(true);
    expect(Buffer.from(fused.params.actor.buffer).equals(Buffer.from(off.params.actor.buffer))).toBe(true);
    expect(fused.stats.gradNorm).toBe(off.stats.gradNorm);
    expect(fused.stats.minibatches).toBe(off.stats.minibatches);
    for (const key of ['total', 'policyLoss', 'valueLoss', 'entropy', 'approxKl', 'clipFrac'] as const) {
      const [f, o] = [fused.stats[key], off.stats[key]];
      expect(Math.abs(f - o), `${key}: ${f} vs ${o}`).toBeLessThanOrEqual(1e-6 + 1e-6 * Math.abs(o));
    }
  });
});
