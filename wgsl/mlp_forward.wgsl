// mlp_forward: one dense layer of up to two networks per launch (grouped GEMM), outputs kept as
// the activations the backward pass reads. Job j: for b < batch, o < out_j
//   acts[yOff_j + b * out_j + o] = act_j(params[bOff_j + o] + sum_i params[wOff_j + o * in_j + i] * acts[xOff_j + b * in_j + i])
// Bindings (declared by the preamble generated from src/kernels/mlp_forward.ts):
//   params: array<f32>, read: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: array<f32>, read_write: input rows at xOff_j, output rows at yOff_j (disjoint)
//   u: Uniforms { batch, in0, out0, wOff0, bOff0, xOff0, yOff0, act0, in1, ... act1 }
//      (act: 0 none, 1 relu, 2 leaky 0.01; out_j = 0: job absent)
// Workgroup: WG_X x WG_Y x WG_Z threads own a TILE_X (outputs) x TILE_Y (rows) tile; flat workgroup
// id = tiles of job 0, then of job 1. Thread (x, y) of k-group z computes the 4 x 4 outputs 4x.. x
// rows 4y.. over the k-tiles z, z + WG_Z, ... (TILE_K inputs each, staged k-major in workgroup
// memory as vec4 rows padded by one vec4: two vec4 reads per k for 16 multiply-adds); the WG_Z
// partial tiles are then summed in group order through the same workgroup memory. Splitting K
// inside the workgroup shortens the latency-bound loop over inputs with no extra launch. Each
// thread stages PX weights and PY inputs per k-tile: the next k-tile's global loads are all issued
// into registers before the current tile's math (fixed trip counts, so they unroll and overlap)
// instead of one load-then-store at a time.
// Numerics: f32; group 0 starts at the bias, each group adds its products in increasing i, and the
// groups' sums are added in order; the compiler may fuse multiply-adds (tolerance, not
// bit-exactness, against the TS reference's single running sum).

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
}

// One k-tile of a k-group in registers: W[out0 + e / TILE_K, k0 + e % TILE_K] and
// x[row0 + e / TILE_K, k0 + e % TILE_K] for e = tid + q * THREADS (zero outside the layer).
struct Staged {
  w: array<f32, PX>,
  x: array<f32, PY>,
}

fn load_tile(job: Job, k0: u32, out0: u32, row0: u32, tid: u32) -> Staged {
  var s: Staged;
  for (var q = 0u; q < PX; q++) {
    let e = tid + q * THREADS;
    let o = out0 + e / TILE_K;
    let k = k0 + e % TILE_K;
    var v = 0.0;
    if (o < job.n_out && k < job.n_in) {
      v = params[job.w_off + o * job.n_in + k];
    }
    s.w[q] = v;
  }
  for (var q = 0u; q < PY; q++) {
    let e = tid + q * THREADS;
    let b = row0 + e / TILE_K;
    let k = k0 + e % TILE_K;
    var v = 0.0;
    if (b < u.batch && k < job.n_in) {
      v = acts[job.x_off + b * job.n_in + k];
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
  return ((n_out + TILE_X - 1u) / TILE_X) * ((u.batch + TILE_Y - 1u) / TILE_Y);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn mlp_forward(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_id) lid: vec3<u32>,
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
  let z = lid.z;
  let tid = lid.x + WG_X * lid.y;
  let ox = 4u * lid.x;
  let ry = 4u * lid.y;
  let xs = z * STAGE;
  let ys = z * STAGE + TILE_K * SX4;

  // acc[r][c]: output ox + r, row ry + c.
  var acc: array<vec4<f32>, 4>;
  if (z == 0u) {
    for (var r = 0u; r < 4u; r++) {
      let o = out0 + ox + r;
      var bias = 0.0;
      if (o < job.n_out) {
        bias = params[job.b_off + o];
      }
      acc[r] = vec4<f32>(bias);
    }
  }

  let k_tiles = (job.n_in + TILE_K - 1u) / TILE_K;
  let rounds = (k_tiles + WG_Z - 1u) / WG_Z;
  var next = load_tile(job, z * TILE_K, out0, row0, tid);
  for (var round = 0u; round < rounds; round++) {
    let k0 = (round * WG_Z + z) * TILE_K;
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
      next = load_tile(job, k0 + WG_Z * TILE_K, out0, row0, tid);
    }
    let valid = min(u32(TILE_K), job.n_in - min(k0, job.n_in));
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
        acts[job.y_off + b * job.n_out + o] = activate(acc[r][c], job.act);
      }
    }
  }
}
