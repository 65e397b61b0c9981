// mlp_backward: backward through one dense layer of up to two networks per launch, from the
// layer's delta = dLoss/d(pre-activation) rows at deltas[dOff_j], b < batch, o < out_j:
//   dW[o, i] = sum_b delta[b, o] * x[b, i], db[o] = sum_b delta[b, o]   -> grads (params' layout)
//   dX[b, i] = (sum_o delta[b, o] * W[o, i]) * act'(x[b, i])            -> deltas[pOff_j] (if pAct_j != 3)
// with x = acts[xOff_j + b * in_j + i], the layer's input. Each dW tile also writes the sum of
// squares of its gradients to partials[partBase_j + tile] (adam_step reduces them to the norm).
// Bindings (declared by the preamble generated from src/kernels/mlp_backward.ts):
//   params: array<f32>, read: W [out, in] at wOff_j, bias at bOff_j
//   acts: array<f32>, read: layer inputs (rows of in_j floats at xOff_j)
//   deltas: array<f32>, read_write: this layer's rows (read) and the previous layer's (written)
//   grads: array<f32>, read_write: dW at wOff_j, db at bOff_j
//   partials: array<f32>, read_write: one float per dW tile
//   u: Uniforms { batch, then per job j in 0, 1: in, out, wOff, bOff, xOff, dOff, pOff, pAct, partBase }
//      (pAct: 0 none, 1 relu, 2 leaky 0.01, 3 no dX; out_j = 0: job absent)
// Workgroup: WG_X x WG_Y threads own a TILE_X x TILE_Y tile, thread (x, y) the 4 x 4 block at
// X 4x.., Y 4y..; flat workgroup id = job 0's dW tiles, its dX tiles, then job 1's.
// dW tile: X = inputs i (plus the ones column i = in for db), Y = outputs o, K = batch rows.
// dX tile: X = inputs i, Y = batch rows b, K = outputs o. Operands are staged k-major in
// workgroup memory as vec4 rows padded by one vec4 (two vec4 reads per k for 16 multiply-adds).
// Numerics: f32; sums add in increasing k from 0 (multiply-adds may fuse: tolerance against the
// TS reference); the partial is a fixed-order tree, deterministic per backend.

const THREADS = WG_X * WG_Y;
// Row strides of the k-major tiles in vec4s.
const SX4 = TILE_X / 4 + 1;
const SY4 = TILE_Y / 4 + 1;

var<workgroup> x_tile: array<vec4<f32>, TILE_K * SX4>;
var<workgroup> y_tile: array<vec4<f32>, TILE_K * SY4>;
var<workgroup> red: array<f32, THREADS>;

struct Job {
  n_in: u32,
  n_out: u32,
  w_off: u32,
  b_off: u32,
  x_off: u32,
  d_off: u32,
  p_off: u32,
  p_act: u32,
  part_base: u32,
}

fn job_of(j: u32) -> Job {
  if (j == 0u) {
    return Job(u.in0, u.out0, u.wOff0, u.bOff0, u.xOff0, u.dOff0, u.pOff0, u.pAct0, u.partBase0);
  }
  return Job(u.in1, u.out1, u.wOff1, u.bOff1, u.xOff1, u.dOff1, u.pOff1, u.pAct1, u.partBase1);
}

fn ceil_div(a: u32, b: u32) -> u32 {
  return (a + b - 1u) / b;
}

fn grad_tiles(job: Job) -> u32 {
  if (job.n_out == 0u) {
    return 0u;
  }
  return ceil_div(job.n_in + 1u, TILE_X) * ceil_div(job.n_out, TILE_Y);
}

fn dx_tiles(job: Job) -> u32 {
  if (job.n_out == 0u || job.p_act == 3u) {
    return 0u;
  }
  return ceil_div(job.n_in, TILE_X) * ceil_div(u.batch, TILE_Y);
}

