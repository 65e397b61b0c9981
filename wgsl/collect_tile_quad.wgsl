// Tile engine 2 of the collection kernels (collect_tile.wgsl, constant ENGINE 2): quad blocks, the
// f32 engine `foxhunt train` runs from 16 rows a workgroup on a GPU (plain DQN head and PPO).
// Activations are vec4s of 4 consecutive columns (`act_v`); thread lid computes the 4 consecutive
// outputs of each output quad oq = tq + TQ * m (tq = lid % TQ, m < MQ = 2, TQ = WS_OUT / (4 MQ)) for
// rows rg * MR + i (rg = lid / TQ, i < MR <= 4), in named accumulators. Staged weights are
// transposed (one vec4 holds an output quad's weights of one input), so a quad's accumulators take
// one vec4 multiply-add per input. It writes whole quads only (act_set4). Same bits as engine 0.
// A snippet: collect_tile.wgsl includes it in its `//!if ENGINE == 2` block.

// Weight of output j (of the fused layer's n_out) at input k: zero past n_out and outside the
// owning block's columns.
fn layer_weight(b0: Block, b1: Block, n_out: u32, j: u32, k: u32) -> f32 {
  if (j >= n_out) {
    return 0.0;
  }
  var blk = b0;
  var jr = j;
  if (j >= b0.rows) {
    blk = b1;
    jr = j - b0.rows;
  }
  return block_weight(blk, blk.w + jr * blk.k_len, k);
}

// Slot of output quad oq's weights of slice input kk in ws (transposed: one vec4 per quad and
// input). The XOR keeps the KT invocations that stage one quad's inputs on distinct bank groups
// while the readers of one input (consecutive quads) stay on a permutation of theirs.
fn wsq_index(oq: u32, kk: u32) -> u32 {
  return kk * WQ + (oq ^ (kk % 8u));
}

// The 2 x MR accumulator
// quads are named variables (no private array a compiler could leave in local memory when it
// does not unroll the loops, and no dynamically indexed vector component), and a staged item
// whose 4 outputs lie in one block's rows and columns reads its 4 weights with one bounds
// decision instead of one per weight. Same per-output order as engine 0.

// The 4 weights of output quad j .. j + 3 at input k (a staged item).
fn quad_weights(b0: Block, b1: Block, n_out: u32, j: u32, k: u32) -> vec4<f32> {
  var blk = b0;
  var jr = j;
  if (j >= b0.rows) {
    blk = b1;
    jr = j - b0.rows;
  }
  if (jr + 3u < blk.rows && k >= blk.k_lo && k < blk.k_lo + blk.k_len) {
    let o = blk.w + jr * blk.k_len + (k - blk.k_lo);
    return vec4<f32>(nets[o], nets[o + blk.k_len], nets[o + 2u * blk.k_len], nets[o + 3u * blk.k_len]);
  }
  return vec4<f32>(
    layer_weight(b0, b1, n_out, j, k),
    layer_weight(b0, b1, n_out, j + 1u, k),
    layer_weight(b0, b1, n_out, j + 2u, k),
    layer_weight(b0, b1, n_out, j + 3u, k),
  );
}

fn quad_bias(b0: Block, b1: Block, n_out: u32, j0: u32) -> vec4<f32> {
  var bias = vec4<f32>(0.0);
  for (var c = 0u; c < 4u; c++) {
    if (j0 + c < n_out) {
      bias[c] = layer_bias(b0, b1, j0 + c);
    }
  }
  return bias;
}

// The output store of one accumulator quad (row r, output quad oq).
fn quad_store(r: u32, oq: u32, a: vec4<f32>, n_out: u32, kind: u32, to_q: bool, out_col: u32) {
  let j0 = oq * 4u;
  if (j0 >= n_out) {
    return;
  }
  let y = vec4<f32>(activate(a.x, kind), activate(a.y, kind), activate(a.z, kind), activate(a.w, kind));
  if (to_q) {
    for (var c = 0u; c < 4u; c++) {
      if (j0 + c < n_out) {
        qv[r * QW + out_col + j0 + c] = y[c];
      }
    }
  } else {
    act_v[r * ACT_W4 + out_col / 4u + oq] = y;
  }
}

