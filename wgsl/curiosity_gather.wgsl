// curiosity_gather: the curiosity model's training batch from a PPO rollout, with the CPU engine's
// rule: walk j = 0, 1, ... of the shuffle permutation of `epoch`; row idx = perm(j) is kept when
// it is not done, not truncated and idx % steps != steps - 1 (its next row is the same episode's
// next bar); kept rows fill slots r = 0, 1, ... until `batch` rows or the rollout runs out:
//   acts[r inDim + c] = states[idx][c] (c < outDim), acts[r inDim + outDim + k] = [k == category]
//   targets[r outDim + c] = states[idx + 1][c];  sched[0] = rows kept
// category: 0 for exposure index (action / 9) 0-1, 1 for 2, 2 for 3-4.
// Bindings (declared by the preamble generated from src/kernels/curiosity_gather.ts):
//   rolloutF: array<f32>, read: states rows of stateDim at statesOff
//   rolloutI: array<i32>, read: actions at actOff, dones at doneOff, truncateds at truncOff
//   acts: array<f32>, read_write: input rows [batch, inDim]; targets: array<f32>, read_write [batch, outDim]
//   sched: array<u32>, read_write: sched[0] = rows kept
//   u: Uniforms { count, steps, batch, epoch, key0, key1, stateDim, inDim, outDim, statesOff, actOff,
//                 doneOff, truncOff }
// Workgroup: one of WG_X threads (a power of two), WG_X permutation positions per round; a
// Hillis-Steele scan of the keep flags gives kept rows their slots. Exact, deterministic.
//!include shuffle.wgsl

var<workgroup> scan: array<u32, WG_X>;
var<workgroup> rows: u32;

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn curiosity_gather(@builtin(local_invocation_index) tid: u32) {
  if (tid == 0u) {
    rows = 0u;
  }
  for (var base = 0u; base < u.count; base += WG_X) {
    let j = base + tid;
    var keep = 0u;
    var idx = 0u;
    if (j < u.count) {
      idx = shuffle_index(j, u.count, u.epoch, SHUFFLE_STREAM, vec2<u32>(u.key0, u.key1));
      let ends = rolloutI[u.doneOff + idx] != 0 || rolloutI[u.truncOff + idx] != 0 || idx % u.steps == u.steps - 1u;
      keep = select(1u, 0u, ends);
    }
    scan[tid] = keep;
    workgroupBarrier();
    for (var off = 1u; off < WG_X; off = off << 1u) {
      var v = 0u;
      if (tid >= off) {
        v = scan[tid - off];
      }
      workgroupBarrier();
      scan[tid] = scan[tid] + v;
      workgroupBarrier();
    }
    let r = rows + scan[tid] - keep;
    if (keep == 1u && r < u.batch) {
      let s = u.statesOff + idx * u.stateDim;
      for (var c = 0u; c < u.outDim; c++) {
        acts[r * u.inDim + c] = rolloutF[s + c];
        targets[r * u.outDim + c] = rolloutF[s + u.stateDim + c];
      }
      let x = u32(rolloutI[u.actOff + idx]) / 9u;
      let cat = select(select(2u, 1u, x == 2u), 0u, x <= 1u);
      for (var k = 0u; k < u.inDim - u.outDim; k++) {
        acts[r * u.inDim + u.outDim + k] = select(0.0, 1.0, k == cat);
      }
    }
    workgroupBarrier();
    if (tid == 0u) {
      rows = min(u.batch, rows + scan[WG_X - 1u]);
    }
    if (workgroupUniformLoad(&rows) >= u.batch) {
      break;
    }
  }
  if (tid == 0u) {
    sched[0] = rows;
  }
}
