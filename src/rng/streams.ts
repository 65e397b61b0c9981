/**
 * Stream ids: the first Philox counter word (SPEC 7: counter = (stream, index, step, 0)).
 * Every consumer of randomness has its own stream so that adding one never shifts another.
 * The WGSL and CUDA kernels use the same numbers (passed in uniforms or mirrored constants).
 */
export const Stream = {
  /** Network parameter init: counter = (stream, network id, element block, 0). */
  Init: 1,
  /** Episode start bars: counter = (stream, episode, restart count, 0). */
  EpisodeStart: 2,
  /** Epsilon-greedy and softmax sampling: counter = (stream, episode, global step, 0). */
  Action: 3,
  /** Minibatch shuffling: counter = (stream, epoch, block, 0). */
  Shuffle: 4,
  /** Prioritized replay sampling thresholds: counter = (stream, train step, block, 0). */
  Replay: 5,
  /** IQN tau samples: counter = (stream, row, train step or global step, 0). */
  Tau: 6,
  /** Random-policy baseline of the backtest: counter = (stream, 0, bar, 0). */
  Baseline: 7,
  /** Synthetic market generator: counter = (stream, bar, draw, 0). */
  Synth: 8,
  /** IQN learner taus: counter = (stream, batch row, train step, block); online taus, then target taus. */
  LearnTau: 9,
  /** Kernel tests and benchmarks. */
  Test: 15,
} as const;
