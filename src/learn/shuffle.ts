/** The minibatch shuffle, now in src/rng/shuffle.ts (beside Philox, below the kernels that use it). */
export * from '../rng/shuffle.js';
