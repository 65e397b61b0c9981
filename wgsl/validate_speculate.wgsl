// validate_dqn's speculative rounds (u.mode 1 and 2; src/kernels/validate_dqn.ts): a snippet of
// validate_dqn.wgsl, kept in its build with SPECULATE 1 (the speculation's launches) and out of
// the sequential one. It uses validate_dqn's net code (greedy, load_state) and workgroup arrays.
//
// A round is a `guess` launch (u.window workgroups) then a `roll` launch (one workgroup). The roll
// walks the simulator over the next u.window steps from the committed episode with guessed
// actions, keeping the episode before each step (env_f / env_i episode 2 + s: SNAP) and the step's
// trace (out_f at slot_base(), SLOT_F floats a step); guess runs the net on each kept state (one
// workgroup a state, the sequential loop's code, so the same action for the same state). The next
// roll commits the steps whose guessed action the net confirmed, up to the first it did not; that
// step's state came from confirmed actions, so the net's action there is exact and becomes the
// next window's first guess. Every committed step is stepped by the roll's loop, the trace is the
// sequential loop's bit for bit. Guesses: the net's actions of the last window from its first miss
// on, then the previous backtest's actions still in the trace.
const MODE_GUESS = 1u;
const MODE_ROLL = 2u;
const SNAP = 2u;
const SLOT_F = 4u;
// env_i past the stop flag (env_i[ENV_I]): the committed steps, the rolled steps of the window,
// the windows rolled so far.
const H_STEPS = ENV_I + 1u;
const H_COUNT = ENV_I + 2u;
const H_ROUNDS = ENV_I + 3u;
const_assert ENV_I >= 4;

var<workgroup> count_s: u32;
var<workgroup> commit_s: u32;
var<workgroup> base_s: u32;

// The window's trace past the net's scratch (validateDqnScratchFloats) in out_f.
fn slot_base() -> u32 {
  return sb + NET_Q_SIZE + select(0u, IQN_TAUS * S1_OUT, HEAD == HEAD_IQN);
}

// The guessed actions, then the net's, past the trace in out_i.
fn guess_at(s: u32) -> u32 {
  return OUT_I_STRIDE * u.steps + s;
}

fn acts_at(s: u32) -> u32 {
  return OUT_I_STRIDE * u.steps + u.window + s;
}

// Workgroup s: the net's action on the kept state of step s of the window, if one was rolled.
fn spec_guess(s: u32, lid: u32) {
  if (lid == 0u) {
    count_s = u32(env_i[H_COUNT]);
  }
  if (s >= workgroupUniformLoad(&count_s)) {
    return;
  }
  var ep: Episode;
  if (lid == 0u) {
    ep = load_episode(SNAP + s);
  }
  load_state(ep, lid);
  let a = greedy(lid);
  if (lid == 0u) {
    out_i[acts_at(s)] = a;
  }
}

// The roll: commit the last window's confirmed steps, then roll the next window (invocation 0;
// every invocation copies the confirmed steps' trace). u.stepBegin 0: the backtest's first roll
// (the episode starts flat, the net is transposed, nothing to commit).
fn spec_roll(lid: u32) {
  let steps = u.steps;
  let first = u.stepBegin == 0u;
  if (first) {
    transpose_net(lid);
    if (HEAD == HEAD_IQN) {
      iqn_phi(lid);
    }
  }
  var ep: Episode;
  var l = 0u;
  var n = 0u;
  var miss = 0u;
  if (lid == 0u) {
    commit_s = 0u;
    base_s = 0u;
    if (first) {
      start_episode(0u, &ep, u.splitStart);
      stop_s = 0;
    } else {
      stop_s = env_i[ENV_I];
      l = u32(env_i[H_STEPS]);
      n = u32(env_i[H_COUNT]);
      let sf = slot_base();
      while (miss < n && out_i[acts_at(miss)] == out_i[guess_at(miss)] && out_f[sf + SLOT_F * miss + 3u] == 0.0) {
        miss++;
      }
      base_s = l;
      if (n == 0u) {
        ep = load_episode(0u);
      } else if (miss < n && out_i[acts_at(miss)] == out_i[guess_at(miss)]) {
        // Confirmed, and the account collapsed in it: the backtest ends there.
        commit_s = miss + 1u;
        ep = load_episode(SNAP + miss + 1u);
        stop_s = 1;
        l += miss + 1u;
      } else {
        // Every step before the first miss (all n when none). The miss's state came from confirmed
        // actions, so the net's action there is exact: it is the next window's first guess, and
        // the roll steps it with the code that steps every other one.
        commit_s = miss;
        ep = load_episode(SNAP + miss);
        l += miss;
      }
    }
  }
  let commit = workgroupUniformLoad(&commit_s);
  let l0 = workgroupUniformLoad(&base_s);
  let sf = slot_base();
  for (var s = lid; s < commit; s += WG_X) {
    out_f[OUT_F_VALUES * steps + l0 + s] = out_f[sf + SLOT_F * s];
    out_f[OUT_F_EXPOSURE * steps + l0 + s] = out_f[sf + SLOT_F * s + 1u];
    out_f[OUT_F_TRADED * steps + l0 + s] = out_f[sf + SLOT_F * s + 2u];
    out_i[OUT_I_ACTIONS * steps + l0 + s] = out_i[guess_at(s)];
  }
  storageBarrier();
  workgroupBarrier();
  if (lid == 0u) {
    var count = 0u;
    if (stop_s == 0 && l < steps) {
      // Roll the next window. Guess: the net's action of the last window from its first miss on,
      // else the previous backtest's (a valid action: the trace starts zeroed).
      var e2 = ep;
      loop {
        if (count >= u.window || l + count >= steps) {
          break;
        }
        store_episode(SNAP + count, e2);
        var a = out_i[OUT_I_ACTIONS * steps + l + count];
        let k = miss + count;
        if (k < n) {
          a = out_i[acts_at(k)];
        }
        if (a < 0 || a >= i32(NUM_ACTIONS)) {
          a = 0;
        }
        out_i[guess_at(count)] = a;
        let r = validate_step(&e2, a);
        out_f[sf + SLOT_F * count] = r.value;
        out_f[sf + SLOT_F * count + 1u] = r.exposure;
        out_f[sf + SLOT_F * count + 2u] = r.traded;
        out_f[sf + SLOT_F * count + 3u] = select(0.0, 1.0, r.collapsed);
        count++;
        if (r.collapsed) {
          break;
        }
      }
      store_episode(SNAP + count, e2);
    }
    // After a collapse the account stays where it ended (the sequential loop's close); else the
    // episode goes back for the next round.
    if (stop_s != 0) {
      validate_close(ep, l, steps);
    } else {
      store_episode(0u, ep);
      env_i[ENV_I] = stop_s;
    }
    env_i[H_STEPS] = i32(l);
    env_i[H_COUNT] = i32(count);
    env_i[H_ROUNDS] = select(env_i[H_ROUNDS], 0, first) + select(0, 1, count > 0u);
  }
}