fn dense_quad2(b0: Block, b1: Block, k_start: u32, n_k: u32, kind: u32, to_q: bool, out_col: u32, lid: u32) {
  let n_out = b0.rows + b1.rows;
  let tq = lid % TQ;
  let r0 = (lid / TQ) * MR;
  let bias0 = quad_bias(b0, b1, n_out, tq * 4u);
  let bias1 = quad_bias(b0, b1, n_out, (tq + TQ) * 4u);
  var a00 = bias0;
  var a01 = bias1;
  var a10 = bias0;
  var a11 = bias1;
  var a20 = bias0;
  var a21 = bias1;
  var a30 = bias0;
  var a31 = bias1;
  let slices = (n_k + KT - 1u) / KT;
  var next: array<vec4<f32>, PREFETCH_Q>;
  for (var p = 0u; p < PREFETCH_Q; p++) {
    let q = lid + p * WG_X;
    if ((q / KT) * 4u < n_out) {
      next[p] = quad_weights(b0, b1, n_out, (q / KT) * 4u, k_start + q % KT);
    }
  }
  for (var s = k_start / KT; s < slices; s++) {
    let k0 = s * KT;
    for (var p = 0u; p < PREFETCH_Q; p++) {
      let q = lid + p * WG_X;
      if ((q / KT) * 4u < n_out) {
        ws[wsq_index(q / KT, q % KT)] = next[p];
      }
    }
    workgroupBarrier();
    if (s + 1u < slices) {
      for (var p = 0u; p < PREFETCH_Q; p++) {
        let q = lid + p * WG_X;
        if ((q / KT) * 4u < n_out) {
          next[p] = quad_weights(b0, b1, n_out, (q / KT) * 4u, k0 + KT + q % KT);
        }
      }
    }
    for (var k4 = 0u; k4 < KT4; k4++) {
      let kv = k0 / 4u + k4;
      let kk = k4 * 4u;
      let x0 = act_v[r0 * ACT_W4 + kv];
      var x1 = vec4<f32>(0.0);
      var x2 = vec4<f32>(0.0);
      var x3 = vec4<f32>(0.0);
      if (MR > 1u) {
        x1 = act_v[(r0 + 1u) * ACT_W4 + kv];
      }
      if (MR > 2u) {
        x2 = act_v[(r0 + 2u) * ACT_W4 + kv];
      }
      if (MR > 3u) {
        x3 = act_v[(r0 + 3u) * ACT_W4 + kv];
      }
      var w0: vec4<f32>;
      var w1: vec4<f32>;
      w0 = ws[wsq_index(tq, kk + 0u)];
      w1 = ws[wsq_index(tq + TQ, kk + 0u)];
      a00 = a00 + w0 * x0.x;
      a01 = a01 + w1 * x0.x;
      if (MR > 1u) {
        a10 = a10 + w0 * x1.x;
        a11 = a11 + w1 * x1.x;
      }
      if (MR > 2u) {
        a20 = a20 + w0 * x2.x;
        a21 = a21 + w1 * x2.x;
      }
      if (MR > 3u) {
        a30 = a30 + w0 * x3.x;
        a31 = a31 + w1 * x3.x;
      }
      w0 = ws[wsq_index(tq, kk + 1u)];
      w1 = ws[wsq_index(tq + TQ, kk + 1u)];
      a00 = a00 + w0 * x0.y;
      a01 = a01 + w1 * x0.y;
      if (MR > 1u) {
        a10 = a10 + w0 * x1.y;
        a11 = a11 + w1 * x1.y;
      }
      if (MR > 2u) {
        a20 = a20 + w0 * x2.y;
        a21 = a21 + w1 * x2.y;
      }
      if (MR > 3u) {
        a30 = a30 + w0 * x3.y;
        a31 = a31 + w1 * x3.y;
      }
      w0 = ws[wsq_index(tq, kk + 2u)];
      w1 = ws[wsq_index(tq + TQ, kk + 2u)];
      a00 = a00 + w0 * x0.z;
      a01 = a01 + w1 * x0.z;
      if (MR > 1u) {
        a10 = a10 + w0 * x1.z;
        a11 = a11 + w1 * x1.z;
      }
      if (MR > 2u) {
        a20 = a20 + w0 * x2.z;
        a21 = a21 + w1 * x2.z;
      }
      if (MR > 3u) {
        a30 = a30 + w0 * x3.z;
        a31 = a31 + w1 * x3.z;
      }
      w0 = ws[wsq_index(tq, kk + 3u)];
      w1 = ws[wsq_index(tq + TQ, kk + 3u)];
      a00 = a00 + w0 * x0.w;
      a01 = a01 + w1 * x0.w;
      if (MR > 1u) {
        a10 = a10 + w0 * x1.w;
        a11 = a11 + w1 * x1.w;
      }
      if (MR > 2u) {
        a20 = a20 + w0 * x2.w;
        a21 = a21 + w1 * x2.w;
      }
      if (MR > 3u) {
        a30 = a30 + w0 * x3.w;
        a31 = a31 + w1 * x3.w;
      }
    }
    workgroupBarrier();
  }
  quad_store(r0, tq, a00, n_out, kind, to_q, out_col);
  quad_store(r0, tq + TQ, a01, n_out, kind, to_q, out_col);
  if (MR > 1u) {
    quad_store(r0 + 1u, tq, a10, n_out, kind, to_q, out_col);
    quad_store(r0 + 1u, tq + TQ, a11, n_out, kind, to_q, out_col);
  }
  if (MR > 2u) {
    quad_store(r0 + 2u, tq, a20, n_out, kind, to_q, out_col);
    quad_store(r0 + 2u, tq + TQ, a21, n_out, kind, to_q, out_col);
  }
  if (MR > 3u) {
    quad_store(r0 + 3u, tq, a30, n_out, kind, to_q, out_col);
    quad_store(r0 + 3u, tq + TQ, a31, n_out, kind, to_q, out_col);
  }
}
