/**
 * The TF32 tensor-core builds of the learner's matmuls (cuda/mlp_forward.cu and mlp_backward.cu
 * with the spec constant TF32 = 1, cuda/learn_mma.cuh) on the CPU fiber emulator
 * (test/emu/), whose mma.sync multiplies the TF32 operands exactly as the tensor
 * core does. Every output is checked against the exact sum of its own inputs (the launch's actual
 * inputs read back from the buffers, in f64) within the TF32 bound
 *   |out - exact| <= (2^-10 + (n + 16) * 2^-23) * sum_k |a_k| |b_k|   (+ 1e-30)
 * (each product's operands rounded to 10-bit mantissas: |(1 + d1)(1 + d2) - 1| <= 2^-10 + 2^-22;
 * the rest is f32 accumulation over n terms, k-group sums and split slices), and must differ from
 * the exact build's result (the mma path ran), with errors of TF32 size. Plans with split forward K
 * (split layers reading split inputs too) and split dW (last-arriving hand-off) are covered.
 */
import { describe, expect, it } from 'vitest';
import { createCpuBackend } from '../../../src/backend/cpu/index.js';
import type { Backend } from '../../../src/backend/types.js';
import { defaultConfig, loadConfig } from '../../../src/config.js';
import { DeviceDqnLearner } from '../../../src/device/dqn.js';
import { DevicePpoLearner } from '../../../src/device/learn.js';
import {
  backwardDispatches,
  createMlpBuffers,
  dwSplitBudgetFor,
  forwardDispatches,
  kSplitFor,
  type MlpBuffers,
  type MlpPlan,
  planMlps,
} from '../../../src/device/learn_mlp.js';
import { syntheticPpoRollout, uploadPpoRollout } from '../../../src/device/rollout.js';
import { createDevicePpoEngine } from '../../../src/engine/device_ppo.js';
import { mlpBackwardSpecFor } from '../../../src/kernels/mlp_backward.js';
import { mlpForwardSpecFor } from '../../../src/kernels/mlp_forward.js';
import { createMlpCache, forwardMlpBatch } from '../../../src/learn/mlp.js';
import { initParams } from '../../../src/nets/forward.js';
import {
  type Activation,
  buildLayout,
  duelingLayout,
  LEAKY_SLOPE,
  NetId,
  ppoActorLayout,
  ppoCriticLayout,
} from '../../../src/nets/layout.js';
import { prepareData } from '../../../src/train/run.js';
import { CudaEmuBackend, emuUnavailable } from '../../emu/backend.js';

const unavailable = emuUnavailable();

const layouts = [
  buildLayout('small_actor', [
    { name: 'a0', in: 54, out: 40, act: 'relu' },
    { name: 'a1', in: 40, out: 45, act: 'none' },
  ]),
  buildLayout('small_critic', [
    { name: 'c0', in: 54, out: 130, act: 'relu' },
    { name: 'c1', in: 130, out: 140, act: 'leaky' },
    { name: 'c2', in: 140, out: 70, act: 'relu' },
    { name: 'c3', in: 70, out: 1, act: 'none' },
  ]),
];
const batch = 70;

/** The TF32 bound's factor on sum |a| |b| for a sum of n products. */
const tf32Factor = (n: number) => 2 ** -10 + (n + 16) * 2 ** -23;

function act(a: number, kind: Activation): number {
  if (kind === 'relu') return Math.max(a, 0);
  if (kind === 'leaky') return a < 0 ? a * LEAKY_SLOPE : a;
  return a;
}

const derivative = (y: number, kind: Activation) =>
  kind === 'relu' ? (y > 0 ? 1 : 0) : kind === 'leaky' ? (y > 0 ? 1 : LEAKY_SLOPE) : 1;

/** Worst error / bound and worst error / sum|a||b| over a launch's outputs (bound ratio must be <= 1). */
class Check {
  worst = 0;
  /** Largest |err| / sum |a||b|: TF32 rounding shows as ~2^-12 and more, exact f32 sums below 2^-16. */
  relToAbs = 0;
  count = 0;
  add(got: number, exact: number, absSum: number, n: number) {
    const err = Math.abs(got - exact);
    const bound = tf32Factor(n) * absSum + 1e-30;
    this.worst = Math.max(this.worst, Number.isFinite(err) ? err / bound : Number.POSITIVE_INFINITY);
    if (absSum > 0) this.relToAbs = Math.max(this.relToAbs, err / absSum);
    this.count++;
  }
}

