/**
 * curiosity_loss: the curiosity forward model's MSE and its gradient w.r.t. the predictions
 * (src/learn/curiosity.ts): with rows = min(rowCount[0], batch) valid rows of `outDim` floats,
 *   mse = mean over the rows x outDim of (pred - target)^2        -> stats[statAt] (overwritten)
 *   deltas[dPredOff + e] = 2 (pred - target) / (rows * outDim)     for e < rows * outDim, 0 after
 *                                                                   (up to batch * outDim)
 * pred = acts[predOff + e] (the model's linear output layer), target = targets[e]. The row count
 * comes from a device buffer, so the batch the device assembled is used without reading it back;
 * rows = 0 gives mse 0 and zero gradients.
 *
 * Workgroup: one, of 256 threads, each taking elements tid, tid + 256, ...; the sum is a tree
 * reduction in a fixed order. Numerics: f32 (the TS reference of curiosity.ts sums in f64:
 * tolerance).
 */

import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const curiosityLossSpec: KernelSpec = {
  name: 'curiosity_loss',
  bindings: [
    { name: 'acts', type: 'f32', access: 'read' },
    { name: 'targets', type: 'f32', access: 'read' },
    { name: 'rowCount', type: 'u32', access: 'read' },
    { name: 'deltas', type: 'f32', access: 'read_write' },
    { name: 'stats', type: 'f32', access: 'read_write' },
  ],
  uniforms: [
    { name: 'batch', type: 'u32' },
    { name: 'outDim', type: 'u32' },
    { name: 'predOff', type: 'u32' },
    { name: 'dPredOff', type: 'u32' },
    { name: 'statAt', type: 'u32' },
  ],
  workgroupSize: [256, 1, 1],
};

export interface CuriosityLossArgs {
  acts: DeviceBuffer;
  targets: DeviceBuffer;
  rowCount: DeviceBuffer;
  deltas: DeviceBuffer;
  stats: DeviceBuffer;
  batch: number;
  outDim: number;
  predOff: number;
  dPredOff: number;
  statAt: number;
}

export function curiosityLossDispatch(a: CuriosityLossArgs): Dispatch {
  return {
    kernel: curiosityLossSpec,
    buffers: [a.acts, a.targets, a.rowCount, a.deltas, a.stats],
    uniforms: {
      batch: a.batch,
      outDim: a.outDim,
      predOff: a.predOff,
      dPredOff: a.dPredOff,
      statAt: a.statAt,
    },
    groups: [1, 1, 1],
  };
}

function curiosityLossReference(buffers: TypedArray[], u: Record<string, number>): void {
  const [acts, targets, rowCount, deltas, stats] = buffers;
  const n = Math.min(rowCount[0], u.batch) * u.outDim;
  let sum = 0;
  for (let e = 0; e < u.batch * u.outDim; e++) {
    if (e >= n) {
      deltas[u.dPredOff + e] = 0;
      continue;
    }
    const err = acts[u.predOff + e] - targets[e];
    sum += err * err;
    deltas[u.dPredOff + e] = (2 * err) / n;
  }
  stats[u.statAt] = n === 0 ? 0 : sum / n;
}

export const curiosityLoss: Kernel = { spec: curiosityLossSpec, reference: curiosityLossReference };
