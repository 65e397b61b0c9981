// curiosity_loss: MSE of the curiosity forward model and its gradient w.r.t. the predictions
// (src/learn/curiosity.ts). rows = min(rowCount[0], batch), n = rows * outDim:
//   stats[statAt] = sum_{e < n} (acts[predOff + e] - targets[e])^2 / n   (0 when n = 0)
//   deltas[dPredOff + e] = 2 (pred - target) / n for e < n, 0 for n <= e < batch * outDim
// Bindings (declared by the preamble generated from src/kernels/curiosity_loss.ts):
//   acts: array<f32>, read: prediction rows at predOff; targets: array<f32>, read [batch, outDim]
//   rowCount: array<u32>, read: rowCount[0] = valid rows
//   deltas: array<f32>, read_write: output layer's delta rows at dPredOff
//   stats: array<f32>, read_write: the MSE at statAt
//   u: Uniforms { batch, outDim, predOff, dPredOff, statAt }
// Workgroup: one of WG_X threads (a power of two), elements tid, tid + WG_X, ...; the sum is a
// fixed-order tree (deterministic). Numerics: f32 (the TS reference sums in f64: tolerance).

var<workgroup> red: array<f32, WG_X>;

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn curiosity_loss(@builtin(local_invocation_index) tid: u32) {
  let total = u.batch * u.outDim;
  let n = min(rowCount[0], u.batch) * u.outDim;
  var s = 0.0;
  for (var e = tid; e < total; e += WG_X) {
    var d = 0.0;
    if (e < n) {
      let err = acts[u.predOff + e] - targets[e];
      s = s + err * err;
      d = 2.0 * err / f32(n);
    }
    deltas[u.dPredOff + e] = d;
  }
  red[tid] = s;
  workgroupBarrier();
  for (var w = u32(WG_X) / 2u; w > 0u; w = w >> 1u) {
    if (tid < w) {
      red[tid] = red[tid] + red[tid + w];
    }
    workgroupBarrier();
  }
  if (tid == 0u) {
    stats[u.statAt] = select(0.0, red[0] / f32(n), n > 0u);
  }
}
