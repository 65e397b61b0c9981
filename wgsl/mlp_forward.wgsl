// mlp_forward: one dense layer of up to two networks per launch (grouped GEMM), outputs kept as
// the activations the backward pass reads. Job j: for b < batch, o < out_j
//   acts[yOff_j + b * out_j + o] = act_j(params[bOff_j + o] + sum_i params[wOff_j + o * in_j + i] * acts[xOff_j + b * in_j + i])
// Bindings (declared by the preamble generated from src/kernels/mlp_forward.ts):
//   params: array<f32>, read: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: array<f32>, read_write: input rows at xOff_j, output rows at yOff_j (disjoint)
//   u: Uniforms { batch, in0, out0, wOff0, bOff0, xOff0, yOff0, act0, in1, ... act1, then per job j:
//      splits, yScr, xSplits, xScr, xBOff, xAct } (act: 0 none, 1 relu, 2 leaky 0.01; out_j = 0: job absent)
// K split (splits_j = S > 1): each tile of job j is S workgroups over slices of whole k-tiles of the
// inputs; each stores its partial sums (from 0: no bias, no activation) at acts[yScr_j + s * batch *
// out_j + b * out_j + o]. A job whose input was split (xSplits_j > 1) stages its inputs as
// act(xBOff_j bias + slice 0 + slice 1 + ...) from acts[xScr_j ..] (the previous launch's stores are
// visible: dispatches in a pass are ordered), and its workgroups of output column 0 store them at
// xOff_j too, where the backward pass reads the activations. Only pipelines with SPLIT_IN = 1 (spec
// constant) read split inputs; the others ignore xSplits_j.
// Workgroup: WG_X x WG_Y x WG_Z threads own a TILE_X (outputs) x TILE_Y (rows) tile; flat workgroup
// id = tiles of job 0 (x splits_0: tile t slice s is workgroup t * splits_0 + s), then of job 1. Thread (x, y) of k-group z computes the 4 x 4 outputs 4x.. x
// rows 4y.. over the k-tiles z, z + WG_Z, ... (TILE_K inputs each, staged k-major in workgroup
// memory as vec4 rows padded by one vec4: two vec4 reads per k for 16 multiply-adds); the WG_Z
// partial tiles are then summed in group order through the same workgroup memory. Splitting K
// inside the workgroup shortens the latency-bound loop over inputs with no extra launch. Each
// thread stages PX weights and PY inputs per k-tile: the next k-tile's global loads are all issued
// into registers before the current tile's math (fixed trip counts, so they unroll and overlap)
// instead of one load-then-store at a time.
// Numerics: f32; group 0 starts at the bias (at 0 in a split job's slices: the next layer adds bias
// + slice 0 + slice 1 + ...), each group adds its products in increasing i, and the groups' sums
// are added in order; the compiler may fuse multiply-adds (tolerance, not bit-exactness, against
// the TS reference's single running sum).

const THREADS = WG_X * WG_Y;
// Row strides of the k-major tiles in vec4s, and one k-group's staging area.
const SX4 = TILE_X / 4 + 1;
const SY4 = TILE_Y / 4 + 1;
const STAGE = TILE_K * (SX4 + SY4);

var<workgroup> stage: array<vec4<f32>, WG_Z * STAGE>;
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
  y_off: u32,
  act: u32,
  splits: u32,
  y_scr: u32,
  x_splits: u32,
  x_scr: u32,
  x_b_off: u32,
  x_act: u32,
}

fn job_of(j: u32) -> Job {
  if (j == 0u) {
    return Job(u.in0, u.out0, u.wOff0, u.bOff0, u.xOff0, u.yOff0, u.act0, max(u.splits0, 1u), u.yScr0,
               u.xSplits0, u.xScr0, u.xBOff0, u.xAct0);
  }
  return Job(u.in1, u.out1, u.wOff1, u.bOff1, u.xOff1, u.yOff1, u.act1, max(u.splits1, 1u), u.yScr1,
             u.xSplits1, u.xScr1, u.xBOff1, u.xAct1);
}

// One k-tile of a k-group in registers: W[out0 + e / TILE_K, k0 + e % TILE_K] and
// x[row0 + e / TILE_K, k0 + e % TILE_K] for e = tid + q * THREADS (zero outside the layer).
struct Staged {
  w: array<f32, PX>,
  x: array<f32, PY>,
}

// Input x[b, k] of a job (b < batch, k < n_in): the activation in acts, or the previous layer's
// slices summed from its bias and activated; stored at x_off when `store_x` (output column 0).
// SPLIT_IN = 0 (no job of the launch reads a split input): the constant condition folds the rest
// away, so the staged loads of load_tile are plain reads the compiler issues together.
fn input_at(job: Job, b: u32, k: u32, store_x: bool) -> f32 {
  if (SPLIT_IN == 0 || job.x_splits <= 1u) {
    return acts[job.x_off + b * job.n_in + k];
  }
  var a = params[job.x_b_off + k];
  for (var s = 0u; s < job.x_splits; s++) {
    a = a + acts[job.x_scr + (s * u.batch + b) * job.n_in + k];
  }
  let x = activate(a, job.x_act);
  if (store_x) {
    acts[job.x_off + b * job.n_in + k] = x;
  }
  return x;
}

