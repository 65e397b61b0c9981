// adam_step: global gradient-norm clip and one Adam / AdamW step over a flat parameter buffer
// (src/learn/optim.ts, PyTorch semantics):
//   norm = sqrt(sum partials[0..nPartials)); coef = maxNorm / (norm + 1e-6), applied when clip != 0
//   and coef < 1; stats[normAt] += norm (clip != 0, workgroup 0 only)
//   p = p decay (if decay != 1); m = m + (1 - b1)(g - m); v = v b2 + (1 - b2) g^2;
//   p = p - stepSize (m / (sqrt(v) / bc2Sqrt + eps)), stepSize, bc2Sqrt = bits of sched[schedAt..+1]
// Bindings (declared by the preamble generated from src/kernels/adam_step.ts):
//   params: array<f32>, read_write [n]; grads: array<f32>, read [n]
//   moments: array<f32>, read_write: m [n] then v [n]
//   partials: array<f32>, read: per-tile sums of squares of the gradients (mlp_backward)
//   sched: array<u32>, read: f32 bits of each step's bias corrections
//   stats: array<f32>, read_write: the norm is added at normAt
//   u: Uniforms { n, nPartials, clip, maxNorm, oneMinusB1, beta2, oneMinusB2, eps, decay, schedAt, normAt,
//                 gateAt, lossAt, lossGroups, lossCount } (gateAt != 0xffffffff and sched[gateAt] == 0:
//                 the step is skipped; lossGroups > 0: workgroup 0 adds column sums of the loss head's
//                 lossGroups x LOSS_PARTS partials at lossAt, divided by lossCount, to stats[0..LOSS_PARTS))
// Workgroup: WG_X threads (a power of two), ITEMS elements each, strided by WG_X. Every workgroup
// reduces the partials itself in the same fixed tree order, so all agree on the norm.
// Numerics: f32, the reference's operation order; WGSL allows a few ulp in sqrt and division and
// may fuse multiply-adds (tolerance).

var<workgroup> red: array<f32, WG_X>;

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn adam_step(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let g = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  // Read before the reduction but acted on after it, so every barrier stays in uniform control flow.
  let skip = u.gateAt != 0xffffffffu && sched[u.gateAt] == 0u;
  var coef = 1.0;
  var scaled = false;
  if (u.clip != 0u) {
    var s = 0.0;
    for (var p = tid; p < u.nPartials; p += WG_X) {
      s = s + partials[p];
    }
    red[tid] = s;
    workgroupBarrier();
    for (var w = u32(WG_X) / 2u; w > 0u; w = w >> 1u) {
      if (tid < w) {
        red[tid] = red[tid] + red[tid + w];
      }
      workgroupBarrier();
    }
    let norm = sqrt(red[0]);
    let c = u.maxNorm / (norm + 1e-6);
    if (c < 1.0) {
      coef = c;
      scaled = true;
    }
    if (g == 0u && tid == 0u && !skip) {
      stats[u.normAt] = stats[u.normAt] + norm;
    }
  }
  if (skip) {
    return;
  }
  if (g == 0u && tid < LOSS_PARTS) {
    var sum = 0.0;
    for (var r = 0u; r < u.lossGroups; r++) {
      sum = sum + partials[u.lossAt + r * LOSS_PARTS + tid];
    }
    if (u.lossGroups > 0u) {
      stats[tid] = stats[tid] + sum / f32(u.lossCount);
    }
  }
  let step_size = bitcast<f32>(sched[u.schedAt]);
  let bc2_sqrt = bitcast<f32>(sched[u.schedAt + 1u]);
  for (var j = 0u; j < ITEMS; j++) {
    let k = (g * ITEMS + j) * WG_X + tid;
    if (k < u.n) {
      var gr = grads[k];
      if (scaled) {
        gr = gr * coef;
      }
      var p = params[k];
      if (u.decay != 1.0) {
        p = p * u.decay;
      }
      let m = moments[k] + u.oneMinusB1 * (gr - moments[k]);
      let v = moments[u.n + k] * u.beta2 + u.oneMinusB2 * (gr * gr);
      moments[k] = m;
      moments[u.n + k] = v;
      let denom = sqrt(v) / bc2_sqrt + u.eps;
      params[k] = p - step_size * (m / denom);
    }
  }
}