fn act_derivative(y: f32, act: u32) -> f32 {
  if (act == 1u) {
    return select(0.0, 1.0, y > 0.0);
  }
  if (act == 2u) {
    return select(0.01, 1.0, y > 0.0);
  }
  return 1.0;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn mlp_backward(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  // Which job and which kind of tile this workgroup computes.
  var t = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  var job = job_of(0u);
  var is_dw = true;
  var found = false;
  for (var j = 0u; j < 2u; j++) {
    if (!found) {
      job = job_of(j);
      let gw = grad_tiles(job);
      let gx = dx_tiles(job);
      if (t < gw) {
        found = true;
      } else if (t < gw + gx) {
        t = t - gw;
        is_dw = false;
        found = true;
      } else {
        t = t - gw - gx;
      }
    }
  }
  if (!found) {
    return;
  }

  var x0: u32;
  var y0: u32;
  var k_len: u32;
  if (is_dw) {
    let tx = ceil_div(job.n_in + 1u, TILE_X);
    x0 = (t % tx) * TILE_X;
    y0 = (t / tx) * TILE_Y;
    k_len = u.batch;
  } else {
    let tx = ceil_div(job.n_in, TILE_X);
    x0 = (t % tx) * TILE_X;
    y0 = (t / tx) * TILE_Y;
    k_len = job.n_out;
  }

  let ix = 4u * lid.x;
  let iy = 4u * lid.y;
  // acc[r][c]: X index ix + r, Y index iy + c.
  var acc: array<vec4<f32>, 4>;
  for (var k0 = 0u; k0 < k_len; k0 += TILE_K) {
    if (is_dw) {
      // X: inputs of rows k (the ones column at i = in); Y: deltas of rows k.
      for (var e = tid; e < TILE_K * TILE_X; e += THREADS) {
        let m = e % TILE_X;
        let k = k0 + e / TILE_X;
        let i = x0 + m;
        var v = 0.0;
        if (k < u.batch) {
          if (i < job.n_in) {
            v = acts[job.x_off + k * job.n_in + i];
          } else if (i == job.n_in) {
            v = 1.0;
          }
        }
        x_tile[(e / TILE_X) * SX4 + m / 4u][m % 4u] = v;
      }
      for (var e = tid; e < TILE_K * TILE_Y; e += THREADS) {
        let m = e % TILE_Y;
        let k = k0 + e / TILE_Y;
        let o = y0 + m;
        var v = 0.0;
        if (k < u.batch && o < job.n_out) {
          v = deltas[job.d_off + k * job.n_out + o];
        }
        y_tile[(e / TILE_Y) * SY4 + m / 4u][m % 4u] = v;
      }
    } else {
      // X: weights of outputs k; Y: deltas of rows b at outputs k.
      for (var e = tid; e < TILE_K * TILE_X; e += THREADS) {
        let m = e % TILE_X;
        let k = k0 + e / TILE_X;
        let i = x0 + m;
        var v = 0.0;
        if (k < job.n_out && i < job.n_in) {
          v = params[job.w_off + k * job.n_in + i];
        }
        x_tile[(e / TILE_X) * SX4 + m / 4u][m % 4u] = v;
      }
      for (var e = tid; e < TILE_K * TILE_Y; e += THREADS) {
        let kk = e % TILE_K;
        let m = e / TILE_K;
        let b = y0 + m;
        let k = k0 + kk;
        var v = 0.0;
        if (b < u.batch && k < job.n_out) {
          v = deltas[job.d_off + b * job.n_out + k];
        }
        y_tile[kk * SY4 + m / 4u][m % 4u] = v;
      }
    }
    workgroupBarrier();
    let valid = min(u32(TILE_K), k_len - k0);
    for (var k = 0u; k < valid; k++) {
      let xv = x_tile[k * SX4 + lid.x];
      let yv = y_tile[k * SY4 + lid.y];
      for (var r = 0u; r < 4u; r++) {
        acc[r] = acc[r] + xv[r] * yv;
      }
    }
    workgroupBarrier();
  }

  if (is_dw) {
    var ss = 0.0;
    for (var c = 0u; c < 4u; c++) {
      let o = y0 + iy + c;
      for (var r = 0u; r < 4u; r++) {
        let i = x0 + ix + r;
        if (o < job.n_out && i <= job.n_in) {
          let g = acc[r][c];
          if (i < job.n_in) {
            grads[job.w_off + o * job.n_in + i] = g;
          } else {
            grads[job.b_off + o] = g;
          }
          ss = ss + g * g;
        }
      }
    }
    red[tid] = ss;
    workgroupBarrier();
    for (var s = THREADS / 2u; s > 0u; s = s >> 1u) {
      if (tid < s) {
        red[tid] = red[tid] + red[tid + s];
      }
      workgroupBarrier();
    }
    if (tid == 0u) {
      partials[job.part_base + t] = red[0];
    }
    return;
  }

  for (var c = 0u; c < 4u; c++) {
    let b = y0 + iy + c;
    for (var r = 0u; r < 4u; r++) {
      let i = x0 + ix + r;
      if (b < u.batch && i < job.n_in) {
        let y = acts[job.x_off + b * job.n_in + i];
        deltas[job.p_off + b * job.n_in + i] = acc[r][c] * act_derivative(y, job.p_act);
      }
    }
  }
}
