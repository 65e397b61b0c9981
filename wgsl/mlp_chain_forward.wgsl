// mlp_chain_forward: the forward of consecutive layers of ONE chain network in one launch, a tile
// of ROWS rows per workgroup kept in workgroup memory from layer to layer. Layer c < layers:
//   acts[yOff_c + b * out_c + o] = act_c(params[bOff_c + o] + sum_i params[wOff_c + o * in_c + i] * x_c[b, i])
// x_0 = the rows at acts[xOff] (in0 wide), x_c = layer c - 1's outputs (in_c = out_{c-1}).
// Bindings (declared by the preamble generated from src/kernels/mlp_chain_forward.ts):
//   params: array<f32>, read: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: array<f32>, read_write: the first input rows at xOff, each layer's output rows at yOff_c
//   u: Uniforms { batch, layers, xOff, in0, then per layer c < 4: out, wOff, bOff, yOff, act }
//      (act: 0 none, 1 relu, 2 leaky 0.01; widths <= MAX_WIDTH)
// Workgroup w owns rows w * ROWS ..; its THREADS = MAX_WIDTH invocations take each layer as G
// k-groups of out_c invocations (G the largest power of two with G * out_c <= THREADS and G <= the
// input's CHUNKs): invocation (g, o) adds output o's products over input slice g (whole CHUNKs,
// increasing i) for all ROWS rows, each weight read once from global memory (the next CHUNK's
// weights loaded before this one multiplies) and the inputs from workgroup memory. Group 0 starts
// at the bias; groups 1.. park their sums in the tile (free once everyone has read it) and group 0
// adds them in group order, activates, and writes the outputs to the tile and to acts.
// Numerics: f32, a fixed order (the same bits every run); the compiler may fuse multiply-adds and
// the sum is split by groups, so the twins agree with the TS reference to a tolerance.

const THREADS = WG_X * WG_Y * WG_Z;
const_assert THREADS == MAX_WIDTH;

var<workgroup> tile: array<f32, ROWS * MAX_WIDTH>;

struct ChainLayer {
  n_out: u32,
  w_off: u32,
  b_off: u32,
  y_off: u32,
  act: u32,
}

fn chain_layer(c: u32) -> ChainLayer {
  if (c == 0u) {
    return ChainLayer(u.out0, u.wOff0, u.bOff0, u.yOff0, u.act0);
  }
  if (c == 1u) {
    return ChainLayer(u.out1, u.wOff1, u.bOff1, u.yOff1, u.act1);
  }
  if (c == 2u) {
    return ChainLayer(u.out2, u.wOff2, u.bOff2, u.yOff2, u.act2);
  }
  return ChainLayer(u.out3, u.wOff3, u.bOff3, u.yOff3, u.act3);
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

// k-groups of a layer (src/kernels/mlp_chain_forward.ts: chainGroups).
fn chain_groups(n_in: u32, n_out: u32) -> u32 {
  let chunks = (n_in + CHUNK - 1u) / CHUNK;
  var g = 1u;
  while (2u * g * n_out <= THREADS && 2u * g <= chunks) {
    g = 2u * g;
  }
  return g;
}

fn load_chunk(w: u32, k0: u32) -> array<f32, CHUNK> {
  var v: array<f32, CHUNK>;
  for (var q = 0u; q < CHUNK; q++) {
    v[q] = params[w + k0 + q];
  }
  return v;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn mlp_chain_forward(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let block = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  // The whole workgroup leaves (uniform: no barrier is skipped by part of it).
  if (block * ROWS >= u.batch) {
    return;
  }
  let row0 = block * ROWS;
  let rows = min(u32(ROWS), u.batch - row0);

  // Stage the first input rows (contiguous in acts; zeros past the batch).
  var n_in = u.in0;
  for (var e = tid; e < ROWS * n_in; e += THREADS) {
    var v = 0.0;
    if (e < rows * n_in) {
      v = acts[u.xOff + row0 * n_in + e];
    }
    tile[e] = v;
  }
  workgroupBarrier();

  for (var c = 0u; c < u.layers; c++) {
    let L = chain_layer(c);
    let groups = chain_groups(n_in, L.n_out);
    let g = tid / L.n_out;
    let o = tid % L.n_out;
    let busy = g < groups;
    var acc: array<f32, ROWS>;
    if (busy) {
      let slice = ((n_in + CHUNK - 1u) / CHUNK + groups - 1u) / groups * CHUNK;
      let k_begin = min(g * slice, n_in);
      let k_end = min(k_begin + slice, n_in);
      var bias = 0.0;
      if (g == 0u) {
        bias = params[L.b_off + o];
      }
      for (var r = 0u; r < ROWS; r++) {
        acc[r] = bias;
      }
      let w = L.w_off + o * n_in;
      var k = k_begin;
      var next: array<f32, CHUNK>;
      if (k + CHUNK <= k_end) {
        next = load_chunk(w, k);
      }
      for (; k + CHUNK <= k_end; k += CHUNK) {
        let wr = next;
        if (k + 2u * CHUNK <= k_end) {
          next = load_chunk(w, k + CHUNK);
        }
        for (var r = 0u; r < ROWS; r++) {
          var a = acc[r];
          for (var q = 0u; q < CHUNK; q++) {
            a = a + wr[q] * tile[r * n_in + k + q];
          }
          acc[r] = a;
        }
      }
      // A ragged last chunk.
      for (; k < k_end; k++) {
        let wk = params[w + k];
        for (var r = 0u; r < ROWS; r++) {
          acc[r] = acc[r] + wk * tile[r * n_in + k];
        }
      }
    }
    workgroupBarrier();  // everyone has read the tile: it takes the groups' sums now
    if (busy && g > 0u) {
      for (var r = 0u; r < ROWS; r++) {
        tile[(g * ROWS + r) * L.n_out + o] = acc[r];
      }
    }
    workgroupBarrier();
    if (busy && g == 0u) {
      for (var h = 1u; h < groups; h++) {
        for (var r = 0u; r < ROWS; r++) {
          acc[r] = acc[r] + tile[(h * ROWS + r) * L.n_out + o];
        }
      }
      for (var r = 0u; r < ROWS; r++) {
        let v = activate(acc[r], L.act);
        tile[r * L.n_out + o] = v;  // group 0's slots: no other invocation reads them now
        if (r < rows) {
          acts[L.y_off + (row0 + r) * L.n_out + o] = v;
        }
      }
    }
    workgroupBarrier();
    n_in = L.n_out;
  }
}
