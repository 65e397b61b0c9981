// replay_insert: one collect_dqn launch into the device replay ring and its PER leaves (the twin of
// src/kernels/replay_insert.ts, which states the contract).
// phase 0: thread i < count folds rollout row idx = skip + i's n-step return (f32, same order as
//          src/learn/replay.ts), writes ring row (head + idx) % capacity and its action, and sets
//          its leaf tree[leaves + row] = maxPriority ^ alpha (maxPriority: f32 bits in state[0]).
// phase 1: thread i < count recomputes node k = (leaves + (first + i) % capacity) >> level as
//          tree[2k] + tree[2k + 1], unless the previous thread's row has the same ancestor.
// Bindings (declared by the preamble generated from src/kernels/replay_insert.ts):
//   rolloutF: array<f32>, read: states, nextStates, rewards at statesOff, nextOff, rewardsOff
//   rolloutI: array<i32>, read: actions, dones, truncateds at actionsOff, donesOff, truncOff
//   ringF: array<f32>, read_write: [capacity, ROW_F] rows; ringI: array<i32>, read_write: actions
//   tree: array<f32>, read_write: [2 * leaves] sum tree; state: array<u32>, read: [0] maxPriority bits
// Workgroup: WG_X threads, 1-D, flat id over x and y (grid1d).

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn replay_insert(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * WG_X + lid;
  if (i >= u.count) {
    return;
  }
  let C = u.capacity;
  if (u.phase == 1u) {
    let k = (u.leaves + (u.first + i) % C) >> u.level;
    if (i > 0u && ((u.leaves + (u.first + i - 1u) % C) >> u.level) == k) {
      return;
    }
    tree[k] = tree[2u * k] + tree[2u * k + 1u];
    return;
  }
  let idx = u.skip + i;
  let L = u.steps;
  let e = idx / L;
  let l = idx - e * L;
  let row = (u.head + idx) % C;
  var ret = 0.0;
  var disc = 1.0;
  var last = idx;
  for (var k = 0u; k < u.nStep && l + k < L; k++) {
    let t = e * L + l + k;
    let term = disc * rolloutF[u.rewardsOff + t];
    ret = ret + term;
    disc = disc * u.gamma;
    last = t;
    if (rolloutI[u.donesOff + t] != 0 || rolloutI[u.truncOff + t] != 0) {
      break;
    }
  }
  let o = row * ROW_F;
  for (var c = 0u; c < STATE_DIM; c++) {
    ringF[o + c] = rolloutF[u.statesOff + idx * STATE_DIM + c];
    ringF[o + STATE_DIM + c] = rolloutF[u.nextOff + last * STATE_DIM + c];
  }
  ringF[o + 2u * STATE_DIM] = ret;
  ringF[o + 2u * STATE_DIM + 1u] = select(disc, 0.0, rolloutI[u.donesOff + last] != 0);
  ringI[row] = rolloutI[u.actionsOff + idx];
  tree[u.leaves + row] = pow(bitcast<f32>(state[0]), u.alpha);
}
