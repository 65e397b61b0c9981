/**
 * Parity cases of the DQN family's learner kernels (dqn_loss, iqn_loss, dqn_target_update,
 * dueling_combine) and of the device train step (DeviceDqnLearner). Expectations come from the
 * plain TS learner (src/learn/dqn_loss.ts `dqnHuberLoss`, `c51Loss`, `iqnLoss` on whole batches;
 * src/learn/dqn_update.ts; src/learn/dueling.ts `duelingCombine*`), never from the kernels'
 * references, so the CPU backend is checked too. The kernels read the batch in the replay row
 * layout (src/learn/replay.ts) at offsets inside larger buffers. Browser-safe.
 */
import type { Backend, DeviceBuffer } from '../backend/types.js';
import { type DqnConfig, defaultConfig } from '../config.js';
import { DeviceDqnLearner } from '../device/dqn.js';
import { dqnLossDispatch } from '../kernels/dqn_loss.js';
import { dqnTargetUpdateDispatch } from '../kernels/dqn_target_update.js';
import { duelingCombineBackwardDispatch, duelingCombineDispatch } from '../kernels/dueling_combine.js';
import { iqnLossDispatch } from '../kernels/iqn_loss.js';
import type { TypedArray } from '../kernels/reference.js';
import { c51Loss, dqnHuberLoss, iqnLoss, type LossRows } from '../learn/dqn_loss.js';
import {
  createDqnLearner,
  dqnLossGrad,
  gatherRows,
  learnerTaus,
  targetUpdate,
  updateTarget,
} from '../learn/dqn_update.js';
import { duelingCombine, duelingCombineBackward } from '../learn/dueling.js';
import { adamStep, clipGradNorm } from '../learn/optim.js';
import { REPLAY_F, ReplayF } from '../learn/replay.js';
import { type C51Support, initParams } from '../nets/forward.js';
import { duelingLayout, NetId, NUM_ACTIONS, type QHead } from '../nets/layout.js';
import { philox4x32, seedToKey, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import type { Outputs, ParityCase } from './cases.js';
import type { Tolerance } from './compare.js';

/** Uniform f32 in [lo, hi): counter (Test, 4000 + input, block, 0), key of seed 1. */
function floats(input: number, n: number, lo: number, hi: number): Float32Array {
  const out = new Float32Array(n);
  const block = new Uint32Array(4);
  const [k0, k1] = seedToKey(1);
  for (let i = 0; i < n; i++) {
    if ((i & 3) === 0) philox4x32(Stream.Test, 4000 + input, i >>> 2, 0, k0, k1, block);
    out[i] = lo + (hi - lo) * u32ToUnitFloat(block[i & 3]);
  }
  return out;
}

function memo<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => {
    value ??= make();
    return value;
  };
}

/**
 * f32 twins (their own exp/log, fused multiply-adds) against the reference's correctly rounded
 * f32 steps: C51's sums run over 51 atoms, so a few ulps of the values' scale (~10).
 */
const DQN_LOSS: Tolerance = { kind: 'close', atol: 2e-6, rtol: 1e-4 };

/** Leading floats before each buffer's data (the kernel's offsets). */
const PAD = { q: 7, next: 3, target: 5, dOut: 11 };

interface LossData {
  online: Float32Array;
  target: Float32Array;
  rows: Float32Array;
  actions: Int32Array;
  weights: Float32Array;
  lossRows: LossRows;
}

function lossData(batch: number, atoms: number, seed: number): LossData {
  const row = NUM_ACTIONS * atoms;
  const spread = atoms > 1 ? 2 : 3;
  const q = floats(seed, batch * row, -spread, spread);
  const next = floats(seed + 1, batch * row, -spread, spread);
  const online = new Float32Array(PAD.q + batch * row + PAD.next + batch * row);
  online.set(q, PAD.q);
  online.set(next, PAD.q + batch * row + PAD.next);
  const target = new Float32Array(PAD.target + batch * row);
  target.set(floats(seed + 2, batch * row, -spread, spread), PAD.target);
  const returns = floats(seed + 3, batch, -4, 4);
  const discounts = floats(seed + 4, batch, 0.8, 1);
  // Every fifth sample ends its episode (discount 0): the target is the return alone.
  for (let b = 0; b < batch; b += 5) discounts[b] = 0;
  const weights = floats(seed + 5, batch, 0.1, 1);
  const actions = Int32Array.from(floats(seed + 6, batch, 0, NUM_ACTIONS), (x) => Math.floor(x));
  const rows = floats(seed + 7, batch * REPLAY_F, -1, 1);
  for (let b = 0; b < batch; b++) {
    rows[b * REPLAY_F + ReplayF.Return] = returns[b];
    rows[b * REPLAY_F + ReplayF.Discount] = discounts[b];
  }
  return {
    online,
    target,
    rows,
    actions,
    weights,
    lossRows: { batch, actions, returns, discounts, weights },
  };
}

