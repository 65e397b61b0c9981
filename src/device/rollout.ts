/**
 * PPO rollouts as the device learner reads them (DevicePpoRollout): the collector's output
 * buffers described by their PPO_OUTPUT sections, or a synthetic rollout uploaded for tests and
 * benchmarks. The synthetic one is deterministic (Philox, stream Test) and shaped like real
 * data: states in [-2, 2), uniform actions, old log-probs around a uniform policy's -ln(45) with
 * enough spread that some ratios leave the clip range, advantages and returns in [-1, 1).
 */
import type { Backend, DeviceBuffer } from '../backend/types.js';
import { PPO_OUTPUT } from '../kernels/collect_ppo.js';
import type { RolloutSections } from '../kernels/ppo_gather.js';
import type { PpoRollout } from '../learn/ppo_update.js';
import { philox4x32, u32ToUnitFloat } from '../rng/philox.js';
import { Stream } from '../rng/streams.js';
import type { DeviceCuriosityRollout } from './curiosity.js';
import type { DevicePpoRollout } from './learn.js';

function section(name: string): { offset: number; type: string } {
  const s = PPO_OUTPUT.sections.find((x) => x.name === name);
  if (!s) throw new Error(`collect_ppo output has no section ${name}`);
  return s;
}

/** The learner's view of collect_ppo's out_f / out_i buffers for N * L = count samples. */
export function collectorRollout(outF: DeviceBuffer, outI: DeviceBuffer, count: number): DevicePpoRollout {
  const at = (name: string) => section(name).offset * count;
  const sections: RolloutSections = {
    states: at('states'),
    logProbs: at('logProbs'),
    advantages: at('advantages'),
    returns: at('returns'),
    actions: at('actions'),
  };
  return { f: outF, i: outI, count, sections };
}

/** The curiosity trainer's view of the same buffers (N episodes of L steps, episode-major rows). */
export function collectorCuriosityRollout(
  outF: DeviceBuffer,
  outI: DeviceBuffer,
  episodes: number,
  steps: number,
): DeviceCuriosityRollout {
  const count = episodes * steps;
  const at = (name: string) => section(name).offset * count;
  return {
    f: outF,
    i: outI,
    count,
    steps,
    sections: {
      states: at('states'),
      actions: at('actions'),
      dones: at('dones'),
      truncateds: at('truncateds'),
    },
  };
}

/** Host copies of a synthetic rollout (ppoUpdateReference's input). */
export function syntheticPpoRollout(count: number, stateDim: number, nActions: number, id = 0): PpoRollout {
  const words = new Uint32Array(4);
  const draw = (field: number, i: number) => {
    philox4x32(Stream.Test, 1000 + 8 * id + field, i >>> 2, 0, 0x5eed, 0, words);
    return u32ToUnitFloat(words[i & 3]);
  };
  const f32 = (n: number, field: number, lo: number, hi: number) =>
    Float32Array.from({ length: n }, (_, i) => lo + (hi - lo) * draw(field, i));
  const uniformLogP = -Math.log(nActions);
  return {
    states: f32(count * stateDim, 0, -2, 2),
    actions: Int32Array.from({ length: count }, (_, i) => Math.floor(nActions * draw(1, i))),
    logProbs: f32(count, 2, uniformLogP - 0.3, uniformLogP + 0.3),
    advantages: f32(count, 3, -1, 1),
    returns: f32(count, 4, -1, 1),
    count,
  };
}

/** Uploads a host rollout into two fresh buffers (f32: states, log-probs, advantages, returns; i32: actions). */
export function uploadPpoRollout(backend: Backend, r: PpoRollout, stateDim: number): DevicePpoRollout {
  const n = r.count;
  const f = backend.createBuffer(4 * n * (stateDim + 3), 'rollout.f');
  const i = backend.createBuffer(4 * Math.max(1, n), 'rollout.i');
  const sections: RolloutSections = {
    states: 0,
    logProbs: n * stateDim,
    advantages: n * (stateDim + 1),
    returns: n * (stateDim + 2),
    actions: 0,
  };
  backend.upload(f, Float32Array.from(r.states.subarray(0, n * stateDim)));
  backend.upload(f, Float32Array.from(r.logProbs), 4 * sections.logProbs);
  backend.upload(f, Float32Array.from(r.advantages), 4 * sections.advantages);
  backend.upload(f, Float32Array.from(r.returns), 4 * sections.returns);
  backend.upload(i, Int32Array.from(r.actions));
  return { f, i, count: n, sections };
}
