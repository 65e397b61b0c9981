// dense_forward: y[b, o] = act(bias[o] + sum_i W[o, i] * x[b, i]) for a batch of rows, W and bias
// read from a network's flat parameter buffer (src/nets/layout.ts).
// Bindings (declared by the preamble generated from src/kernels/dense_forward.ts):
//   params: array<f32>, read: W [outDim, inDim] row-major at wOffset, bias [outDim] at bOffset
//   x: array<f32>, read: [batch, inDim]
//   y: array<f32>, read_write: [batch, outDim]
//   u: Uniforms { batch, inDim, outDim, wOffset, bOffset, act } (act: 0 none, 1 relu, 2 leaky 0.01)
// Workgroup: WG_X x WG_Y threads own a TILE_OUT x TILE_BATCH tile of y (workgroup_id.x over
// outputs, .y over rows); each thread keeps a MICRO_OUT x MICRO_BATCH block in registers, strided
// by WG_X / WG_Y so that neighbouring threads write neighbouring outputs. TILE_K inputs of W and x
// are staged in workgroup memory per step, k-major so the inner loop reads without bank conflicts.
// Numerics: f32; each accumulator starts at the bias and adds products in increasing i, like the
// TS reference; the compiler may fuse multiply-adds (tolerance, not bit-exactness). Only the
// valid k of the last tile are accumulated, so padding never touches a sum.

const MICRO_OUT = TILE_OUT / WG_X;
const MICRO_BATCH = TILE_BATCH / WG_Y;
const THREADS = WG_X * WG_Y;

var<workgroup> w_tile: array<f32, TILE_K * TILE_OUT>;
var<workgroup> x_tile: array<f32, TILE_K * TILE_BATCH>;

fn activate(a: f32) -> f32 {
  if (u.act == 1u) {
    return select(a, 0.0, a < 0.0);
  }
  if (u.act == 2u) {
    return select(a, a * 0.01, a < 0.0);
  }
  return a;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn dense_forward(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let out0 = wid.x * TILE_OUT;
  let row0 = wid.y * TILE_BATCH;
  var acc: array<f32, MICRO_OUT * MICRO_BATCH>;
  for (var r = 0u; r < MICRO_OUT; r++) {
    let o = out0 + lid.x + r * WG_X;
    var bias = 0.0;
    if (o < u.outDim) {
      bias = params[u.bOffset + o];
    }
    for (var c = 0u; c < MICRO_BATCH; c++) {
      acc[r * MICRO_BATCH + c] = bias;
    }
  }

  for (var k0 = 0u; k0 < u.inDim; k0 += TILE_K) {
    for (var e = tid; e < TILE_K * TILE_OUT; e += THREADS) {
      let o = out0 + e / TILE_K;
      let k = k0 + e % TILE_K;
      var v = 0.0;
      if (o < u.outDim && k < u.inDim) {
        v = params[u.wOffset + o * u.inDim + k];
      }
      w_tile[(e % TILE_K) * TILE_OUT + e / TILE_K] = v;
    }
    for (var e = tid; e < TILE_K * TILE_BATCH; e += THREADS) {
      let b = row0 + e / TILE_K;
      let k = k0 + e % TILE_K;
      var v = 0.0;
      if (b < u.batch && k < u.inDim) {
        v = x[b * u.inDim + k];
      }
      x_tile[(e % TILE_K) * TILE_BATCH + e / TILE_K] = v;
    }
    workgroupBarrier();
    let valid = min(u32(TILE_K), u.inDim - k0);
    for (var k = 0u; k < valid; k++) {
      var xv: array<f32, MICRO_BATCH>;
      for (var c = 0u; c < MICRO_BATCH; c++) {
        xv[c] = x_tile[k * TILE_BATCH + lid.y + c * WG_Y];
      }
      for (var r = 0u; r < MICRO_OUT; r++) {
        let wv = w_tile[k * TILE_OUT + lid.x + r * WG_X];
        for (var c = 0u; c < MICRO_BATCH; c++) {
          acc[r * MICRO_BATCH + c] = acc[r * MICRO_BATCH + c] + wv * xv[c];
        }
      }
    }
    workgroupBarrier();
  }

  for (var c = 0u; c < MICRO_BATCH; c++) {
    let b = row0 + lid.y + c * WG_Y;
    for (var r = 0u; r < MICRO_OUT; r++) {
      let o = out0 + lid.x + r * WG_X;
      if (b < u.batch && o < u.outDim) {
        y[b * u.outDim + o] = activate(acc[r * MICRO_BATCH + c]);
      }
    }
  }
}