type Head = { kind: 'huber'; kappa: number } | { kind: 'c51'; support: C51Support };

function dqnLossCase(batch: number, head: Head, seed: number): ParityCase {
  const atoms = head.kind === 'c51' ? head.support.atoms : 1;
  const row = NUM_ACTIONS * atoms;
  // The streams' outputs of online s, online s' and target s' (V rows, then A rows), each at its
  // own offset: the online rows in one activation buffer, the target's in another (NaN wherever
  // the other buffer's rows are, so a twin reading the wrong buffer fails); the deltas dV, dA at
  // offsets inside a third.
  const spread = atoms > 1 ? 2 : 3;
  const at = { v: 7, a: 7 + batch * atoms + 2 };
  const nextAt = { v: at.a + batch * row + 3, a: at.a + batch * row + 3 + batch * atoms + 1 };
  const targetAt = { v: nextAt.a + batch * row + 5, a: nextAt.a + batch * row + 5 + batch * atoms };
  const size = targetAt.a + batch * row + 4;
  const dAt = { v: 11, a: 11 + batch * atoms + 6 };
  const data = memo(() => {
    const d = lossData(batch, atoms, seed);
    const acts = new Float32Array(size).fill(Number.NaN);
    const targetActs = new Float32Array(size).fill(Number.NaN);
    [at, nextAt, targetAt].forEach((p, k) => {
      const into = k === 2 ? targetActs : acts;
      into.set(floats(seed + 20 + 2 * k, batch * atoms, -spread, spread), p.v);
      into.set(floats(seed + 21 + 2 * k, batch * row, -spread, spread), p.a);
    });
    return { ...d, acts, targetActs };
  });
  const what =
    head.kind === 'c51'
      ? `C51 ${atoms} atoms on [${head.support.vMin}, ${head.support.vMax}]`
      : `dueling double DQN, Huber kappa ${head.kappa}`;
  return {
    name: `dqn_loss ${what} with the dueling combination, batch ${batch} (replay rows, IS weights, episode ends)`,
    kernel: 'dqn_loss',
    tolerance: DQN_LOSS,
    expected: memo(() => {
      const d = data();
      const heads = (from: Float32Array, p: { v: number; a: number }) => {
        const out = new Float32Array(batch * row);
        duelingCombine(
          from.subarray(p.v, p.v + batch * atoms),
          from.subarray(p.a, p.a + batch * row),
          out,
          batch,
          atoms,
        );
        return out;
      };
      const [q, next, target] = [heads(d.acts, at), heads(d.acts, nextAt), heads(d.targetActs, targetAt)];
      const dOut = new Float32Array(batch * row);
      const prio = new Float32Array(batch);
      const loss =
        head.kind === 'c51'
          ? c51Loss(head.support, q, next, target, d.lossRows, dOut, prio)
          : dqnHuberLoss(q, next, target, d.lossRows, head.kappa, dOut, prio);
      const dV = new Float32Array(batch * atoms);
      const dA = new Float32Array(batch * row);
      duelingCombineBackward(dOut, dV, dA, batch, atoms);
      return { dV, dA, prio, loss: Float32Array.of(loss) };
    }),
    actual: async (backend: Backend): Promise<Outputs> => {
      const d = data();
      const made: DeviceBuffer[] = [];
      const make = (x: TypedArray, label: string) => {
        const buf = backend.createBuffer(x.byteLength, label);
        backend.upload(buf, x);
        made.push(buf);
        return buf;
      };
      try {
        const deltas = make(new Float32Array(dAt.a + batch * row + 3).fill(Number.NaN), 'deltas');
        const td = make(new Float32Array(2 * batch).fill(Number.NaN), 'td');
        backend.run([
          dqnLossDispatch({
            acts: make(d.acts, 'acts'),
            targetActs: make(d.targetActs, 'targetActs'),
            rows: make(d.rows, 'rows'),
            actions: make(d.actions, 'actions'),
            weights: make(d.weights, 'weights'),
            deltas,
            td,
            batch,
            head,
            online: at,
            next: nextAt,
            target: targetAt,
            dVOff: dAt.v,
            dAOff: dAt.a,
          }),
        ]);
        const dV = new Float32Array(await backend.download(deltas, 4 * dAt.v, 4 * batch * atoms));
        const dA = new Float32Array(await backend.download(deltas, 4 * dAt.a, 4 * batch * row));
        const tds = new Float32Array(await backend.download(td, 0, 8 * batch));
        let loss = 0;
        for (let b = 0; b < batch; b++) loss += tds[batch + b];
        return { dV, dA, prio: tds.slice(0, batch), loss: Float32Array.of(loss / batch) };
      } finally {
        for (const b of made) backend.destroyBuffer(b);
      }
    },
  };
}

