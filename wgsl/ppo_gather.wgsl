// ppo_gather: minibatch `minibatch` of update epoch `epochSlot` from the rollout, in the order of
// the device shuffle: sample j < batch is rollout row
//   s = shuffle_index(minibatch * batch + j, count, sched[0] + epochSlot, key)
// Its state goes to acts[j * stateDim ..] (the networks' input rows) and its action (as f32,
// exact), old log-prob, advantage and return to mb[j], mb[batch + j], mb[2 batch + j], mb[3 batch + j].
// Bindings (declared by the preamble generated from src/kernels/ppo_gather.ts):
//   rolloutF: array<f32>, read: states rows at statesOff, log-probs at logpOff, advantages at
//             advOff, returns at retOff (element offsets)
//   rolloutI: array<i32>, read: actions at actOff
//   sched: array<u32>, read: sched[0] = first shuffle epoch of this update
//   acts: array<f32>, read_write: rows 0..batch of stateDim floats written
//   mb: array<f32>, read_write: 4 * batch floats written
//   u: Uniforms { count, batch, minibatch, epochSlot, key0, key1, stateDim, statesOff, logpOff,
//                 advOff, retOff, actOff, rows }
// Workgroup: WG_X threads take u.rows <= WG_X samples (WebGPU dispatches 4, as CUDA: a 512-sample
// minibatch is 128 workgroups): threads lid < rows each compute a sample's row into workgroup
// memory, then the workgroup copies the rows' states together (neighbouring threads, neighbouring
// floats), COPY_BATCH loads in flight per thread before their stores (a plain load-then-store loop
// waits out one memory latency per float); 4 rows of 54 floats are one round, 64 rows took 7.
// Exact: integer shuffle and plain copies.
//!include shuffle.wgsl

var<workgroup> rows: array<u32, WG_X>;
const COPY_BATCH = 8u;

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn ppo_gather(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let per = min(u.rows, u32(WG_X));
  let b0 = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * per;
  let j = b0 + lid;
  if (lid < per && j < u.batch) {
    let s = shuffle_index(u.minibatch * u.batch + j, u.count, sched[0] + u.epochSlot, SHUFFLE_STREAM,
                          vec2<u32>(u.key0, u.key1));
    rows[lid] = s;
    mb[j] = f32(rolloutI[u.actOff + s]);
    mb[u.batch + j] = rolloutF[u.logpOff + s];
    mb[2u * u.batch + j] = rolloutF[u.advOff + s];
    mb[3u * u.batch + j] = rolloutF[u.retOff + s];
  }
  workgroupBarrier();
  let n = min(per, u.batch - min(b0, u.batch));
  let total = n * u.stateDim;
  for (var e0 = lid; e0 < total; e0 += COPY_BATCH * WG_X) {
    var v: array<f32, COPY_BATCH>;
    for (var q = 0u; q < COPY_BATCH; q++) {
      let e = e0 + q * WG_X;
      if (e < total) {
        v[q] = rolloutF[u.statesOff + rows[e / u.stateDim] * u.stateDim + e % u.stateDim];
      }
    }
    for (var q = 0u; q < COPY_BATCH; q++) {
      let e = e0 + q * WG_X;
      if (e < total) {
        acts[b0 * u.stateDim + e] = v[q];
      }
    }
  }
}
