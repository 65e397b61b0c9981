/**
 * Parity cases of the IQN learner kernels: iqn_taus against src/learn/dqn_update.ts `learnerTaus`
 * and src/nets/forward.ts `iqnCosines`; iqn_mix against src/learn/dueling.ts's product of the
 * trunk with the tau embedding and its backward (with the trunk's and tau_embed's activation
 * derivatives, as src/learn/mlp.ts `backwardMlp` seeds them). Inputs sit at offsets inside
 * larger buffers. The whole IQN train step is a dqn_learner case (dqn_cases.ts). Browser-safe.
 */
import type { Backend, DeviceBuffer } from '../backend/types.js';
import { defaultConfig } from '../config.js';
import { iqnMixBackwardDispatch, iqnMixDispatch } from '../kernels/iqn_mix.js';
import { iqnTausDispatch } from '../kernels/iqn_taus.js';
import type { TypedArray } from '../kernels/reference.js';
import { createDqnLearner, learnerTaus } from '../learn/dqn_update.js';
import { iqnCosines } from '../nets/forward.js';
import { duelingLayout, LEAKY_SLOPE } from '../nets/layout.js';
import { philox4x32, seedToKey, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import type { Outputs, ParityCase } from './cases.js';

/** Uniform f32 in [lo, hi): counter (Test, 4500 + input, block, 0), key of seed 1. */
function floats(input: number, n: number, lo: number, hi: number): Float32Array {
  const out = new Float32Array(n);
  const block = new Uint32Array(4);
  const [k0, k1] = seedToKey(1);
  for (let i = 0; i < n; i++) {
    if ((i & 3) === 0) philox4x32(Stream.Test, 4500 + input, i >>> 2, 0, k0, k1, block);
    out[i] = lo + (hi - lo) * u32ToUnitFloat(block[i & 3]);
  }
  return out;
}

async function withBuffers(
  backend: Backend,
  run: (make: (x: TypedArray, label: string) => DeviceBuffer) => Promise<Outputs>,
): Promise<Outputs> {
  const made: DeviceBuffer[] = [];
  try {
    return await run((x, label) => {
      const buf = backend.createBuffer(Math.max(4, x.byteLength), label);
      backend.upload(buf, x);
      made.push(buf);
      return buf;
    });
  } finally {
    for (const b of made) backend.destroyBuffer(b);
  }
}

/**
 * iqn_taus of train step `step` (read as state[2] + stepSlot 3) for `batch` samples of `nTau`
 * taus and `embed` cosines each; the reference learner's taus for the same key and step.
 */
function tausCase(batch: number, nTau: number, embed: number, step: number): ParityCase {
  const key = seedToKey(23);
  const slot = 3;
  const pad = { tau: 5, cos: 7 };
  const rows = 2 * batch * nTau;
  return {
    name: `iqn_taus ${batch} samples x ${nTau} taus, ${embed} cosines, step ${step}`,
    kernel: 'iqn_taus',
    // Philox exact; cos within a few ulp of the correctly rounded f64 cos of the f32 argument.
    tolerance: { kind: 'close', atol: 1e-6, rtol: 0 },
    expected: () => {
      const cfg = { ...defaultConfig.dqn, batch, iqnTau: nTau, iqnEmbed: embed };
      const layout = duelingLayout('iqn', cfg.atoms, embed);
      const learner = createDqnLearner('iqn', cfg, new Float32Array(layout.size));
      learnerTaus(learner, key, step, batch);
      const taus = new Float32Array(rows);
      taus.set(learner.taus);
      taus.set(learner.targetTaus, batch * nTau);
      const cos = new Float32Array(rows * embed);
      const c = new Float32Array(embed);
      for (let r = 0; r < rows; r++) {
        iqnCosines(taus[r], c, embed);
        cos.set(c, r * embed);
      }
      return { taus, cos };
    },
    actual: (backend) =>
      withBuffers(backend, async (make) => {
        const state = make(Uint32Array.of(9, 9, (step - slot) >>> 0, 9), 'state');
        const taus = make(new Float32Array(pad.tau + rows).fill(Number.NaN), 'taus');
        const acts = make(new Float32Array(pad.cos + rows * embed).fill(Number.NaN), 'acts');
        backend.run([
          iqnTausDispatch({
            state,
            taus,
            acts,
            batch,
            nTau,
            embed,
            stateAt: 2,
            stepSlot: slot,
            key,
            tauOff: pad.tau,
            cosOff: pad.cos,
          }),
        ]);
        return {
          taus: new Float32Array(await backend.download(taus, 4 * pad.tau, 4 * rows)),
          cos: new Float32Array(await backend.download(acts, 4 * pad.cos, 4 * rows * embed)),
        };
      }),
  };
}

/**
 * iqn_mix forward or backward on `batch` trunk rows of `width` floats and `nTau` embedding rows
 * each (leaky trunk, relu embedding as the dueling IQN layout; some trunk and embedding values
 * <= 0 so both derivatives are exercised).
 */
function mixCase(backward: boolean, batch: number, nTau: number, width: number): ParityCase {
  const rows = batch * nTau;
  const f = Math.fround;
  const slope = f(LEAKY_SLOPE);
  const at = { trunk: 3, embed: 3 + batch * width + 2, out: 3 + batch * width + 2 + rows * width + 1 };
  const dAt = { dh: 4, dTrunk: 4 + rows * width + 3, dEmbed: 4 + rows * width + 3 + batch * width + 2 };
  const data = () => {
    const trunk = floats(1, batch * width, -1, 2);
    const embed = floats(2, rows * width, -0.5, 2).map((x) => Math.max(x, 0));
    return { trunk, embed, dh: floats(3, rows * width, -1, 1) };
  };
  return {
    name: `iqn_mix ${backward ? 'backward' : 'forward'} ${batch} x ${nTau} taus x ${width}`,
    kernel: 'iqn_mix',
    tolerance: backward ? { kind: 'close', atol: 1e-7, rtol: 1e-5 } : { kind: 'exact' },
    expected: (): Outputs => {
      const { trunk, embed, dh } = data();
      if (!backward) {
        const h = new Float32Array(rows * width);
        for (let k = 0; k < rows; k++)
          for (let j = 0; j < width; j++)
            h[k * width + j] = f(trunk[Math.floor(k / nTau) * width + j] * embed[k * width + j]);
        return { h };
      }
      // dueling.ts: d trunk_b = sum_t dh * e (t ascending), d e = dh * trunk_b; backwardMlp then
      // seeds each layer's delta with its activation's derivative (leaky trunk, relu tau_embed).
      const dTrunk = new Float32Array(batch * width);
      const dEmbed = new Float32Array(rows * width);
      for (let b = 0; b < batch; b++) {
        for (let j = 0; j < width; j++) {
          const hv = trunk[b * width + j];
          let s = 0;
          for (let t = 0; t < nTau; t++) {
            const k = (b * nTau + t) * width + j;
            s = f(s + f(dh[k] * embed[k]));
            dEmbed[k] = embed[k] > 0 ? f(dh[k] * hv) : 0;
          }
          dTrunk[b * width + j] = hv > 0 ? s : f(s * slope);
        }
      }
      return { dTrunk, dEmbed };
    },
    actual: (backend) =>
      withBuffers(backend, async (make): Promise<Outputs> => {
        const { trunk, embed, dh } = data();
        const actsHost = new Float32Array(at.out + rows * width + 2).fill(Number.NaN);
        actsHost.set(trunk, at.trunk);
        actsHost.set(embed, at.embed);
        const deltasHost = new Float32Array(dAt.dEmbed + rows * width + 2).fill(Number.NaN);
        deltasHost.set(dh, dAt.dh);
        const acts = make(actsHost, 'acts');
        const deltas = make(deltasHost, 'deltas');
        const shape = { acts, deltas, batch, nTau, width, trunkOff: at.trunk, embedOff: at.embed };
        if (!backward) {
          backend.run([iqnMixDispatch({ ...shape, outOff: at.out })]);
          return { h: new Float32Array(await backend.download(acts, 4 * at.out, 4 * rows * width)) };
        }
        backend.run([
          iqnMixBackwardDispatch({
            ...shape,
            dOff: dAt.dh,
            dTrunkOff: dAt.dTrunk,
            dEmbedOff: dAt.dEmbed,
            trunkAct: 'leaky',
            embedAct: 'relu',
          }),
        ]);
        return {
          dTrunk: new Float32Array(await backend.download(deltas, 4 * dAt.dTrunk, 4 * batch * width)),
          dEmbed: new Float32Array(await backend.download(deltas, 4 * dAt.dEmbed, 4 * rows * width)),
        };
      }),
  };
}

/** The IQN kernels' parity cases, in a stable order. */
export function iqnParityCases(): ParityCase[] {
  return [
    tausCase(5, 6, 64, 0),
    tausCase(3, 64, 16, 4_000_000_007),
    mixCase(false, 7, 5, 256),
    mixCase(true, 7, 5, 256),
    mixCase(true, 3, 64, 40),
  ];
}