/**
 * iqn_loss on `batch` samples of nTau online and nTarget target quantile rows, at offsets inside
 * larger buffers (the taus too), against iqnLoss.
 */
function iqnLossCase(batch: number, nTau: number, nTarget: number, kappa: number, seed: number): ParityCase {
  const A = NUM_ACTIONS;
  const pad = { q: 4, next: 9, target: 2, dOut: 6, tau: 3 };
  const data = memo(() => {
    const d = lossData(batch, 1, seed);
    return {
      ...d,
      q: floats(seed + 10, batch * nTau * A, -3, 3),
      next: floats(seed + 11, batch * nTarget * A, -3, 3),
      target: floats(seed + 12, batch * nTarget * A, -3, 3),
      taus: floats(seed + 13, batch * nTau, 0, 1),
    };
  });
  return {
    name: `iqn_loss ${nTau} x ${nTarget} quantiles, kappa ${kappa}, batch ${batch} (replay rows, IS weights, episode ends)`,
    kernel: 'iqn_loss',
    tolerance: DQN_LOSS,
    expected: memo(() => {
      const d = data();
      const dOut = new Float32Array(batch * nTau * A);
      const prio = new Float32Array(batch);
      const loss = iqnLoss(d.q, d.taus, nTau, d.next, d.target, nTarget, d.lossRows, kappa, dOut, prio);
      return { dOut, prio, loss: Float32Array.of(loss) };
    }),
    actual: async (backend: Backend): Promise<Outputs> => {
      const d = data();
      const made: DeviceBuffer[] = [];
      const make = (x: TypedArray, label: string) => {
        const buf = backend.createBuffer(x.byteLength, label);
        backend.upload(buf, x);
        made.push(buf);
        return buf;
      };
      const padded = (x: Float32Array, before: number) => {
        const out = new Float32Array(before + x.length);
        out.set(x, before);
        return out;
      };
      const online = new Float32Array(pad.q + d.q.length + pad.next + d.next.length);
      online.set(d.q, pad.q);
      online.set(d.next, pad.q + d.q.length + pad.next);
      try {
        const dOut = make(new Float32Array(pad.dOut + batch * nTau * A).fill(Number.NaN), 'dOut');
        const td = make(new Float32Array(2 * batch).fill(Number.NaN), 'td');
        backend.run([
          iqnLossDispatch({
            online: make(online, 'online'),
            targetNet: make(padded(d.target, pad.target), 'targetNet'),
            taus: make(padded(d.taus, pad.tau), 'taus'),
            rows: make(d.rows, 'rows'),
            actions: make(d.actions, 'actions'),
            weights: make(d.weights, 'weights'),
            dOut,
            td,
            batch,
            nTau,
            nTarget,
            kappa,
            qOff: pad.q,
            nextOff: pad.q + d.q.length + pad.next,
            targetOff: pad.target,
            dOutOff: pad.dOut,
            tauOff: pad.tau,
          }),
        ]);
        const grads = new Float32Array(await backend.download(dOut, 4 * pad.dOut, 4 * batch * nTau * A));
        const tds = new Float32Array(await backend.download(td, 0, 8 * batch));
        let loss = 0;
        for (let b = 0; b < batch; b++) loss += tds[batch + b];
        return { dOut: grads, prio: tds.slice(0, batch), loss: Float32Array.of(loss / batch) };
      } finally {
        for (const b of made) backend.destroyBuffer(b);
      }
    },
  };
}