async function read(backend: Backend, buf: MlpBuffers[keyof MlpBuffers], at: number, n: number) {
  return new Float32Array(await backend.download(buf, 4 * at, 4 * n));
}

const params = layouts.map((l, n) => initParams(l, n === 0 ? NetId.Actor : NetId.Critic, 6));
const input = new Float32Array(batch * 54).map((_, i) => Math.sin(i * 0.7) * 1.5);

/** Forward of the plan: every layer's output rows, network by network. */
async function forward(backend: Backend, plan: MlpPlan): Promise<Float32Array[][]> {
  const b = createMlpBuffers(backend, plan, 'tf32-fwd');
  try {
    plan.nets.forEach((net, n) => {
      backend.upload(b.params, params[n], 4 * net.base);
    });
    backend.upload(b.acts, input);
    backend.run(forwardDispatches(plan, b));
    const outs: Float32Array[][] = [];
    for (const net of plan.nets) {
      const o: Float32Array[] = [];
      for (const [l, layer] of net.layout.layers.entries()) {
        o.push(await read(backend, b.acts, net.outputAt[l], batch * layer.out));
      }
      outs.push(o);
    }
    return outs;
  } finally {
    for (const buf of Object.values(b)) backend.destroyBuffer(buf);
  }
}

/** Each network's reference activations (CPU mlp.ts) and output-layer deltas. */
const reference = layouts.map((layout, n) => {
  const cache = createMlpCache(layout, batch);
  cache.acts[0].set(input);
  forwardMlpBatch(layout, params[n], cache, batch);
  const last = layout.layers[layout.layers.length - 1];
  const dOut = new Float32Array(batch * last.out).map((_, i) => 0.05 * Math.cos(i * 1.3 + n));
  return { acts: cache.acts.map((a) => Float32Array.from(a)), dOut };
});

interface BackwardOut {
  grads: Float32Array[];
  /** deltas[n][l]: layer l's delta rows of network n (the top one as uploaded). */
  deltas: Float32Array[][];
  sumOfSquares: number;
  splits: number[];
}

async function backward(backend: Backend, plan: MlpPlan): Promise<BackwardOut> {
  const b = createMlpBuffers(backend, plan, 'tf32-bwd');
  try {
    plan.nets.forEach((net, n) => {
      backend.upload(b.params, params[n], 4 * net.base);
      net.layout.layers.forEach((_, l) => {
        backend.upload(b.acts, reference[n].acts[l + 1], 4 * net.outputAt[l]);
      });
      backend.upload(b.deltas, reference[n].dOut, 4 * net.deltaAt[net.layout.layers.length - 1]);
    });
    backend.upload(b.acts, input);
    const dispatches = backwardDispatches(plan, b);
    backend.run(dispatches);
    const grads: Float32Array[] = [];
    const deltas: Float32Array[][] = [];
    for (const net of plan.nets) {
      grads.push(await read(backend, b.grads, net.base, net.layout.size));
      const d: Float32Array[] = [];
      for (const [l, layer] of net.layout.layers.entries()) {
        d.push(await read(backend, b.deltas, net.deltaAt[l], batch * layer.out));
      }
      deltas.push(d);
    }
    const partials = await read(backend, b.partials, 0, plan.partialCount);
    return {
      grads,
      deltas,
      sumOfSquares: partials.reduce((s, v) => s + v, 0),
      splits: dispatches.map((d) => d.uniforms.splits),
    };
  } finally {
    for (const buf of Object.values(b)) backend.destroyBuffer(buf);
  }
}

const differs = (a: Float32Array, b: Float32Array) => a.some((v, i) => v !== b[i]);

