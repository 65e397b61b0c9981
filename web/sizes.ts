/**
 * The run the page proposes for a device: a hardware adapter gets a rollout big enough to keep it
 * busy; a software adapter (SwiftShader, lavapipe, WARP: the GPU emulated on the CPU) and the CPU
 * reference get one that finishes an epoch in seconds. The user may change the numbers.
 */
import type { Algo } from '../src/config.js';
import { REPLAY_F } from '../src/learn/replay.js';

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

/**
 * The backend an algorithm trains on in the page: the device's, except IQN, which runs on the CPU:
 * the page does not size IQN's device learner yet (its activations grow with batch x dqn.iqnTau).
 */
export function backendFor(algo: Algo, device: 'webgpu' | 'cpu'): 'webgpu' | 'cpu' {
  return algo === 'iqn' ? 'cpu' : device;
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
 * default), about two replayed samples per collected step, and a replay of up to 16 rollouts that
 * fits PAGE_REPLAY_BYTES and the device's largest storage buffer (`limits`: maxBufferSize and
 * maxStorageBufferBindingSize where known; empty on the CPU).
 */
export function dqnSizesFor(
  s: { episodes: number; steps: number; minibatch: number },
  defaults: { batch: number; replayCapacity: number },
  limits: Record<string, number>,
): DqnSizes {
  const rollout = s.episodes * s.steps;
  const batch = Math.max(1, Math.min(defaults.batch, s.minibatch, rollout));
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
