// mlp_backward: backward through up to MAX_JOBS (8) dense layers per launch (job j: one layer of
// any network), from each layer's delta = dLoss/d(pre-activation) rows at deltas[dOff_j],
// b < batch, o < out_j:
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
//   u: Uniforms { batch, then per job j in 0..7: in, out, wOff, bOff, xOff, dOff, pOff, pAct, partBase,
//      then splits, scratchAt, sliceOnly, sumSplits, then per j in 0, 1: sumIn, sumOut, sumWOff,
//      sumBOff, sumPartBase } (pAct: 0 none, 1 relu, 2 leaky 0.01, 3 no dX; out_j = 0: job absent)
// Split dW (splits > 1, sliceOnly = 1): each dW tile is `splits` workgroups over slices of the batch
// (whole k-tiles); each stores its partial tile in the tile's slot at deltas[scratchAt + partial
// slot * SLOT_FLOATS + 4] and nothing else. WGSL's atomics are relaxed and its barriers are
// workgroup-scoped, so a CUDA-style "last workgroup to arrive adds the slices" would read other
// workgroups' stores with no guarantee they are visible; instead a later launch (dispatches in a
// pass are ordered and see each other's stores) finishes them: its first workgroups, one per split
// tile of the jobs sum_j (sumSplits slices each), add the slices in slice order and write the
// gradients and the tile's sum of squares.
// Workgroup: WG_X x WG_Y x WG_Z threads own a TILE_X x TILE_Y tile; flat workgroup id = the split
// tiles to finish (sum job 0's, sum job 1's), then job 0's dW tiles (x splits: tile t slice s is
// workgroup t * splits + s), its dX tiles, then job 1's, ..., then job 7's. Thread (x, y) of
// k-group z computes the 4 x 4 block at X 4x.., Y 4y.. over the k-tiles z, z + WG_Z, ..., and the
// WG_Z partial tiles are summed in group order through workgroup memory (splitting the long K
// loops — the whole batch for dW — inside the workgroup, with no extra launch).
// dW tile: X = inputs i (plus the ones column i = in for db), Y = outputs o, K = batch rows.
// dX tile: X = inputs i, Y = batch rows b, K = outputs o. Operands are staged k-major in
// workgroup memory as vec4 rows padded by one vec4 (two vec4 reads per k for 16 multiply-adds).
// Each thread stages PX X values and PY Y values per k-tile: the next k-tile's global loads are
// all issued into registers before the current tile's math (fixed trip counts, so they unroll and
// overlap) instead of one load-then-store at a time.
// Numerics: f32; each group adds its k in increasing order from 0 and the groups' sums are added
// in order (multiply-adds may fuse: tolerance against the TS reference's single running sum); the
// partial is a fixed-order tree, deterministic per backend.

const THREADS = WG_X * WG_Y;
// Row strides of the k-major tiles in vec4s, and one k-group's staging area.
const SX4 = TILE_X / 4 + 1;
const SY4 = TILE_Y / 4 + 1;
const STAGE = TILE_K * (SX4 + SY4);
// A split dW tile's scratch slot (4 floats, CUDA's arrival counter, unused here; then 8 slices) and
// one slice: thread tid's element (r, c) at (4 c + r) * THREADS + tid (src/kernels/mlp_backward.ts
// sliceIndex), so every store and load of a workgroup is contiguous.
const SLICE = TILE_X * TILE_Y;
const SLOT_FLOATS = 4u + 8u * SLICE;

var<workgroup> stage: array<vec4<f32>, WG_Z * STAGE>;
var<workgroup> red: array<f32, THREADS>;
// Values each thread of a k-group stages per k-tile.
const PX = TILE_K * TILE_X / THREADS;
const PY = TILE_K * TILE_Y / THREADS;
const_assert PX * THREADS == TILE_K * TILE_X;
const_assert PY * THREADS == TILE_K * TILE_Y;
// The groups' partial tiles (4 vec4 per thread of groups 1..) fit in the staging memory.
const_assert (WG_Z - 1) * THREADS * 4 <= WG_Z * STAGE;

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

// Most jobs of a launch (src/kernels/mlp_backward.ts MAX_BACKWARD_JOBS).
const MAX_JOBS = 8u;

fn job_of(j: u32) -> Job {
  switch (j) {
    case 0u: {
      return Job(u.in0, u.out0, u.wOff0, u.bOff0, u.xOff0, u.dOff0, u.pOff0, u.pAct0, u.partBase0);
    }
    case 1u: {
      return Job(u.in1, u.out1, u.wOff1, u.bOff1, u.xOff1, u.dOff1, u.pOff1, u.pAct1, u.partBase1);
    }
    case 2u: {
      return Job(u.in2, u.out2, u.wOff2, u.bOff2, u.xOff2, u.dOff2, u.pOff2, u.pAct2, u.partBase2);
    }
    case 3u: {
      return Job(u.in3, u.out3, u.wOff3, u.bOff3, u.xOff3, u.dOff3, u.pOff3, u.pAct3, u.partBase3);
    }
    case 4u: {
      return Job(u.in4, u.out4, u.wOff4, u.bOff4, u.xOff4, u.dOff4, u.pOff4, u.pAct4, u.partBase4);
    }
    case 5u: {
      return Job(u.in5, u.out5, u.wOff5, u.bOff5, u.xOff5, u.dOff5, u.pOff5, u.pAct5, u.partBase5);
    }
    case 6u: {
      return Job(u.in6, u.out6, u.wOff6, u.bOff6, u.xOff6, u.dOff6, u.pOff6, u.pAct6, u.partBase6);
    }
    default: {
      return Job(u.in7, u.out7, u.wOff7, u.bOff7, u.xOff7, u.dOff7, u.pOff7, u.pAct7, u.partBase7);
    }
  }
}

