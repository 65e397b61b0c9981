/**
 * The run the page proposes for a device: a hardware adapter gets a rollout big enough to keep it
 * busy; a software adapter (SwiftShader, lavapipe, WARP: the GPU emulated on the CPU) and the CPU
 * reference get one that finishes an epoch in seconds. The user may change the numbers.
 */
import { largestLearnerBatch } from '../src/device/dqn.js';
import { REPLAY_F } from '../src/learn/replay.js';
import { duelingLayout } from '../src/nets/layout.js';

export interface RunSizes {
  epochs: number;
  episodes: number;
  steps: number;
  minibatch: number;
  updateEpochs: number;
  /** Bars of the synthetic market (its validation split is 15% of them). */
  synthBars: number;
  /** Bars an episode may last (training split bars must exceed it). */
  episodeBars: number;
}

export type DeviceClass = 'hardware' | 'software' | 'cpu';

export function sizesFor(device: DeviceClass, maxBufferSize = 0): RunSizes {
  if (device === 'hardware') {
    // 256 episodes when the adapter holds 1 GiB buffers, else 64 (the rollout scales with N x L).
    const episodes = maxBufferSize >= 2 ** 30 ? 256 : 64;
    return {
      epochs: 10,
      episodes,
      steps: 256,
      minibatch: 512,
      updateEpochs: 4,
      synthBars: 20_000,
      episodeBars: 500,
    };
  }
  return {
    epochs: 3,
    episodes: 8,
    steps: 64,
    minibatch: 128,
    updateEpochs: 1,
    synthBars: 4000,
    episodeBars: 250,
  };
}

/** Bytes of the replay ring the page allows: it lives in the tab, and in every checkpoint. */
export const PAGE_REPLAY_BYTES = 64 * 2 ** 20;

export interface DqnSizes {
  batch: number;
  stepsPerEpoch: number;
  replayCapacity: number;
}

/**
 * The DQN family's run, sized like the PPO run: a batch of at most one rollout (and the config's
 * default) whose learner activations fit the adapter's storage binding (IQN: batch x taus rows), about two replayed samples per collected step, and a replay of up to 16 rollouts that
 * fits PAGE_REPLAY_BYTES and the device's largest storage buffer (`limits`: maxBufferSize and
 * maxStorageBufferBindingSize where known; empty on the CPU).
 */
export function dqnSizesFor(
  s: { episodes: number; steps: number; minibatch: number },
  defaults: { batch: number; replayCapacity: number; atoms: number; iqnTau: number; iqnEmbed: number },
  limits: Record<string, number>,
  algo: 'dqn' | 'c51' | 'iqn' = 'dqn',
): DqnSizes {
  const rollout = s.episodes * s.steps;
  // The learner's activations (IQN: batch x taus rows) must fit one storage binding.
  const layout = duelingLayout(algo === 'dqn' ? 'plain' : algo, defaults.atoms, defaults.iqnEmbed);
  const binding = limits.maxStorageBufferBindingSize ?? Number.POSITIVE_INFINITY;
  const wanted = Math.max(1, Math.min(defaults.batch, s.minibatch, rollout));
  const batch = largestLearnerBatch(layout, wanted, defaults.iqnTau, binding);
  if (batch < 1)
    throw new Error(
      `one ${algo.toUpperCase()} sample of ${defaults.iqnTau} taus does not fit this adapter's storage binding`,
    );
  const largest = Math.min(
    PAGE_REPLAY_BYTES,
    limits.maxBufferSize ?? Number.POSITIVE_INFINITY,
    limits.maxStorageBufferBindingSize ?? Number.POSITIVE_INFINITY,
  );
  const rows = Math.floor(largest / (4 * REPLAY_F));
  return {
    batch,
    stepsPerEpoch: Math.ceil((2 * rollout) / batch),
    replayCapacity: Math.max(batch, Math.min(defaults.replayCapacity, 16 * rollout, rows)),
  };
}
