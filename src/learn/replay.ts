/**
 * The DQN replay buffer (the TS reference of the device's replay insert): a ring of `capacity`
 * n-step transitions in two flat buffers, laid out as the device holds them.
 *
 *   f  `[capacity, REPLAY_F]` f32 rows: state (54) | bootstrap state (54) | n-step return | discount
 *   i  `[capacity]` i32: the action taken in `state`
 *   head (the next slot written) and size (filled slots, <= capacity): two u32 counters
 *
 * Insert of one collection launch (`collectDqn`'s episode-major `[N, L]` rollout): the row of slot
 * e, step l goes to ring position (head + e * L + l) % capacity, then head advances by N * L
 * (a launch larger than the ring keeps its last `capacity` rows, as sequential writes would).
 * Its n-step return folds the slot's following steps of the same launch:
 *   m = steps folded: stop after k = n steps, at the launch's last step, or after a step that
 *       ended the episode (done: no bootstrap) or truncated it (bootstrapped from its next state);
 *   G = sum_{k<m} gamma^k r_{l+k}, evaluated as g = 1; G = 0; per k: G = f32(G + f32(g * r)),
 *       g = f32(g * gamma);
 *   discount = done at step l + m - 1 ? 0 : g (= gamma^m in f32);  bootstrap state = nextStates[l + m - 1].
 * Windows stop at the launch's end rather than waiting for the next launch: the last n - 1 steps
 * of a slot get shorter (still unbiased) returns, and a row never depends on a later launch, so
 * one device thread per row can fold it. The target is G + discount * Q_target(bootstrap state).
 */
import type { DqnRollout } from '../collect/rollout.js';
import { STATE_DIM } from '../nets/layout.js';

const f = Math.fround;

/** Floats per replay row. */
export const REPLAY_F = 2 * STATE_DIM + 2;
/** Offsets inside a row. */
export const ReplayF = {
  State: 0,
  Next: STATE_DIM,
  Return: 2 * STATE_DIM,
  Discount: 2 * STATE_DIM + 1,
} as const;

export interface Replay {
  capacity: number;
  f: Float32Array;
  i: Int32Array;
  /** Next ring position written. */
  head: number;
  /** Filled rows. */
  size: number;
}

/** Bytes one replay row takes (f32 row + i32 action). */
export const REPLAY_ROW_BYTES = REPLAY_F * 4 + 4;

export function createReplay(capacity: number): Replay {
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new Error(`replay: capacity ${capacity} must be an integer >= 1`);
  return {
    capacity,
    f: new Float32Array(capacity * REPLAY_F),
    i: new Int32Array(capacity),
    head: 0,
    size: 0,
  };
}

/**
 * Folds and inserts one launch; returns the first ring position written (rows run from there,
 * modulo capacity, in rollout order) and the count, which PER needs to set their priorities.
 */
export function insertRollout(
  replay: Replay,
  rollout: DqnRollout,
  gamma: number,
  nStep: number,
): { first: number; count: number } {
  const { n, steps: L } = rollout;
  const total = n * L;
  const C = replay.capacity;
  const g32 = f(gamma);
  const skip = Math.max(0, total - C);
  for (let idx = skip; idx < total; idx++) {
    const e = Math.floor(idx / L);
    const l = idx - e * L;
    const row = (replay.head + idx) % C;
    let ret = 0;
    let disc = 1;
    let last = idx;
    for (let k = 0; k < nStep && l + k < L; k++) {
      const t = e * L + l + k;
      ret = f(ret + f(disc * rollout.rewards[t]));
      disc = f(disc * g32);
      last = t;
      if (rollout.dones[t] || rollout.truncateds[t]) break;
    }
    const o = row * REPLAY_F;
    replay.f.set(rollout.states.subarray(idx * STATE_DIM, (idx + 1) * STATE_DIM), o + ReplayF.State);
    replay.f.set(rollout.nextStates.subarray(last * STATE_DIM, (last + 1) * STATE_DIM), o + ReplayF.Next);
    replay.f[o + ReplayF.Return] = ret;
    replay.f[o + ReplayF.Discount] = rollout.dones[last] ? 0 : disc;
    replay.i[row] = rollout.actions[idx];
  }
  const first = (replay.head + skip) % C;
  replay.head = (replay.head + total) % C;
  replay.size = Math.min(C, replay.size + total);
  return { first, count: total - skip };
}
