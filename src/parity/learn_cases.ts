/**
 * Parity cases of the learner kernels (ppo_gather, mlp_forward, ppo_loss, mlp_backward,
 * adam_step, curiosity_loss) and of the whole device PPO learner (one minibatch step; a short
 * update). Each expectation comes from the plain TS learner (src/learn/*.ts: shuffle, mlp,
 * ppo_loss, optim, ppo_update), never from the kernels' references, so the CPU backend is checked
 * too. Sizes are small so that software WebGPU (lavapipe, SwiftShader) runs them in seconds.
 * Browser-safe.
 */
import type { Backend, DeviceBuffer } from '../backend/types.js';
import { defaultConfig, type PpoConfig, type Precision } from '../config.js';
import { DevicePpoLearner } from '../device/learn.js';
import {
  backwardDispatches,
  createMlpBuffers,
  dwHandoffFor,
  dwSplitBudgetFor,
  forwardDispatches,
  kSplitFor,
  planDeltaChain,
  planMlps,
} from '../device/learn_mlp.js';
import { syntheticPpoRollout, uploadPpoRollout } from '../device/rollout.js';
import { type AdamHyper, adamBiasCorrection, adamStepDispatch } from '../kernels/adam_step.js';
import { MAX_BACKWARD_JOBS } from '../kernels/mlp_backward.js';
import { ppoGatherDispatch } from '../kernels/ppo_gather.js';
import { LOSS_PARTS, lossGroups, ppoLossDispatch, STAT, STAT_COUNT } from '../kernels/ppo_loss.js';
import type { TypedArray } from '../kernels/reference.js';
import { backwardMlp, createMlpCache, forwardMlpBatch } from '../learn/mlp.js';
import { adamStep, clipGradNorm, createAdam, globalGradNorm } from '../learn/optim.js';
import { createPpoWorkspace, ppoLossAndGrad } from '../learn/ppo_loss.js';
import { createPpoLearner, type PpoUpdateStats, ppoUpdateReference } from '../learn/ppo_update.js';
import { shuffleIndex } from '../learn/shuffle.js';
import { initParams } from '../nets/forward.js';
import { buildLayout, NetId, type NetLayout, ppoActorLayout, ppoCriticLayout } from '../nets/layout.js';
import { philox4x32, seedToKey, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import type { Outputs, ParityCase } from './cases.js';
import type { Tolerance } from './compare.js';

/** Uniform f32 in [lo, hi): counter (Test, 3000 + input, block, 0), key of seed 1. */
export function floats(input: number, n: number, lo: number, hi: number): Float32Array {
  const out = new Float32Array(n);
  const block = new Uint32Array(4);
  const [k0, k1] = seedToKey(1);
  for (let i = 0; i < n; i++) {
    if ((i & 3) === 0) philox4x32(Stream.Test, 3000 + input, i >>> 2, 0, k0, k1, block);
    out[i] = lo + (hi - lo) * u32ToUnitFloat(block[i & 3]);
  }
  return out;
}

export function memo<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

/** Creates buffers through `make` and destroys them all after `body`, whatever happens. */
export async function scoped<T>(
  backend: Backend,
  body: (make: (data: TypedArray | number, label: string) => DeviceBuffer) => Promise<T>,
): Promise<T> {
  const made: DeviceBuffer[] = [];
  try {
    return await body((data, label) => {
      const bytes = typeof data === 'number' ? 4 * data : data.byteLength;
      const buf = backend.createBuffer(Math.max(4, bytes), label);
      made.push(buf);
      if (typeof data !== 'number' && data.byteLength > 0) backend.upload(buf, data);
      return buf;
    });
  } finally {
    for (const b of made) backend.destroyBuffer(b);
  }
}

export async function readF32(
  backend: Backend,
  buf: DeviceBuffer,
  at: number,
  n: number,
): Promise<Float32Array> {
  return new Float32Array(await backend.download(buf, 4 * at, 4 * n));
}

/** Matmul sums of up to ~500 f32 products, reduced in another order or with fused multiply-adds. */
export const MATMUL: Tolerance = { kind: 'close', atol: 1e-6, rtol: 1e-4 };
/**
 * Gradients of a minibatch step with the matmuls on TF32 tensor cores (CUDA, precision 'tf32'):
 * every matmul output is within ~2^-10 * sum |a| |b| of its exact sum (operands rounded to 10-bit
 * mantissas), and through the 6 forward and 6 backward layers these compound to ~5e-4 of the
 * gradients' scale (RMS; largest errors ~3e-5 on gradients up to ~9e-2, measured on the fiber
 * emulator, whose mma rounds operands as the tensor core does). 1e-2 relative plus 3e-5 absolute
 * leaves a margin of ~6 over that; a wrong tile or a missing term moves the large gradients by far
 * more.
 */
const TF32_GRADS: Tolerance = { kind: 'close', atol: 3e-5, rtol: 1e-2 };
/** Loss arithmetic in f32 (kernels) against f64 (reference), transcendental ulps included. */
export const LOSS: Tolerance = { kind: 'close', atol: 1e-6, rtol: 1e-4 };

// ---- ppo_gather ----------------------------------------------------------------------------

/** `rowsPerGroup` below 64: the narrow workgroups CUDA and WebGPU dispatch. */
function gatherCase(
  count: number,
  batch: number,
  minibatch: number,
  epochSlot: number,
  rowsPerGroup?: number,
): ParityCase {
  const stateDim = 5;
  const seed = 11;
  const epochBase = 7;
  const rollout = memo(() => ({
    f: floats(10, count * (stateDim + 3), -3, 3),
    i: Int32Array.from(floats(11, count, 0, 45), Math.floor),
  }));
  const sections = {
    states: 0,
    logProbs: count * stateDim,
    advantages: count * (stateDim + 1),
    returns: count * (stateDim + 2),
    actions: 0,
  };
  return {
    name: `ppo_gather count=${count} batch=${batch} minibatch ${minibatch} epoch slot ${epochSlot}${rowsPerGroup ? ` ${rowsPerGroup} rows per workgroup` : ''} (Feistel shuffle, cycle walking)`,
    kernel: 'ppo_gather',
    tolerance: { kind: 'exact' },
    expected: memo(() => {
      const { f, i } = rollout();
      const states = new Float32Array(batch * stateDim);
      const mb = new Float32Array(4 * batch);
      for (let j = 0; j < batch; j++) {
        const s = shuffleIndex(minibatch * batch + j, count, epochBase + epochSlot, seed);
        states.set(f.subarray(s * stateDim, (s + 1) * stateDim), j * stateDim);
        mb[j] = i[s];
        mb[batch + j] = f[sections.logProbs + s];
        mb[2 * batch + j] = f[sections.advantages + s];
        mb[3 * batch + j] = f[sections.returns + s];
      }
      return { states, mb };
    }),
    actual: (backend) =>
      scoped(backend, async (make) => {
        const { f, i } = rollout();
        const acts = make(new Float32Array(batch * stateDim).fill(Number.NaN), 'acts');
        const mb = make(new Float32Array(4 * batch).fill(Number.NaN), 'mb');
        const args = {
          rolloutF: make(f, 'rollout.f'),
          rolloutI: make(i, 'rollout.i'),
          sched: make(Uint32Array.of(epochBase), 'sched'),
          acts,
          mb,
          sections,
          count,
          batch,
          stateDim,
          key: seedToKey(seed),
          rowsPerGroup,
        };
        backend.run([ppoGatherDispatch(args, epochSlot, minibatch)]);
        return {
          states: await readF32(backend, acts, 0, batch * stateDim),
          mb: await readF32(backend, mb, 0, 4 * batch),
        };
      }),
  };
}

// ---- mlp_forward + mlp_backward (all stages of two networks) -------------------------------

/** Forward then backward of actor + critic through the plan's launches, against mlp.ts. */
/**
 * The paired forward or backward launches of two chain networks reading the same input, against
 * mlp.ts (default: the PPO actor and critic; tests pass smaller layouts). 'mlp_chain_forward': the
 * forward with the learner's chain plan, the deeper network's unpaired tail (the PPO critic's
 * layers 3..5) in one mlp_chain_forward launch (`chainRows` rows per workgroup, default 8); every
 * layer's output is checked either way.
 */
export function mlpParityCase(
  kernel: 'mlp_forward' | 'mlp_backward' | 'mlp_chain_forward' | 'mlp_delta_chain',
  batch: number,
  layouts: [NetLayout, NetLayout] = [ppoActorLayout(), ppoCriticLayout()],
  chainRows?: number,
): ParityCase {
  const chain = kernel === 'mlp_chain_forward' ? (chainRows ?? true) : false;
  const backward = kernel === 'mlp_backward' || kernel === 'mlp_delta_chain';
  const plan = planMlps(layouts, batch, 1, 0, 'last', 'most', chain);
  const tail = plan.nets.find((n) => n.chainFrom < n.layout.layers.length);
  if (chain && !tail) throw new Error(`mlp_chain_forward case: ${layouts[1].kind} has no chain tail`);
  const inputs = memo(() => {
    const params = layouts.map((l, n) => initParams(l, n === 0 ? NetId.Actor : NetId.Critic, 3));
    const x = floats(20, batch * plan.inDim, -2, 2);
    const dOut = layouts.map((l, n) =>
      floats(21 + n, batch * l.layers[l.layers.length - 1].out, -0.05, 0.05),
    );
    return { params, x, dOut };
  });
  const reference = memo(() => {
    const { params, x, dOut } = inputs();
    return layouts.map((layout, n) => {
      const cache = createMlpCache(layout, batch);
      cache.acts[0].set(x);
      forwardMlpBatch(layout, params[n], cache, batch);
      const grad = new Float32Array(layout.size);
      backwardMlp(layout, params[n], cache, dOut[n], batch, grad);
      return { cache, grad };
    });
  });
  const what =
    kernel === 'mlp_forward'
      ? 'every layer output (paired launches)'
      : chain
        ? `every layer output (paired launches, ${tail!.layout.layers
            .slice(tail!.chainFrom)
            .map((l) => l.name)
            .join(' -> ')} in one chain launch of ${plan.chainRows} rows per workgroup)`
        : kernel === 'mlp_delta_chain'
          ? `dW, db, dX of every layer (the top layers' dX in one mlp_delta_chain launch${chainRows ? ` of ${chainRows} rows per workgroup` : ''}, then mlp_backward launches of up to ${MAX_BACKWARD_JOBS} layers)`
          : 'dW, db, dX of every layer (paired launches)';
  return {
    name: `${kernel} ${layouts[0].kind} + ${layouts[1].kind} B=${batch}: ${what}`,
    kernel,
    tolerance: MATMUL,
    expected: memo(() => {
      const out: Outputs = {};
      reference().forEach(({ cache, grad }, n) => {
        const net = layouts[n].kind;
        if (!backward) {
          cache.acts.slice(1).forEach((a, l) => {
            out[`${net}.out${l}`] = a as Float32Array;
          });
        } else {
          out[`${net}.grad`] = grad;
          cache.deltas.slice(0, -1).forEach((d, l) => {
            out[`${net}.delta${l}`] = d as Float32Array;
          });
        }
      });
      if (backward) {
        const norm2 = globalGradNorm(reference().map((r) => r.grad)) ** 2;
        out.sumOfSquares = Float32Array.of(norm2);
      }
      return out;
    }),
    actual: (backend) =>
      scoped(backend, async () => {
        const { params, x, dOut } = inputs();
        const plan = planMlps(
          layouts,
          batch,
          kSplitFor(backend),
          dwSplitBudgetFor(backend),
          dwHandoffFor(backend),
          // The most slices the budget allows (the plan's default may take fewer): every split
          // path of the kernels runs.
          'most',
          chain,
        );
        if (kernel === 'mlp_delta_chain') {
          plan.deltaChain = planDeltaChain(plan, chainRows);
          if (!plan.deltaChain)
            throw new Error('mlp_delta_chain case: no layer qualifies for the delta chain');
        }
        const b = createMlpBuffers(backend, plan, 'parity');
        try {
          plan.nets.forEach((net, n) => {
            backend.upload(b.params, params[n], 4 * net.base);
          });
          backend.upload(b.acts, x);
          const out: Outputs = {};
          if (!backward) {
            const launches = forwardDispatches(plan, b);
            const chained = launches.filter((d) => d.kernel.name === 'mlp_chain_forward').length;
            if (chained !== (chain !== false ? 1 : 0))
              throw new Error(`${chained} mlp_chain_forward launches`);
            backend.run(launches);
            for (const net of plan.nets) {
              for (const [l, layer] of net.layout.layers.entries()) {
                out[`${net.layout.kind}.out${l}`] = await readF32(
                  backend,
                  b.acts,
                  net.outputAt[l],
                  batch * layer.out,
                );
              }
            }
            return out;
          }
          // Activations from the reference, so backward is checked on its own.
          reference().forEach(({ cache }, n) => {
            const net = plan.nets[n];
            net.layout.layers.forEach((_, l) => {
              backend.upload(b.acts, cache.acts[l + 1] as Float32Array, 4 * net.outputAt[l]);
            });
            const last = net.layout.layers.length - 1;
            backend.upload(b.deltas, dOut[n], 4 * net.deltaAt[last]);
          });
          backend.run(backwardDispatches(plan, b));
          for (const net of plan.nets) {
            const k = net.layout.kind;
            out[`${k}.grad`] = await readF32(backend, b.grads, net.base, net.layout.size);
            for (const [l, layer] of net.layout.layers.slice(0, -1).entries()) {
              out[`${k}.delta${l}`] = await readF32(backend, b.deltas, net.deltaAt[l], batch * layer.out);
            }
          }
          const partials = await readF32(backend, b.partials, 0, plan.partialCount);
          out.sumOfSquares = Float32Array.of(partials.reduce((s, v) => s + v, 0));
          return out;
        } finally {
          for (const buf of Object.values(b)) backend.destroyBuffer(buf);
        }
      }),
  };
}

// ---- ppo_loss ------------------------------------------------------------------------------

/**
 * Identity "networks" make ppoLossAndGrad's logits and values equal to the input rows, so its
 * loss and output gradients are the expected values of the loss head alone.
 */
function identityLayouts(nActions: number): {
  actor: NetLayout;
  critic: NetLayout;
  actor0: Float32Array;
  critic0: Float32Array;
} {
  const actor = buildLayout('identity_actor', [{ name: 'l', in: nActions + 1, out: nActions, act: 'none' }]);
  const critic = buildLayout('identity_critic', [{ name: 'l', in: nActions + 1, out: 1, act: 'none' }]);
  const actor0 = new Float32Array(actor.size);
  for (let k = 0; k < nActions; k++) actor0[k * (nActions + 1) + k] = 1;
  const critic0 = new Float32Array(critic.size);
  critic0[nActions] = 1;
  return { actor, critic, actor0, critic0 };
}

function lossCase(batch: number, normalize: boolean): ParityCase {
  const nA = 45;
  const cfg = defaultConfig.ppo;
  const data = memo(() => {
    // Rows of 45 logits then the value; old log-probs near the new ones, so ratios straddle the clip.
    const rows = floats(30, batch * (nA + 1), -3, 3);
    const actions = Int32Array.from(floats(31, batch, 0, nA), Math.floor);
    const noise = floats(32, batch, -0.4, 0.4);
    const oldLogProbs = new Float32Array(batch);
    for (let b = 0; b < batch; b++) {
      const r = rows.subarray(b * (nA + 1), b * (nA + 1) + nA);
      const max = Math.max(...r);
      const lse = max + Math.log(r.reduce((s, v) => s + Math.exp(v - max), 0));
      oldLogProbs[b] = Math.fround(r[actions[b]] - lse + noise[b]);
    }
    return {
      rows,
      actions,
      oldLogProbs,
      advantages: floats(33, batch, -2, 1),
      returns: floats(34, batch, -1, 1),
    };
  });
  return {
    name: `ppo_loss B=${batch} ${normalize ? 'normalised' : 'raw'} advantages (clipped and unclipped samples)`,
    kernel: 'ppo_loss',
    tolerance: LOSS,
    expected: memo(() => {
      const d = data();
      const id = identityLayouts(nA);
      const ws = createPpoWorkspace(id.actor, id.critic, batch);
      const parts = ppoLossAndGrad(
        id.actor,
        id.actor0,
        id.critic,
        id.critic0,
        {
          states: d.rows,
          actions: d.actions,
          oldLogProbs: d.oldLogProbs,
          advantages: d.advantages,
          returns: d.returns,
          size: batch,
        },
        {
          clip: cfg.clip,
          valueCoef: cfg.valueCoef,
          entropyCoef: cfg.entropyCoef,
          normalizeAdvantages: normalize,
        },
        ws,
        new Float32Array(id.actor.size),
        new Float32Array(id.critic.size),
      );
      return {
        dLogits: ws.dLogits as Float32Array,
        dValue: ws.dValue as Float32Array,
        stats: Float32Array.of(
          parts.policyLoss,
          parts.valueLoss,
          parts.entropy,
          parts.approxKl,
          parts.clipFrac,
        ),
      };
    }),
    actual: (backend) =>
      scoped(backend, async (make) => {
        const d = data();
        // acts: logits rows [batch, 45] then values [batch]; deltas likewise.
        const acts = new Float32Array(batch * (nA + 1));
        for (let b = 0; b < batch; b++) {
          acts.set(d.rows.subarray(b * (nA + 1), b * (nA + 1) + nA), b * nA);
          acts[batch * nA + b] = d.rows[b * (nA + 1) + nA];
        }
        const mb = new Float32Array(4 * batch);
        mb.set(Float32Array.from(d.actions), 0);
        mb.set(d.oldLogProbs, batch);
        mb.set(d.advantages, 2 * batch);
        mb.set(d.returns, 3 * batch);
        const deltas = make(new Float32Array(batch * (nA + 1)).fill(Number.NaN), 'deltas');
        const groups = lossGroups(batch);
        const partials = make(new Float32Array(3 + groups * LOSS_PARTS).fill(Number.NaN), 'partials');
        backend.run([
          ppoLossDispatch({
            acts: make(acts, 'acts'),
            mb: make(mb, 'mb'),
            deltas,
            partials,
            lossAt: 3,
            batch,
            nActions: nA,
            logitsOff: 0,
            valuesOff: batch * nA,
            dLogitsOff: 0,
            dValueOff: batch * nA,
            clip: cfg.clip,
            valueCoef: cfg.valueCoef,
            entropyCoef: cfg.entropyCoef,
            normalize,
          }),
        ]);
        // The per-workgroup sums, reduced here as adam_step does, as means over the minibatch.
        const sums = await readF32(backend, partials, 3, groups * LOSS_PARTS);
        const stats = new Float32Array(LOSS_PARTS);
        for (let p = 0; p < LOSS_PARTS; p++) {
          let sum = 0;
          for (let g = 0; g < groups; g++) sum += sums[g * LOSS_PARTS + p];
          stats[p] = sum / batch;
        }
        return {
          dLogits: await readF32(backend, deltas, 0, batch * nA),
          dValue: await readF32(backend, deltas, batch * nA, batch),
          stats,
        };
      }),
  };
}

// ---- adam_step -----------------------------------------------------------------------------

/**
 * Adam / AdamW on n params at step t, clipped or not, against optim.ts; with `lossGroups`, also
 * the fold of a loss head's per-workgroup sums into the statistics (column sums / count).
 */
function adamCase(n: number, t: number, h: AdamHyper, what: string, lossGroupCount = 0): ParityCase {
  const count = 100;
  const data = memo(() => ({
    params: floats(40, n, -0.5, 0.5),
    grads: floats(41, n, -0.2, 0.2),
    m: floats(42, n, -0.01, 0.01),
    v: floats(43, n, 0, 1e-4),
    loss: floats(44, lossGroupCount * LOSS_PARTS, -2, 2),
  }));
  return {
    name: `adam_step n=${n} t=${t} ${what}`,
    kernel: 'adam_step',
    // CUDA rounds like the reference; WGSL's sqrt and division may differ by a few ulp.
    tolerance: { kind: 'close', atol: 1e-8, rtol: 2e-6 },
    expected: memo(() => {
      const d = data();
      const params = d.params.slice();
      const grads = d.grads.slice();
      const state = createAdam(n);
      state.m.set(d.m);
      state.v.set(d.v);
      state.step = t - 1;
      const norm = h.maxGradNorm ? clipGradNorm([grads], h.maxGradNorm) : 0;
      adamStep(params, grads, state, h);
      const lossStats = new Float32Array(LOSS_PARTS);
      for (let p = 0; p < LOSS_PARTS; p++) {
        for (let g = 0; g < lossGroupCount; g++) lossStats[p] += data().loss[g * LOSS_PARTS + p] / count;
      }
      return {
        params,
        m: state.m as Float32Array,
        v: state.v as Float32Array,
        norm: Float32Array.of(norm),
        lossStats,
      };
    }),
    actual: (backend) =>
      scoped(backend, async (make) => {
        const d = data();
        // The sum of squares split over uneven partials, as mlp_backward's tiles would write it.
        const partials = new Float32Array(37 + d.loss.length);
        d.grads.forEach((g, k) => {
          partials[k % 37] += g * g;
        });
        partials.set(d.loss, 37);
        const sched = new Float32Array(2);
        sched.set(adamBiasCorrection(h, t));
        const moments = new Float32Array(2 * n);
        moments.set(d.m);
        moments.set(d.v, n);
        const params = make(d.params, 'params');
        const mom = make(moments, 'moments');
        const stats = make(STAT_COUNT, 'stats');
        const args = {
          params,
          grads: make(d.grads, 'grads'),
          moments: mom,
          partials: make(partials, 'partials'),
          sched: make(new Uint32Array(sched.buffer), 'sched'),
          stats,
          n,
          nPartials: 37,
          normAt: STAT.gradNorm,
          loss: lossGroupCount ? { at: 37, groups: lossGroupCount, count } : undefined,
        };
        backend.run([adamStepDispatch(args, h, 0)]);
        return {
          params: await readF32(backend, params, 0, n),
          m: await readF32(backend, mom, 0, n),
          v: await readF32(backend, mom, n, n),
          norm: await readF32(backend, stats, STAT.gradNorm, 1),
          lossStats: await readF32(backend, stats, 0, LOSS_PARTS),
        };
      }),
  };
}

// ---- curiosity_loss ------------------------------------------------------------------------

const statsArray = (s: PpoUpdateStats) =>
  Float32Array.of(
    s.total,
    s.policyLoss,
    s.valueLoss,
    s.entropy,
    s.approxKl,
    s.clipFrac,
    s.gradNorm,
    s.minibatches,
  );

/**
 * DevicePpoLearner.update against ppoUpdateReference on the same synthetic rollout. `check`
 * 'grads': the gradients of a single-step update (left in the grads buffer; no clipping, so they
 * equal the reference's); 'params': params after Adam and the update's statistics. `chain`: the
 * learner's option (default on: the critic's layers 3..5 in one mlp_chain_forward launch);
 * `deltaChain` too (default: the backend's, on with CUDA), and `fuseLoss` (default: on with the
 * delta chain: the loss head inside its launch).
 */
function learnerCase(
  check: 'grads' | 'params',
  count: number,
  cfg: PpoConfig,
  update: number,
  what: string,
  chain?: boolean,
  precision: Precision = 'exact',
  deltaChain?: boolean,
  fuseLoss?: boolean,
): ParityCase {
  const actorLayout = ppoActorLayout();
  const criticLayout = ppoCriticLayout();
  const seed = 9;
  const rollout = memo(() => syntheticPpoRollout(count, actorLayout.layers[0].in, 45, 1));
  const init = memo(() => ({
    actor: initParams(actorLayout, NetId.Actor, seed),
    critic: initParams(criticLayout, NetId.Critic, seed),
  }));
  if (check === 'grads' && (count >= 2 * cfg.minibatch || cfg.updateEpochs !== 1 || cfg.maxGradNorm < 1e3)) {
    throw new Error('learner grads case: one unclipped step only');
  }
  const tf32 = precision === 'tf32';
  if (tf32 && check !== 'grads') throw new Error('learner tf32 case: gradients only');
  return {
    name: `ppo learner ${what}${tf32 ? ', TF32 matmuls' : ''} [${check}]: count=${count} minibatch ${cfg.minibatch} x ${cfg.updateEpochs} epochs, update ${update}`,
    kernel: 'ppo_learner',
    // TF32 tensor cores exist on CUDA only (DevicePpoLearnerInit.precision).
    ...(tf32 ? { backends: ['cuda' as const] } : {}),
    tolerance: tf32
      ? TF32_GRADS
      : check === 'grads'
        ? // f32 loss head against f64, and matmul rounding: well below the critic's median gradient (~2e-5).
          { kind: 'close', atol: 1e-7, rtol: 1e-4 }
        : // Adam divides by sqrt(v): where a gradient is within rounding noise of zero a difference
          // moves a param by a fraction of lr (3e-4) per step, hence an absolute few percent of lr.
          { kind: 'close', atol: 1e-5, rtol: 1e-4 },
    expected: memo((): Outputs => {
      const { actor, critic } = init();
      const ref = createPpoLearner(actorLayout, actor.slice(), criticLayout, critic.slice());
      const stats = ppoUpdateReference(ref, rollout(), cfg, seed, update);
      if (check === 'grads')
        return { actorGrad: ref.actorGrad as Float32Array, criticGrad: ref.criticGrad as Float32Array };
      return {
        actor: ref.actor as Float32Array,
        critic: ref.critic as Float32Array,
        stats: statsArray(stats),
      };
    }),
    actual: async (backend): Promise<Outputs> => {
      const { actor, critic } = init();
      const dev = new DevicePpoLearner({
        backend,
        actorLayout,
        criticLayout,
        actor,
        critic,
        cfg,
        seed,
        chain,
        deltaChain,
        fuseLoss,
        ...(tf32 ? { precision } : {}),
      });
      if (deltaChain !== undefined && (dev.plan.deltaChain !== undefined) !== deltaChain) {
        throw new Error(`the learner's plan has ${dev.plan.deltaChain ? 'a' : 'no'} delta chain`);
      }
      if (fuseLoss !== undefined && dev.fuseLoss !== fuseLoss) {
        throw new Error(`the learner ${dev.fuseLoss ? 'fuses' : 'does not fuse'} the loss head`);
      }
      const r = uploadPpoRollout(backend, rollout(), actorLayout.layers[0].in);
      try {
        const stats = await dev.update(r, update);
        if (check === 'grads') {
          return {
            actorGrad: await readF32(backend, dev.buffers.grads, dev.plan.nets[0].base, actorLayout.size),
            criticGrad: await readF32(backend, dev.buffers.grads, dev.plan.nets[1].base, criticLayout.size),
          };
        }
        const p = await dev.readParams();
        return { actor: p.actor, critic: p.critic, stats: statsArray(stats) };
      } finally {
        dev.destroy();
        backend.destroyBuffer(r.f);
        backend.destroyBuffer(r.i);
      }
    },
  };
}

// ---- curiosity: device batch assembly and one AdamW step ------------------------------------

/** The learner's parity cases, in a stable order. */
export function learnParityCases(): ParityCase[] {
  const ppo = defaultConfig.ppo;
  const oneStep = { ...ppo, minibatch: 24, updateEpochs: 1, maxGradNorm: 1e6 };
  return [
    gatherCase(1000, 100, 3, 2),
    gatherCase(64, 64, 0, 0),
    gatherCase(1000, 102, 3, 2, 4),
    mlpParityCase('mlp_forward', 70),
    mlpParityCase('mlp_chain_forward', 70),
    mlpParityCase('mlp_backward', 70),
    mlpParityCase('mlp_delta_chain', 70),
    mlpParityCase('mlp_delta_chain', 70, undefined, 2),
    lossCase(300, true),
    lossCase(1, true),
    lossCase(40, false),
    adamCase(
      5000,
      1,
      { lr: 3e-4, maxGradNorm: 0.5 },
      'Adam, clipped (norm above 0.5), loss sums of 7 workgroups',
      7,
    ),
    adamCase(3000, 7, { lr: 3e-4, maxGradNorm: 1e3 }, 'Adam, clip inactive'),
    adamCase(2000, 3, { lr: 1e-3, weightDecay: 0.01 }, 'AdamW, no clip'),
    learnerCase('grads', 24, oneStep, 0, 'one minibatch step'),
    learnerCase('grads', 24, oneStep, 0, 'one minibatch step', undefined, 'tf32'),
    learnerCase('params', 24, oneStep, 0, 'one minibatch step'),
    learnerCase(
      'grads',
      24,
      oneStep,
      0,
      'one minibatch step, critic tail in one chain launch (--chain on)',
      true,
    ),
    learnerCase(
      'grads',
      24,
      oneStep,
      0,
      'one minibatch step, critic tail as 3 mlp_forward launches (--chain off)',
      false,
    ),
    learnerCase(
      'grads',
      24,
      oneStep,
      0,
      "one minibatch step, top layers' deltas in one mlp_delta_chain launch (--delta-chain on --fuse-loss off)",
      undefined,
      'exact',
      true,
      false,
    ),
    learnerCase(
      'grads',
      24,
      oneStep,
      0,
      "one minibatch step, the loss head and top layers' deltas in one mlp_delta_chain launch (--delta-chain on --fuse-loss on)",
      undefined,
      'exact',
      true,
      true,
    ),
    learnerCase(
      'grads',
      24,
      oneStep,
      0,
      'one minibatch step, one mlp_backward launch per stage (--delta-chain off)',
      undefined,
      'exact',
      false,
    ),
    learnerCase(
      'params',
      50,
      { ...ppo, minibatch: 16, updateEpochs: 2 },
      3,
      'short update (shuffle, clip, 6 steps), delta chain (--delta-chain on --fuse-loss off)',
      undefined,
      'exact',
      true,
      false,
    ),
    learnerCase(
      'params',
      50,
      { ...ppo, minibatch: 16, updateEpochs: 2 },
      3,
      'short update (shuffle, clip, 6 steps), loss head in the delta chain launch (--delta-chain on --fuse-loss on)',
      undefined,
      'exact',
      true,
      true,
    ),
    learnerCase(
      'params',
      50,
      { ...ppo, minibatch: 16, updateEpochs: 2 },
      3,
      'short update (shuffle, clip, 6 steps)',
    ),
  ];
}