describe('the TF32 matmul builds', () => {
  it('are separate kernel specs with TF32 = 1; the exact specs carry no TF32 constant (unchanged source)', () => {
    for (const [exact, tf32] of [
      [mlpForwardSpecFor(4, 0), mlpForwardSpecFor(4, 0, 1)],
      [mlpForwardSpecFor(4, 1), mlpForwardSpecFor(4, 1, 1)],
      [mlpBackwardSpecFor(4), mlpBackwardSpecFor(4, 1)],
    ]) {
      expect(exact.constants).not.toHaveProperty('TF32');
      expect(tf32.constants?.TF32).toBe(1);
      expect({ ...tf32.constants, TF32: undefined }).toEqual({ ...exact.constants, TF32: undefined });
      expect(tf32).not.toBe(exact);
    }
    expect(mlpForwardSpecFor(4, 0, 0)).toBe(mlpForwardSpecFor(4, 0));
    expect(mlpBackwardSpecFor(4, 0)).toBe(mlpBackwardSpecFor(4));
  });

  it('the device learner refuses tf32 off CUDA, saying what to use', () => {
    const backend = createCpuBackend();
    try {
      const actorLayout = ppoActorLayout();
      const criticLayout = ppoCriticLayout();
      expect(
        () =>
          new DevicePpoLearner({
            backend,
            actorLayout,
            criticLayout,
            actor: new Float32Array(actorLayout.size),
            critic: new Float32Array(criticLayout.size),
            cfg: defaultConfig.ppo,
            seed: 1,
            precision: 'tf32',
          }),
      ).toThrow(
        "device ppo learner: precision 'tf32' (tensor cores) needs the CUDA backend, not cpu; use precision 'exact'",
      );
    } finally {
      backend.destroy();
    }
  });

  it("the device learner's update launches its matmuls as TF32 builds with precision tf32 (launches only)", () => {
    // The learner takes tf32 only on CUDA: a CPU backend presenting itself as CUDA builds the same
    // launches (nothing runs here).
    const backend = createCpuBackend();
    Object.defineProperty(backend, 'kind', { value: 'cuda' });
    const actorLayout = ppoActorLayout();
    const criticLayout = ppoCriticLayout();
    const cfg = { ...defaultConfig.ppo, minibatch: 64, updateEpochs: 1 };
    const rollout = uploadPpoRollout(backend, syntheticPpoRollout(128, actorLayout.layers[0].in, 45, 1), 54);
    try {
      const matmuls = (precision: 'exact' | 'tf32', chain = true) => {
        const learner = new DevicePpoLearner({
          backend,
          actorLayout,
          criticLayout,
          actor: new Float32Array(actorLayout.size),
          critic: new Float32Array(criticLayout.size),
          cfg,
          seed: 1,
          precision,
          chain,
        });
        try {
          const ds = learner.updateDispatches(rollout);
          const names = new Set(ds.map((d) => d.kernel.name));
          // The loss head: its own launch, or inside the delta chain's (fuseLoss, the default with it).
          expect(names).toContain(learner.fuseLoss ? 'mlp_delta_chain' : 'ppo_loss');
          expect(names).toContain('adam_step');
          const mm = ds.filter((d) => d.kernel.name === 'mlp_forward' || d.kernel.name === 'mlp_backward');
          for (const d of ds.filter((d) => !mm.includes(d))) expect(d.kernel.constants?.TF32).toBeUndefined();
          return mm;
        } finally {
          learner.destroy();
        }
      };
      // Two steps of 3 paired forward + 3 backward launches with the critic's tail in one (f32)
      // mlp_chain_forward launch and the top layers' deltas in one (f32) mlp_delta_chain launch
      // (the defaults on CUDA), 6 + 3 without the chain launch.
      const tf32 = matmuls('tf32');
      expect(tf32.length).toBe(2 * 6);
      expect(tf32.every((d) => d.kernel.constants?.TF32 === 1)).toBe(true);
      const unchained = matmuls('tf32', false);
      expect(unchained.length).toBe(2 * 9);
      expect(unchained.every((d) => d.kernel.constants?.TF32 === 1)).toBe(true);
      expect(matmuls('exact').every((d) => d.kernel.constants?.TF32 === undefined)).toBe(true);
    } finally {
      backend.destroyBuffer(rollout.f);
      backend.destroyBuffer(rollout.i);
      backend.destroy();
    }
  });

  it('the DQN-family learner launches its matmuls as TF32 builds with precision tf32, and refuses it off CUDA', () => {
    const backend = createCpuBackend();
    const cfg = { ...defaultConfig.dqn, batch: 16, iqnTau: 4 };
    try {
      const layout = duelingLayout('c51', cfg.atoms);
      const params = new Float32Array(layout.size);
      expect(
        () => new DeviceDqnLearner({ backend, head: 'c51', cfg, layout, params, precision: 'tf32' }),
      ).toThrow(
        "device dqn: precision 'tf32' (tensor cores) needs the CUDA backend, not cpu; use precision 'exact'",
      );
      Object.defineProperty(backend, 'kind', { value: 'cuda' });
      for (const head of ['plain', 'c51', 'iqn'] as const) {
        const l = duelingLayout(head, cfg.atoms, cfg.iqnEmbed);
        const launches = (precision: 'exact' | 'tf32') => {
          const learner = new DeviceDqnLearner({
            backend,
            head,
            cfg,
            layout: l,
            params: new Float32Array(l.size),
            key: [1, 0],
            precision,
          });
          const batch = {
            rows: backend.createBuffer(4 * 16 * 128, 'rows'),
            actions: backend.createBuffer(4 * 16, 'actions'),
            weights: backend.createBuffer(4 * 16, 'weights'),
          };
          try {
            const ds = learner.stepDispatches(batch);
            const mm = ds.filter((d) => d.kernel.name === 'mlp_forward' || d.kernel.name === 'mlp_backward');
            for (const d of ds.filter((d) => !mm.includes(d)))
              expect(d.kernel.constants?.TF32).toBeUndefined();
            return mm;
          } finally {
            learner.destroy();
            for (const b of Object.values(batch)) backend.destroyBuffer(b);
          }
        };
        // Forward: online 4 (IQN 5) + target 4 (5); backward 4 (IQN 5).
        const tf32 = launches('tf32');
        expect(tf32.length, head).toBe(head === 'iqn' ? 15 : 12);
        expect(tf32.every((d) => d.kernel.constants?.TF32 === 1)).toBe(true);
        expect(launches('exact').every((d) => d.kernel.constants?.TF32 === undefined)).toBe(true);
      }
    } finally {
      backend.destroy();
    }
  });

  it('the device engine refuses train.precision tf32 on a backend other than CUDA, saying what to use', async () => {
    const cfg = loadConfig(undefined, {
      'data.synthBars': '3000',
      'train.backend': 'cuda',
      'train.precision': 'tf32',
    });
    const { market, splits } = await prepareData(cfg);
    const backend = createCpuBackend();
    try {
      expect(() => createDevicePpoEngine(backend, cfg, market, splits.train)).toThrow(
        "train.precision tf32 runs on CUDA tensor cores only, this run's backend is cpu: use train.precision exact, or --backend cuda",
      );
    } finally {
      backend.destroy();
    }
  });

  it('plans pass tf32 to every matmul launch, and only when asked', () => {
    const backend = { createBuffer: () => ({}) as never };
    const plan = planMlps(layouts, batch, 4, 32, 'last', 'most');
    const b = createMlpBuffers(backend, plan, 'x');
    const all = (p: MlpPlan) => [...forwardDispatches(p, b), ...backwardDispatches(p, b)];
    expect(all(plan).every((d) => d.kernel.constants?.TF32 === undefined)).toBe(true);
    expect(all({ ...plan, tf32: true }).every((d) => d.kernel.constants?.TF32 === 1)).toBe(true);
  });
});

