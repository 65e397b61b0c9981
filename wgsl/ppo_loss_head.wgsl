// The PPO loss head's shared code (included by ppo_loss.wgsl and, in its loss mode,
// mlp_delta_chain.wgsl): the workgroup trees, the minibatch's advantage statistics and one
// sample's loss head by a team of LOSS_TEAM = 32 invocations, so both kernels give the same bits
// per sample. The including kernel defines THREADS (256: 8 teams), the Uniforms with ppo_loss's
// loss fields, and the bindings acts, mb and deltas; LOSS_PARTS is a spec constant of both.
// Every function has barriers: the whole workgroup calls it, in uniform control flow.

const LOSS_TEAM = 32u;

var<workgroup> red: array<f32, THREADS>;

fn block_sum(v: f32, tid: u32) -> f32 {
  red[tid] = v;
  workgroupBarrier();
  for (var s = u32(THREADS) / 2u; s > 0u; s = s >> 1u) {
    if (tid < s) {
      red[tid] = red[tid] + red[tid + s];
    }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}

// Team trees over the LOSS_TEAM lanes of team `team` (max when `take_max`, else sum).
fn team_reduce(v: f32, lane: u32, team: u32, take_max: bool) -> f32 {
  let at = team * LOSS_TEAM + lane;
  red[at] = v;
  workgroupBarrier();
  for (var s = LOSS_TEAM / 2u; s > 0u; s = s >> 1u) {
    if (lane < s) {
      if (take_max) {
        red[at] = max(red[at], red[at + s]);
      } else {
        red[at] = red[at] + red[at + s];
      }
    }
    workgroupBarrier();
  }
  let total = red[team * LOSS_TEAM];
  workgroupBarrier();
  return total;
}

// The minibatch's advantage (mean, 1 / (std + 1e-8)) (unbiased std, 0 for one sample), or (0, 1)
// without normalize; invocation tid adds advantages tid, tid + THREADS, ...
fn advantage_stats(tid: u32) -> vec2<f32> {
  let n = u.batch;
  var mean = 0.0;
  var scale = 1.0;
  if (u.normalize != 0u) {
    var s = 0.0;
    for (var b = tid; b < n; b += THREADS) {
      s = s + mb[2u * n + b];
    }
    mean = block_sum(s, tid) / f32(n);
    var q = 0.0;
    for (var b = tid; b < n; b += THREADS) {
      let d = mb[2u * n + b] - mean;
      q = q + d * d;
    }
    let ss = block_sum(q, tid);
    var sd = 0.0;
    if (n > 1u) {
      sd = sqrt(ss / f32(n - 1u));
    }
    scale = 1.0 / (sd + 1e-8);
  }
  return vec2<f32>(mean, scale);
}

// The loss head of sample b by team `team` (lanes split the logits): writes dLogits to
// deltas[dLogitsOff + b nActions + k] and dValue to deltas[dValueOff + b]; lane 0 adds the
// sample's LOSS_PARTS parts to `sums`. Every team calls it (an invalid sample only joins the trees).
fn loss_sample(
  b: u32,
  valid: bool,
  lane: u32,
  team: u32,
  stats: vec2<f32>,
  sums: ptr<function, array<f32, LOSS_PARTS>>,
) {
  let n = u.batch;
  let nf = f32(n);
  let na = u.nActions;
  let mean = stats.x;
  let scale = stats.y;
  let base = u.logitsOff + b * na;
  var mx = -3.4028234e38;  // -FLT_MAX: below every finite logit
  if (valid) {
    for (var k = lane; k < na; k += LOSS_TEAM) {
      mx = max(mx, acts[base + k]);
    }
  }
  mx = team_reduce(mx, lane, team, true);
  var se = 0.0;
  if (valid) {
    for (var k = lane; k < na; k += LOSS_TEAM) {
      se = se + exp(acts[base + k] - mx);
    }
  }
  let lse = mx + log(team_reduce(se, lane, team, false));
  var h = 0.0;
  if (valid) {
    for (var k = lane; k < na; k += LOSS_TEAM) {
      let lp = acts[base + k] - lse;
      h = h - exp(lp) * lp;
    }
  }
  h = team_reduce(h, lane, team, false);
  if (valid) {
    let action = min(u32(max(mb[b], 0.0)), na - 1u);
    let log_ratio = acts[base + action] - lse - mb[n + b];
    let ratio = exp(log_ratio);
    let a = (mb[2u * n + b] - mean) * scale;
    let unclipped = -a * ratio;
    let clipped_term = -a * clamp(ratio, 1.0 - u.clip, 1.0 + u.clip);
    var d_new_lp = 0.0;
    if (unclipped >= clipped_term) {
      d_new_lp = -a * ratio / nf;
    }
    for (var k = lane; k < na; k += LOSS_TEAM) {
      let lp = acts[base + k] - lse;
      let p = exp(lp);
      let onehot = select(0.0, 1.0, k == action);
      deltas[u.dLogitsOff + b * na + k] = d_new_lp * (onehot - p) + u.entropyCoef * p * (lp + h) / nf;
    }
    if (lane == 0u) {
      let err = acts[u.valuesOff + b] - mb[3u * n + b];
      deltas[u.dValueOff + b] = u.valueCoef * err / nf;
      (*sums)[0] = (*sums)[0] + max(unclipped, clipped_term);
      (*sums)[1] = (*sums)[1] + 0.5 * err * err;
      (*sums)[2] = (*sums)[2] + h;
      (*sums)[3] = (*sums)[3] + (ratio - 1.0 - log_ratio);
      (*sums)[4] = (*sums)[4] + select(0.0, 1.0, abs(ratio - 1.0) > u.clip);
    }
  }
}
