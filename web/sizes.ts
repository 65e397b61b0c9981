/**
 * The run the page proposes for a device: a hardware adapter gets a rollout big enough to keep it
 * busy; a software adapter (SwiftShader, lavapipe, WARP: the GPU emulated on the CPU) and the CPU
 * reference get one that finishes an epoch in seconds. The user may change the numbers.
 */
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
