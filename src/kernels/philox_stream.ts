/**
 * philox_stream: fills a buffer with Philox4x32-10 words (SPEC 7), the GPU twin of
 * src/rng/philox.ts. Word i is word (i & 3) of the block with
 * counter = (stream, base + (i >> 2), step, 0) and key = (key0, key1); `base + block` wraps
 * modulo 2^32. One thread per 4-word block. Exact: all three twins are bit-identical.
 */

import { philox4x32 } from '../rng/philox.js';
import { grid1d, groupCount, threadsPerGroup } from './grid.js';
import type { Kernel, TypedArray } from './reference.js';
import type { DeviceBuffer, Dispatch, KernelSpec } from './spec.js';

export const philoxStreamSpec: KernelSpec = {
  name: 'philox_stream',
  bindings: [{ name: 'words', type: 'u32', access: 'read_write' }],
  uniforms: [
    { name: 'n', type: 'u32' },
    { name: 'stream', type: 'u32' },
    { name: 'base', type: 'u32' },
    { name: 'step', type: 'u32' },
    { name: 'key0', type: 'u32' },
    { name: 'key1', type: 'u32' },
  ],
  workgroupSize: [64, 1, 1],
};

export interface PhiloxStreamParams {
  /** Words to write. */
  n: number;
  /** First counter word: a `Stream` id (src/rng/streams.ts). */
  stream: number;
  /** Second counter word of the first block (episode, sample or element-block index). */
  base: number;
  /** Third counter word (step or launch index). */
  step: number;
  /** Philox key: `seedToKey(seed)`. */
  key: readonly [number, number];
}

function philoxStreamReference(
  buffers: TypedArray[],
  u: Record<string, number>,
  groups: readonly [number, number, number],
): void {
  const words = buffers[0];
  const threads = groupCount(groups) * threadsPerGroup(philoxStreamSpec.workgroupSize);
  const blocks = Math.min(Math.ceil(u.n / 4), threads);
  const block = new Uint32Array(4);
  for (let b = 0; b < blocks; b++) {
    philox4x32(u.stream, (u.base + b) >>> 0, u.step, 0, u.key0, u.key1, block);
    for (let w = 0; w < 4; w++) {
      const i = 4 * b + w;
      if (i < u.n) words[i] = block[w];
    }
  }
}

export const philoxStream: Kernel = { spec: philoxStreamSpec, reference: philoxStreamReference };

/** The dispatch that writes `p.n` words into `words` (a buffer of at least 4 * n bytes). */
export function philoxStreamDispatch(words: DeviceBuffer, p: PhiloxStreamParams): Dispatch {
  const blocks = Math.ceil(p.n / 4);
  return {
    kernel: philoxStreamSpec,
    buffers: [words],
    uniforms: { n: p.n, stream: p.stream, base: p.base, step: p.step, key0: p.key[0], key1: p.key[1] },
    groups: grid1d(Math.ceil(blocks / threadsPerGroup(philoxStreamSpec.workgroupSize))),
  };
}