fn load_tile(job: Job, k0: u32, k_end: u32, out0: u32, row0: u32, tid: u32, store_x: bool) -> Staged {
  var s: Staged;
  for (var q = 0u; q < PX; q++) {
    let e = tid + q * THREADS;
    let o = out0 + e / TILE_K;
    let k = k0 + e % TILE_K;
    var v = 0.0;
    if (o < job.n_out && k < k_end) {
      v = params[job.w_off + o * job.n_in + k];
    }
    s.w[q] = v;
  }
  for (var q = 0u; q < PY; q++) {
    let e = tid + q * THREADS;
    let b = row0 + e / TILE_K;
    let k = k0 + e % TILE_K;
    var v = 0.0;
    if (b < u.batch && k < k_end) {
      v = input_at(job, b, k, store_x);
    }
    s.x[q] = v;
  }
  return s;
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
  if (n_out == 0u) {
    return 0u;
  }
  return ((n_out + TILE_X - 1u) / TILE_X) * ((u.batch + TILE_Y - 1u) / TILE_Y);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn mlp_forward(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
) {
  var t = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  var job = job_of(0u);
  let tiles0 = tiles_of(job.n_out) * job.splits;
  if (t >= tiles0) {
    t = t - tiles0;
    job = job_of(1u);
    if (t >= tiles_of(job.n_out) * job.splits) {
      return;
    }
  }
  // This workgroup's slice of the inputs (all of them when the job is not split).
  let slice = t % job.splits;
  t = t / job.splits;
  let k_tiles = (job.n_in + TILE_K - 1u) / TILE_K;
  let slice_len = ((k_tiles + job.splits - 1u) / job.splits) * TILE_K;
  let k_begin = min(slice * slice_len, job.n_in);
  let k_end = min(k_begin + slice_len, job.n_in);
  let tx = (job.n_out + TILE_X - 1u) / TILE_X;
  let store_x = SPLIT_IN == 1 && job.x_splits > 1u && t % tx == 0u;
  let out0 = (t % tx) * TILE_X;
  let row0 = (t / tx) * TILE_Y;
  let z = lid.z;
  let tid = lid.x + WG_X * lid.y;
  let ox = 4u * lid.x;
  let ry = 4u * lid.y;
  let xs = z * STAGE;
  let ys = z * STAGE + TILE_K * SX4;

  // acc[r][c]: output ox + r, row ry + c.
  var acc: array<vec4<f32>, 4>;
  if (z == 0u && job.splits == 1u) {
    for (var r = 0u; r < 4u; r++) {
      let o = out0 + ox + r;
      var bias = 0.0;
      if (o < job.n_out) {
        bias = params[job.b_off + o];
      }
      acc[r] = vec4<f32>(bias);
    }
  }

  let rounds = ((k_end - k_begin + TILE_K - 1u) / TILE_K + WG_Z - 1u) / WG_Z;
  var next = load_tile(job, k_begin + z * TILE_K, k_end, out0, row0, tid, store_x);
  for (var round = 0u; round < rounds; round++) {
    let k0 = k_begin + (round * WG_Z + z) * TILE_K;
    for (var q = 0u; q < PX; q++) {
      let e = tid + q * THREADS;
      let m = e / TILE_K;
      stage[xs + (e % TILE_K) * SX4 + m / 4u][m % 4u] = next.w[q];
    }
    for (var q = 0u; q < PY; q++) {
      let e = tid + q * THREADS;
      let m = e / TILE_K;
      stage[ys + (e % TILE_K) * SY4 + m / 4u][m % 4u] = next.x[q];
    }
    workgroupBarrier();
    if (round + 1u < rounds) {
      next = load_tile(job, k0 + WG_Z * TILE_K, k_end, out0, row0, tid, store_x);
    }
    let valid = min(u32(TILE_K), k_end - min(k0, k_end));
    // A full k-tile takes the constant-trip loop, which the compiler unrolls.
    if (valid == TILE_K) {
      for (var k = 0u; k < TILE_K; k++) {
        let wv = stage[xs + k * SX4 + lid.x];
        let xv = stage[ys + k * SY4 + lid.y];
        for (var r = 0u; r < 4u; r++) {
          acc[r] = acc[r] + wv[r] * xv;
        }
      }
    } else {
      for (var k = 0u; k < valid; k++) {
        let wv = stage[xs + k * SX4 + lid.x];
        let xv = stage[ys + k * SY4 + lid.y];
        for (var r = 0u; r < 4u; r++) {
          acc[r] = acc[r] + wv[r] * xv;
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
  if (z > 0u) {
    return;
  }
  for (var g = 1u; g < WG_Z; g++) {
    for (var r = 0u; r < 4u; r++) {
      acc[r] = acc[r] + stage[((g - 1u) * THREADS + tid) * 4u + r];
    }
  }

  for (var c = 0u; c < 4u; c++) {
    let b = row0 + ry + c;
    for (var r = 0u; r < 4u; r++) {
      let o = out0 + ox + r;
      if (b < u.batch && o < job.n_out) {
        if (job.splits > 1u) {
          acts[job.y_scr + (slice * u.batch + b) * job.n_out + o] = acc[r][c];
        } else {
          acts[job.y_off + b * job.n_out + o] = activate(acc[r][c], job.act);
        }
      }
    }
  }
}