/** One ulp of the Polyak update (WGSL may fuse its multiply-add). */
const POLYAK: Tolerance = { kind: 'close', atol: 1e-7, rtol: 2.4e-7 };

/**
 * `steps` train steps of the target update from fixed weights: before step s the online params
 * move (as Adam would), then the update runs as the device step schedules it (hard copy launched
 * only after every targetEvery-th step, Polyak after every step). Online and target sit at
 * offsets inside larger buffers; 1000 params leave a ragged last workgroup.
 */
function targetUpdateCase(targetEvery: number, polyakTau: number, steps: number): ParityCase {
  const count = 1000;
  const at = { online: 13, target: 29 };
  const cfg = { targetEvery, polyakTau };
  const data = memo(() => ({
    start: floats(40, count, -1, 1),
    moves: Array.from({ length: steps }, (_, s) => floats(41 + s, count, -0.1, 0.1)),
  }));
  const onlineAt = (s: number) => {
    const { start, moves } = data();
    const o = Float32Array.from(start);
    for (let k = 0; k <= s; k++) for (let i = 0; i < count; i++) o[i] = Math.fround(o[i] + moves[k][i]);
    return o;
  };
  return {
    name: `dqn_target_update ${targetEvery > 0 ? `hard copy every ${targetEvery} steps` : `Polyak tau ${polyakTau}`}, ${steps} steps of ${count} params`,
    kernel: 'dqn_target_update',
    tolerance: targetEvery > 0 ? { kind: 'exact' } : POLYAK,
    expected: memo(() => {
      const target = Float32Array.from(data().start);
      for (let s = 1; s <= steps; s++) targetUpdate(cfg, s, onlineAt(s - 1), target);
      return { target };
    }),
    actual: async (backend: Backend): Promise<Outputs> => {
      const online = backend.createBuffer(4 * (at.online + count), 'online');
      const target = backend.createBuffer(4 * (at.target + count + 5), 'targetNet');
      try {
        const padded = new Float32Array(at.target + count + 5).fill(Number.NaN);
        padded.set(data().start, at.target);
        backend.upload(target, padded);
        for (let s = 1; s <= steps; s++) {
          const o = new Float32Array(at.online + count);
          o.set(onlineAt(s - 1), at.online);
          backend.upload(online, o);
          if (targetEvery > 0 && s % targetEvery !== 0) continue;
          backend.run([
            dqnTargetUpdateDispatch({
              online,
              targetNet: target,
              count,
              onlineOff: at.online,
              targetOff: at.target,
              update: targetEvery > 0 ? 'copy' : polyakTau,
            }),
          ]);
        }
        const all = new Float32Array(await backend.download(target, 0, 4 * (at.target + count + 5)));
        // The floats around the params must be left as they were (NaN).
        const around = [...all.subarray(0, at.target), ...all.subarray(at.target + count)];
        if (!around.every(Number.isNaN)) throw new Error('dqn_target_update wrote outside its params');
        return { target: all.slice(at.target, at.target + count) };
      } finally {
        backend.destroyBuffer(online);
        backend.destroyBuffer(target);
      }
    },
  };
}

/** f32 sums in the same order; WGSL's division may be 2.5 ulp off. */
const COMBINE: Tolerance = { kind: 'close', atol: 1e-6, rtol: 1e-6 };

/**
 * dueling_combine forward (V, A -> Q or C51 logits, in `acts`) or backward (dOut -> dV, dA, in
 * `deltas`) on `rows` rows at offsets; the other buffer is checked to be left alone.
 */
