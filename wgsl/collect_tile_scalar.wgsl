// Tile engine 0 of the collection kernels (collect_tile.wgsl, constant ENGINE 0): the f32 engine
// `foxhunt train` runs below 16 rows a workgroup, and on software adapters at every size.
// Thread shape: thread lid computes outputs j = tj + TJ * m (tj = lid % TJ, m < MJ_MAX) of rows
// te * ME + i (te = lid / TJ, i < ME); activations are scalars (`act_s`), weights are staged through
// workgroup memory in slices of KT inputs as XOR-swizzled vec4 quads (`ws`), the next slice loaded
// while this one computes. A snippet: collect_tile.wgsl includes it in its `//!if ENGINE == 0` block
// and defines the names it uses (Block, act_s, ws, KT4, PREFETCH, SWZ_*, qv).

// Weights of the fused layer at output j (block-local row jr), inputs k .. k + 3: the block is
// chosen once per quad, each input checked against its columns (zero weight elsewhere).
fn layer_quad(b0: Block, b1: Block, j: u32, k: u32) -> vec4<f32> {
  var blk = b0;
  var jr = j;
  if (j >= b0.rows) {
    blk = b1;
    jr = j - b0.rows;
  }
  let row = blk.w + jr * blk.k_len;
  return vec4<f32>(
    block_weight(blk, row, k),
    block_weight(blk, row, k + 1u),
    block_weight(blk, row, k + 2u),
    block_weight(blk, row, k + 3u),
  );
}

// Slot of quad k4 (inputs 4 * k4 .. 4 * k4 + 3 of the slice) of output j in ws.
fn ws_index(j: u32, k4: u32) -> u32 {
  return j * KT4 + (k4 ^ ((j / SWZ_DIV) & SWZ_MASK));
}

// Weights of slice s (inputs [s * KT, s * KT + KT)) this invocation stages: quad
// q = lid + p * WG_X of the slice is output q / KT4, inputs 4 * (q % KT4) + 0..3 (KT4
// invocations read one row's KT consecutive inputs: whole 32-byte sectors).
fn load_slice(dst: ptr<function, array<vec4<f32>, PREFETCH>>, b0: Block, b1: Block, s: u32, staged: u32, lid: u32) {
  for (var p = 0u; p < PREFETCH; p++) {
    let q = lid + p * WG_X;
    if (q < staged) {
      let j = q / KT4;
      let k = s * KT + (q % KT4) * 4u;
      (*dst)[p] = layer_quad(b0, b1, j, k);
    }
  }
}

// ---- engine 0: scalar activations, outputs strided over the threads ----
fn dense_scalar(b0: Block, b1: Block, k_start: u32, n_k: u32, kind: u32, to_q: bool, out_col: u32, lid: u32) {
  let n_out = b0.rows + b1.rows;
  let tj = lid % TJ;
  let r0 = (lid / TJ) * ME;
  var acc: array<f32, ME * MJ_MAX>;
  for (var m = 0u; m < MJ_MAX; m++) {
    let j = tj + TJ * m;
    var bias = 0.0;
    if (j < n_out) {
      bias = layer_bias(b0, b1, j);
    }
    for (var i = 0u; i < ME; i++) {
      acc[i * MJ_MAX + m] = bias;
    }
  }
  // The next slice's weights are loaded into registers while this slice computes, so the
  // global-memory latency hides behind the multiply-adds instead of stalling every slice.
  let slices = (n_k + KT - 1u) / KT;
  let staged = n_out * KT4;
  var next: array<vec4<f32>, PREFETCH>;
  load_slice(&next, b0, b1, k_start / KT, staged, lid);
  for (var s = k_start / KT; s < slices; s++) {
    let k0 = s * KT;
    for (var p = 0u; p < PREFETCH; p++) {
      let q = lid + p * WG_X;
      if (q < staged) {
        ws[ws_index(q / KT4, q % KT4)] = next[p];
      }
    }
    workgroupBarrier();
    if (s + 1u < slices) {
      load_slice(&next, b0, b1, s + 1u, staged, lid);
    }
    for (var kk = 0u; kk < KT; kk += 4u) {
      var x: array<vec4<f32>, ME>;
      for (var i = 0u; i < ME; i++) {
        let o = (r0 + i) * ACT_W + k0 + kk;
        x[i] = vec4<f32>(act_s[o], act_s[o + 1u], act_s[o + 2u], act_s[o + 3u]);
      }
      for (var m = 0u; m < MJ_MAX; m++) {
        let j = tj + TJ * m;
        let w = ws[ws_index(j, kk / 4u)];
        for (var i = 0u; i < ME; i++) {
          var a = acc[i * MJ_MAX + m];
          a = a + w.x * x[i].x;
          a = a + w.y * x[i].y;
          a = a + w.z * x[i].z;
          a = a + w.w * x[i].w;
          acc[i * MJ_MAX + m] = a;
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < ME; i++) {
    let r = r0 + i;
    for (var m = 0u; m < MJ_MAX; m++) {
      let j = tj + TJ * m;
      if (r < ROWS && j < n_out) {
        let y = activate(acc[i * MJ_MAX + m], kind);
        if (to_q) {
          qv[r * QW + out_col + j] = y;
        } else {
          act_s[r * ACT_W + out_col + j] = y;
        }
      }
    }
  }
}
