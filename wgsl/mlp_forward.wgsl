// mlp_forward: one dense layer of up to two networks per launch (grouped GEMM), outputs kept as
// the activations the backward pass reads. Job j: for b < batch, o < out_j
//   acts[yOff_j + b * out_j + o] = act_j(params[bOff_j + o] + sum_i params[wOff_j + o * in_j + i] * acts[xOff_j + b * in_j + i])
// Bindings (declared by the preamble generated from src/kernels/mlp_forward.ts):
//   params: array<f32>, read: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: array<f32>, read_write: input rows at xOff_j, output rows at yOff_j (disjoint)
//   u: Uniforms { batch, in0, out0, wOff0, bOff0, xOff0, yOff0, act0, in1, ... act1 }
//      (act: 0 none, 1 relu, 2 leaky 0.01; out_j = 0: job absent)
// Workgroup: WG_X x WG_Y threads own a TILE_X (outputs) x TILE_Y (rows) tile; flat workgroup id =
// tiles of job 0, then of job 1. Each thread keeps a MICRO_X x MICRO_Y block in registers, strided
// by WG_X / WG_Y so neighbouring threads write neighbouring outputs; TILE_K inputs of W and x are
// staged k-major in workgroup memory (8 KiB, rows padded by one float).
// Numerics: f32; each sum starts at the bias and adds products in increasing i; the compiler may
// fuse multiply-adds (tolerance, not bit-exactness, against the TS reference).

const MICRO_X = TILE_X / WG_X;
const MICRO_Y = TILE_Y / WG_Y;
const THREADS = WG_X * WG_Y;
// Row strides of the k-major tiles, padded by one so the transposing stores hit distinct banks.
const SX = TILE_X + 1;
const SY = TILE_Y + 1;

var<workgroup> w_tile: array<f32, TILE_K * SX>;
var<workgroup> x_tile: array<f32, TILE_K * SY>;

struct Job {
  n_in: u32,
  n_out: u32,
  w_off: u32,
  b_off: u32,
  x_off: u32,
  y_off: u32,
  act: u32,
}

fn activate(a: f32, act: u32) -> f32 {
  if (act == 1u) {
    return select(a, 0.0, a < 0.0);
  }
  if (act == 2u) {
    return select(a, a * 0.01, a < 0.0);
  }
  return a;
}

fn tiles_of(n_out: u32) -> u32 {
  return ((n_out + TILE_X - 1u) / TILE_X) * ((u.batch + TILE_Y - 1u) / TILE_Y);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn mlp_forward(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  var t = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  var job = Job(u.in0, u.out0, u.wOff0, u.bOff0, u.xOff0, u.yOff0, u.act0);
  let tiles0 = tiles_of(u.out0);
  if (t >= tiles0) {
    t = t - tiles0;
    job = Job(u.in1, u.out1, u.wOff1, u.bOff1, u.xOff1, u.yOff1, u.act1);
    if (t >= tiles_of(u.out1)) {
      return;
    }
  }
  let tx = (job.n_out + TILE_X - 1u) / TILE_X;
  let out0 = (t % tx) * TILE_X;
  let row0 = (t / tx) * TILE_Y;

  var acc: array<f32, MICRO_X * MICRO_Y>;
  for (var r = 0u; r < MICRO_X; r++) {
    let o = out0 + lid.x + r * WG_X;
    var bias = 0.0;
    if (o < job.n_out) {
      bias = params[job.b_off + o];
    }
    for (var c = 0u; c < MICRO_Y; c++) {
      acc[r * MICRO_Y + c] = bias;
    }
  }

  for (var k0 = 0u; k0 < job.n_in; k0 += TILE_K) {
    for (var e = tid; e < TILE_K * TILE_X; e += THREADS) {
      let o = out0 + e / TILE_K;
      let k = k0 + e % TILE_K;
      var v = 0.0;
      if (o < job.n_out && k < job.n_in) {
        v = params[job.w_off + o * job.n_in + k];
      }
      w_tile[(e % TILE_K) * SX + e / TILE_K] = v;
    }
    for (var e = tid; e < TILE_K * TILE_Y; e += THREADS) {
      let b = row0 + e / TILE_K;
      let k = k0 + e % TILE_K;
      var v = 0.0;
      if (b < u.batch && k < job.n_in) {
        v = acts[job.x_off + b * job.n_in + k];
      }
      x_tile[(e % TILE_K) * SY + e / TILE_K] = v;
    }
    workgroupBarrier();
    let valid = min(u32(TILE_K), job.n_in - k0);
    for (var k = 0u; k < valid; k++) {
      var xv: array<f32, MICRO_Y>;
      for (var c = 0u; c < MICRO_Y; c++) {
        xv[c] = x_tile[k * SY + lid.y + c * WG_Y];
      }
      for (var r = 0u; r < MICRO_X; r++) {
        let wv = w_tile[k * SX + lid.x + r * WG_X];
        for (var c = 0u; c < MICRO_Y; c++) {
          acc[r * MICRO_Y + c] = acc[r * MICRO_Y + c] + wv * xv[c];
        }
      }
    }
    workgroupBarrier();
  }

  for (var c = 0u; c < MICRO_Y; c++) {
    let b = row0 + lid.y + c * WG_Y;
    for (var r = 0u; r < MICRO_X; r++) {
      let o = out0 + lid.x + r * WG_X;
      if (b < u.batch && o < job.n_out) {
        acts[job.y_off + b * job.n_out + o] = activate(acc[r * MICRO_Y + c], job.act);
      }
    }
  }
}