function combineCase(backward: boolean, rows: number, atoms: number): ParityCase {
  const wide = rows * NUM_ACTIONS * atoms;
  const narrow = rows * atoms;
  // Forward: V at 3, A after it + 2, out after A + 1; backward: dOut at 5, dV after + 4, dA after + 1.
  const at = backward
    ? { in: 5, small: 5 + wide + 4, big: 5 + wide + 4 + narrow + 1 }
    : { small: 3, in: 3 + narrow + 2, big: 3 + narrow + 2 + wide + 1 };
  const size = at.big + wide + 3;
  const data = memo(() => ({ x: floats(60, wide, -2, 2), v: floats(61, narrow, -2, 2) }));
  return {
    name: `dueling_combine ${backward ? 'backward' : 'forward'} ${rows} rows x 45 actions x ${atoms} atoms`,
    kernel: 'dueling_combine',
    tolerance: COMBINE,
    expected: memo(() => {
      const { x, v } = data();
      if (backward) {
        const dV = new Float32Array(narrow);
        const dA = new Float32Array(wide);
        duelingCombineBackward(x, dV, dA, rows, atoms);
        return { small: dV, big: dA, untouched: new Float32Array(size) };
      }
      const out = new Float32Array(wide);
      duelingCombine(v, x, out, rows, atoms);
      return { small: v, big: out, untouched: new Float32Array(size) };
    }),
    actual: async (backend: Backend): Promise<Outputs> => {
      const { x, v } = data();
      const host = new Float32Array(size).fill(Number.NaN);
      host.set(x, at.in);
      if (!backward) host.set(v, at.small);
      const acts = backend.createBuffer(4 * size, 'acts');
      const deltas = backend.createBuffer(4 * size, 'deltas');
      try {
        backend.upload(backward ? deltas : acts, host);
        backend.upload(backward ? acts : deltas, new Float32Array(size));
        const shape = { acts, deltas, rows, atoms };
        backend.run([
          backward
            ? duelingCombineBackwardDispatch({ ...shape, dOutOff: at.in, dVOff: at.small, dAOff: at.big })
            : duelingCombineDispatch({ ...shape, vOff: at.small, aOff: at.in, outOff: at.big }),
        ]);
        const used = new Float32Array(await backend.download(backward ? deltas : acts, 0, 4 * size));
        const other = new Float32Array(await backend.download(backward ? acts : deltas, 0, 4 * size));
        return {
          small: used.slice(at.small, at.small + narrow),
          big: used.slice(at.big, at.big + wide),
          untouched: other,
        };
      } finally {
        backend.destroyBuffer(acts);
        backend.destroyBuffer(deltas);
      }
    },
  };
}

/**
 * DeviceDqnLearner against dqn_update.ts (dqnLossGrad, clipGradNorm, adamStep, updateTarget) from
 * the same initial weights, `steps` steps on one fixed batch of 8 replay rows. 'grads': the
 * gradients of one unclipped step (left in the grads buffer); 'params': online and target params
 * after the steps and the last step's priority signals.
 */
function dqnStepCase(
  head: QHead,
  check: 'grads' | 'params',
  steps: number,
  cfg: DqnConfig,
  what: string,
): ParityCase {
  const layout = duelingLayout(head, cfg.atoms, cfg.iqnEmbed);
  const atoms = head === 'c51' ? cfg.atoms : 1;
  const B = cfg.batch;
  const key = seedToKey(11);
  const data = memo(() => ({ params: initParams(layout, NetId.QOnline, 5), batch: lossData(B, atoms, 70) }));
  return {
    name: `dqn learner ${head} ${what} [${check}]: batch ${B}, ${steps} steps`,
    kernel: 'dqn_learner',
    tolerance:
      check === 'grads'
        ? { kind: 'close', atol: 1e-7, rtol: 1e-4 }
        : // Adam divides by sqrt(v): a gradient within rounding noise of zero (C51's outermost
          // atoms) may move a param by a fraction of lr (3e-4) per step, and the launches' k-group
          // sums round differently from the reference's one running sum (3e-5 seen after 3 steps).
          // A broken Adam, clip or target update moves nearly every param by about lr or more.
          { kind: 'close', atol: 1e-4, rtol: 1e-4 },
    expected: memo((): Outputs => {
      const { params, batch } = data();
      const ref = createDqnLearner(head, cfg, params);
      const replay = { capacity: B, f: batch.rows, i: batch.actions, head: 0, size: B };
      const index = Int32Array.from({ length: B }, (_, b) => b);
      for (let s = 0; s < steps; s++) {
        ref.rows.weights.set(batch.weights);
        gatherRows(ref, replay, index, B);
        if (head === 'iqn') learnerTaus(ref, key, ref.steps, B);
        dqnLossGrad(ref, ref.online, ref.grad);
        if (check === 'grads') return { grads: ref.grad as Float32Array };
        clipGradNorm([ref.grad], cfg.maxGradNorm);
        adamStep(ref.online, ref.grad, ref.adam, { lr: cfg.lr });
        ref.steps++;
        updateTarget(ref);
      }
      return {
        online: ref.online as Float32Array,
        target: ref.target as Float32Array,
        prio: ref.prio as Float32Array,
      };
    }),
    actual: async (backend: Backend): Promise<Outputs> => {
      const { params, batch } = data();
      const dev = new DeviceDqnLearner({ backend, head, cfg, layout, params, key });
      const bufs = {
        rows: backend.createBuffer(batch.rows.byteLength, 'rows'),
        actions: backend.createBuffer(batch.actions.byteLength, 'actions'),
        weights: backend.createBuffer(batch.weights.byteLength, 'weights'),
      };
      try {
        backend.upload(bufs.rows, batch.rows);
        backend.upload(bufs.actions, batch.actions);
        backend.upload(bufs.weights, batch.weights);
        for (let s = 0; s < steps; s++) dev.train(bufs);
        if (check === 'grads') {
          return { grads: new Float32Array(await backend.download(dev.buffers.grads, 0, 4 * layout.size)) };
        }
        return {
          online: await dev.read('params'),
          target: await dev.read('target'),
          prio: (await dev.readTd()).slice(0, B),
        };
      } finally {
        dev.destroy();
        for (const b of Object.values(bufs)) backend.destroyBuffer(b);
      }
    },
  };
}