describe.skipIf(unavailable !== null)(
  `TF32 learner matmuls on the CUDA emulator${unavailable ? ` (skipped: ${unavailable})` : ''}`,
  () => {
    const backend = new CudaEmuBackend();

    it('mlp_forward (K split, split inputs): within the TF32 bound of the exact sums, not the exact build', async () => {
      // k-groups of 4 as on CUDA, forward K split with a large budget ('later' plans it; the CUDA
      // twin runs the split forward either way).
      const exactPlan = planMlps(layouts, batch, 4, 1000, 'later');
      const splits = exactPlan.nets.flatMap((n) => n.fwdSplits);
      expect(splits.some((s) => s > 1)).toBe(true);
      expect(
        exactPlan.nets[1].fwdSplits.some((s, l) => s > 1 && l > 0 && exactPlan.nets[1].fwdSplits[l - 1] > 1),
      ).toBe(true);
      const tf32 = await forward(backend, { ...exactPlan, tf32: true });
      const exact = await forward(backend, exactPlan);
      const check = new Check();
      layouts.forEach((layout, n) => {
        const p = params[n];
        layout.layers.forEach((layer, l) => {
          // This layer's inputs as the device had them: the input rows, or its own previous output.
          const x = l === 0 ? input : tf32[n][l - 1];
          const y = tf32[n][l];
          for (let bRow = 0; bRow < batch; bRow++) {
            for (let o = 0; o < layer.out; o++) {
              let sum = p[layer.bOffset + o];
              let abs = Math.abs(sum);
              for (let i = 0; i < layer.in; i++) {
                const prod = p[layer.wOffset + o * layer.in + i] * x[bRow * layer.in + i];
                sum += prod;
                abs += Math.abs(prod);
              }
              check.add(y[bRow * layer.out + o], act(sum, layer.act), abs, layer.in + 8);
            }
          }
          expect(
            differs(y, exact[n][l]),
            `${layout.kind} layer ${l}: TF32 output equals the exact build's`,
          ).toBe(true);
        });
      });
      expect(check.count).toBeGreaterThan(10_000);
      expect(check.worst).toBeLessThanOrEqual(1);
      expect(check.relToAbs).toBeGreaterThan(2 ** -14);
    });

    for (const split of [false, true]) {
      it(`mlp_backward ${split ? 'with split dW (last-arriving hand-off)' : 'unsplit'}: dW, db, dX within the TF32 bound, not the exact build`, async () => {
        const exactPlan = planMlps(
          layouts,
          batch,
          kSplitFor(backend),
          split ? dwSplitBudgetFor(backend) : 0,
          'last',
          'most',
        );
        const tf32 = await backward(backend, { ...exactPlan, tf32: true });
        const exact = await backward(backend, exactPlan);
        expect(tf32.splits.some((s) => s > 1)).toBe(split);
        const check = new Check();
        let ss = 0;
        layouts.forEach((layout, n) => {
          const p = params[n];
          const g = tf32.grads[n];
          for (const v of g) ss += v * v;
          layout.layers.forEach((layer, l) => {
            const x = l === 0 ? input : reference[n].acts[l];
            const d = tf32.deltas[n][l];
            // dW and db: sums over the batch of delta x input (1 for db).
            for (let o = 0; o < layer.out; o++) {
              for (let i = 0; i <= layer.in; i++) {
                let sum = 0;
                let abs = 0;
                for (let bRow = 0; bRow < batch; bRow++) {
                  const prod = d[bRow * layer.out + o] * (i < layer.in ? x[bRow * layer.in + i] : 1);
                  sum += prod;
                  abs += Math.abs(prod);
                }
                const at = i < layer.in ? layer.wOffset + o * layer.in + i : layer.bOffset + o;
                check.add(g[at], sum, abs, batch + 16);
              }
            }
            if (l === 0) return;
            // dX into the previous layer's delta, times its activation's derivative.
            const prev = layout.layers[l - 1];
            const dx = tf32.deltas[n][l - 1];
            for (let bRow = 0; bRow < batch; bRow++) {
              for (let i = 0; i < layer.in; i++) {
                let sum = 0;
                let abs = 0;
                for (let o = 0; o < layer.out; o++) {
                  const prod = d[bRow * layer.out + o] * p[layer.wOffset + o * layer.in + i];
                  sum += prod;
                  abs += Math.abs(prod);
                }
                const k = derivative(x[bRow * layer.in + i], prev.act);
                check.add(dx[bRow * layer.in + i], sum * k, abs * k, layer.out);
              }
            }
            expect(differs(dx, exact.deltas[n][l - 1]), `${layout.kind} dX of layer ${l}`).toBe(true);
          });
          expect(differs(g, exact.grads[n]), `${layout.kind} grads`).toBe(true);
        });
        expect(check.count).toBeGreaterThan(20_000);
        expect(check.worst).toBeLessThanOrEqual(1);
        expect(check.relToAbs).toBeGreaterThan(2 ** -14);
        // Every gradient went into its tile's sum of squares (the epilogue on the permuted owners).
        expect(Math.abs(tf32.sumOfSquares - ss)).toBeLessThanOrEqual(1e-5 * ss);
      });
    }
  },
);
