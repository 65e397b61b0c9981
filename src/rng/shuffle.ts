/**
 * Minibatch shuffling without the host: a keyed bijection of [0, count) that each GPU thread
 * evaluates for its own index (no sort, no shared state), so every backend computes the same
 * permutation bit for bit from integer arithmetic alone.
 *
 * Scheme: a 4-round balanced Feistel network on 2h-bit words, h = max(1, ceil(bits(count-1) / 2)),
 * so the domain 2^(2h) is less than 4 * count (for count > 1); values that land outside
 * [0, count) are fed through again ("cycle walking"), which keeps it a bijection of [0, count)
 * and needs under 4 passes on average.
 *   round k (k = 0..3): (L, R) -> (R, L xor (F_k(R) & mask)), mask = 2^h - 1,
 *   F_k(R) = word 0 of Philox(counter = (Stream.Shuffle, epoch, R, k), key = seed),
 *   the word = L << h | R, output = L << h | R after the last round.
 * `epoch` counts update epochs over the whole run (update * updateEpochs + epoch), so no two
 * epochs of a run share a permutation. Four Feistel rounds with a pseudorandom round function
 * give a pseudorandom permutation (Luby-Rackoff); the walk adds no bias.
 * Minibatch k of an epoch holds samples perm(k * size + j), j = 0..size-1.
 */
import { philox4x32, seedToKey } from './philox.js';
import { Stream } from './streams.js';

export const SHUFFLE_ROUNDS = 4;

/** Half-word width in bits of the Feistel network for a domain of `count` indices. */
export function feistelHalfBits(count: number): number {
  const bits = count > 1 ? 32 - Math.clz32(count - 1) : 0;
  return Math.max(1, Math.ceil(bits / 2));
}

const scratch = new Uint32Array(4);

/** The image of `index` under the epoch's permutation of [0, count). */
export function shuffleIndex(index: number, count: number, epoch: number, seed: number): number {
  if (!Number.isInteger(count) || count < 1 || count > 2 ** 31) {
    throw new Error(`shuffle: count ${count} must be an integer in [1, 2^31]`);
  }
  if (!Number.isInteger(index) || index < 0 || index >= count) {
    throw new Error(`shuffle: index ${index} outside [0, ${count})`);
  }
  const [k0, k1] = seedToKey(seed);
  const h = feistelHalfBits(count);
  const mask = (1 << h) - 1;
  let x = index;
  do {
    let left = x >>> h;
    let right = x & mask;
    for (let k = 0; k < SHUFFLE_ROUNDS; k++) {
      const f = philox4x32(Stream.Shuffle, epoch, right, k, k0, k1, scratch)[0] & mask;
      const next = (left ^ f) >>> 0;
      left = right;
      right = next;
    }
    x = ((left << h) | right) >>> 0;
  } while (x >= count);
  return x;
}

/** The whole permutation: out[i] = shuffleIndex(i, count, epoch, seed). */
export function shufflePermutation(
  count: number,
  epoch: number,
  seed: number,
  out: Uint32Array = new Uint32Array(count),
): Uint32Array {
  for (let i = 0; i < count; i++) out[i] = shuffleIndex(i, count, epoch, seed);
  return out;
}