const C51_SUPPORT: C51Support = { vMin: -10, vMax: 10, atoms: 51 };

/** The DQN learner's parity cases, in a stable order. */
export function dqnParityCases(): ParityCase[] {
  return [
    dqnLossCase(70, { kind: 'huber', kappa: 1 }, 0),
    dqnLossCase(3, { kind: 'huber', kappa: 0.5 }, 10),
    dqnLossCase(40, { kind: 'c51', support: C51_SUPPORT }, 20),
    dqnLossCase(2, { kind: 'c51', support: { vMin: -2, vMax: 3, atoms: 11 } }, 30),
    iqnLossCase(20, 8, 6, 1, 80),
    iqnLossCase(4, 32, 32, 0.5, 90),
    iqnLossCase(6, 64, 64, 1, 100),
    targetUpdateCase(2, 0, 5),
    targetUpdateCase(0, 0.005, 3),
    combineCase(false, 70, 1),
    combineCase(false, 5, 51),
    combineCase(true, 70, 1),
    combineCase(true, 3, 51),
    ...dqnStepCases(),
  ];
}

/** The device learner step's cases (dqn_learner). */
export function dqnStepCases(): ParityCase[] {
  const base = { ...defaultConfig.dqn, batch: 8, lr: 3e-4 };
  const unclipped = { ...base, maxGradNorm: 1e6 };
  return [
    dqnStepCase('plain', 'grads', 1, unclipped, 'Huber, one step'),
    dqnStepCase('c51', 'grads', 1, unclipped, '51 atoms, one step'),
    dqnStepCase(
      'plain',
      'params',
      3,
      { ...base, targetEvery: 2, maxGradNorm: 0.5 },
      'Huber, clip 0.5, hard copy every 2',
    ),
    dqnStepCase('c51', 'params', 3, { ...base, targetEvery: 0, polyakTau: 0.05 }, '51 atoms, Polyak 0.05'),
    // The launches take k-groups and split dW tiles (matmulShape). Batch 64: the first layer's dW
    // split (CUDA's last-arrival hand-off; WGSL's launch after the last); batch 128: also the
    // output layers' (WGSL: finished in the next launch).
    dqnStepCase('c51', 'grads', 1, { ...unclipped, batch: 64 }, '51 atoms, one step, split launches'),
    dqnStepCase(
      'plain',
      'params',
      2,
      { ...base, batch: 128, targetEvery: 1 },
      'Huber, two steps, split launches',
    ),
    dqnStepCase('iqn', 'grads', 1, { ...unclipped, iqnTau: 6 }, '6 taus, one step'),
    // 64 x 48 rows: the streams' backward launches are past the split budget by their dX tiles
    // alone, and matmulShape splits their dW tiles (spreadCost).
    dqnStepCase(
      'iqn',
      'grads',
      1,
      { ...unclipped, batch: 64, iqnTau: 48 },
      '48 taus, one step, split stream launches',
    ),
    dqnStepCase(
      'iqn',
      'params',
      3,
      { ...base, iqnTau: 5, iqnEmbed: 16, targetEvery: 2, maxGradNorm: 0.5 },
      '5 taus, 16 cosines, clip 0.5, hard copy every 2',
    ),
  ];
}