fn sum_job_of(j: u32) -> Job {
  if (j == 0u) {
    return Job(u.sumIn0, u.sumOut0, u.sumWOff0, u.sumBOff0, 0u, 0u, 0u, 3u, u.sumPartBase0);
  }
  return Job(u.sumIn1, u.sumOut1, u.sumWOff1, u.sumBOff1, 0u, 0u, 0u, 3u, u.sumPartBase1);
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

// One k-tile of a k-group in registers, element e = tid + q * THREADS (zero outside the layer):
// dW tile: X = x[k0 + e / TILE_X, x0 + e % TILE_X] (1 in the ones column), Y = delta[k0 + e / TILE_Y, y0 + e % TILE_Y];
// dX tile: X = W[k0 + e / TILE_X, x0 + e % TILE_X], Y = delta[y0 + e / TILE_K, k0 + e % TILE_K].
struct Staged {
  x: array<f32, PX>,
  y: array<f32, PY>,
}

fn load_tile(job: Job, is_dw: bool, k0: u32, k_end: u32, x0: u32, y0: u32, tid: u32) -> Staged {
  var s: Staged;
  if (is_dw) {
    for (var q = 0u; q < PX; q++) {
      let e = tid + q * THREADS;
      let k = k0 + e / TILE_X;
      let i = x0 + e % TILE_X;
      var v = 0.0;
      if (k < k_end) {
        if (i < job.n_in) {
          v = acts[job.x_off + k * job.n_in + i];
        } else if (i == job.n_in) {
          v = 1.0;
        }
      }
      s.x[q] = v;
    }
    for (var q = 0u; q < PY; q++) {
      let e = tid + q * THREADS;
      let k = k0 + e / TILE_Y;
      let o = y0 + e % TILE_Y;
      var v = 0.0;
      if (k < k_end && o < job.n_out) {
        v = deltas[job.d_off + k * job.n_out + o];
      }
      s.y[q] = v;
    }
  } else {
    for (var q = 0u; q < PX; q++) {
      let e = tid + q * THREADS;
      let k = k0 + e / TILE_X;
      let i = x0 + e % TILE_X;
      var v = 0.0;
      if (k < job.n_out && i < job.n_in) {
        v = params[job.w_off + k * job.n_in + i];
      }
      s.x[q] = v;
    }
    for (var q = 0u; q < PY; q++) {
      let e = tid + q * THREADS;
      let b = y0 + e / TILE_K;
      let k = k0 + e % TILE_K;
      var v = 0.0;
      if (b < u.batch && k < job.n_out) {
        v = deltas[job.d_off + b * job.n_out + k];
      }
      s.y[q] = v;
    }
  }
  return s;
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

// This workgroup's tile over k in [k_begin, k_end), summed over the k-groups (complete in group 0).
fn tile_product(
  job: Job,
  is_dw: bool,
  k_begin: u32,
  k_end: u32,
  x0: u32,
  y0: u32,
  tid: u32,
  z: u32,
  xs: u32,
  ys: u32,
  lx: u32,
  ly: u32,
) -> array<vec4<f32>, 4> {
  var acc: array<vec4<f32>, 4>;
  let rounds = ceil_div(ceil_div(k_end - k_begin, TILE_K), WG_Z);
  var next = load_tile(job, is_dw, k_begin + z * TILE_K, k_end, x0, y0, tid);
  for (var round = 0u; round < rounds; round++) {
    let k0 = k_begin + (round * WG_Z + z) * TILE_K;
    for (var q = 0u; q < PX; q++) {
      let e = tid + q * THREADS;
      let m = e % TILE_X;
      stage[xs + (e / TILE_X) * SX4 + m / 4u][m % 4u] = next.x[q];
    }
    if (is_dw) {
      for (var q = 0u; q < PY; q++) {
        let e = tid + q * THREADS;
        let m = e % TILE_Y;
        stage[ys + (e / TILE_Y) * SY4 + m / 4u][m % 4u] = next.y[q];
      }
    } else {
      for (var q = 0u; q < PY; q++) {
        let e = tid + q * THREADS;
        let m = e / TILE_K;
        stage[ys + (e % TILE_K) * SY4 + m / 4u][m % 4u] = next.y[q];
      }
    }
    workgroupBarrier();
    if (round + 1u < rounds) {
      next = load_tile(job, is_dw, k0 + WG_Z * TILE_K, k_end, x0, y0, tid);
    }
    let valid = min(u32(TILE_K), k_end - min(k0, k_end));
    // A full k-tile takes the constant-trip loop, which the compiler unrolls.
    if (valid == TILE_K) {
      for (var k = 0u; k < TILE_K; k++) {
        let xv = stage[xs + k * SX4 + lx];
        let yv = stage[ys + k * SY4 + ly];
        for (var r = 0u; r < 4u; r++) {
          acc[r] = acc[r] + xv[r] * yv;
        }
      }
    } else {
      for (var k = 0u; k < valid; k++) {
        let xv = stage[xs + k * SX4 + lx];
        let yv = stage[ys + k * SY4 + ly];
        for (var r = 0u; r < 4u; r++) {
          acc[r] = acc[r] + xv[r] * yv;
        }
      }
    }
    workgroupBarrier();
  }

  // Sum the k-groups' tiles in group order (the staging memory is free now).
  if (z > 0u) {
    for (var r = 0u; r < 4u; r++) {
      stage[((z - 1u) * THREADS + tid) * 4u + r] = acc[r];
    }
  }
  workgroupBarrier();
  if (z == 0u) {
    for (var g = 1u; g < WG_Z; g++) {
      for (var r = 0u; r < 4u; r++) {
        acc[r] = acc[r] + stage[((g - 1u) * THREADS + tid) * 4u + r];
      }
    }
  }

  return acc;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn mlp_backward(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
) {
  // Which job and which kind of tile this workgroup computes: a split tile to finish (is_sum), a dW
  // tile or one slice of it, or a dX tile.
  var t = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  var job = job_of(0u);
  var is_dw = true;
  var is_sum = false;
  var found = false;
  if (u.sumSplits > 1u) {
    for (var j = 0u; j < 2u; j++) {
      if (!found) {
        job = sum_job_of(j);
        let gs = grad_tiles(job);
        if (t < gs) {
          is_sum = true;
          found = true;
        } else {
          t = t - gs;
        }
      }
    }
  }
  // The first job whose tiles reach past t (the loop stops there).
  for (var j = 0u; j < MAX_JOBS && !found; j++) {
    job = job_of(j);
    let gw = grad_tiles(job) * u.splits;
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
  if (!found) {
    return;
  }

  // A dW tile's K range: its slice of the batch (whole k-tiles) when split.
  var slice = 0u;
  var k_begin = 0u;
  var k_end = job.n_out;
  if (is_dw && !is_sum) {
    slice = t % u.splits;
    t = t / u.splits;
    let slice_len = ceil_div(ceil_div(u.batch, TILE_K), u.splits) * TILE_K;
    k_begin = min(slice * slice_len, u.batch);
    k_end = min(k_begin + slice_len, u.batch);
  }
  var x0: u32;
  var y0: u32;
  if (is_dw) {
    let tx = ceil_div(job.n_in + 1u, TILE_X);
    x0 = (t % tx) * TILE_X;
    y0 = (t / tx) * TILE_Y;
  } else {
    let tx = ceil_div(job.n_in, TILE_X);
    x0 = (t % tx) * TILE_X;
    y0 = (t / tx) * TILE_Y;
  }

  let z = lid.z;
  let tid = lid.x + WG_X * lid.y;
  let ix = 4u * lid.x;
  let iy = 4u * lid.y;
  let xs = z * STAGE;
  let ys = z * STAGE + TILE_K * SX4;
  let slot = u.scratchAt + (job.part_base + t) * SLOT_FLOATS + 4u;
  // acc[r][c]: X index ix + r, Y index iy + c.
  var acc: array<vec4<f32>, 4>;
  if (is_sum) {
    // An earlier launch's split tile: its slices in slice order (z > 0 idles to the tree below).
    if (z == 0u) {
      for (var s = 0u; s < u.sumSplits; s++) {
        for (var c = 0u; c < 4u; c++) {
          for (var r = 0u; r < 4u; r++) {
            acc[r][c] = acc[r][c] + deltas[slot + s * SLICE + (4u * c + r) * THREADS + tid];
          }
        }
      }
    }
  } else {
    acc = tile_product(job, is_dw, k_begin, k_end, x0, y0, tid, z, xs, ys, lid.x, lid.y);
  }

  if (is_dw && !is_sum && u.sliceOnly == 1u) {
    // One slice of a split tile: stored for the launch that finishes the tile.
    if (z == 0u) {
      for (var c = 0u; c < 4u; c++) {
        for (var r = 0u; r < 4u; r++) {
          deltas[slot + slice * SLICE + (4u * c + r) * THREADS + tid] = acc[r][c];
        }
      }
    }
    return;
  }

  if (is_dw) {
    var ss = 0.0;
    if (z == 0u) {
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
    }
    workgroupBarrier();
    for (var s = u32(THREADS) / 2u; s > 0u; s = s >> 1u) {
      if (z == 0u && tid < s) {
        red[tid] = red[tid] + red[tid + s];
      }
      workgroupBarrier();
    }
    if (z == 0u && tid == 0u) {
      partials[job.part_base + t] = red[0];
    }
    return;
  }

  if (z > 0u) {
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
