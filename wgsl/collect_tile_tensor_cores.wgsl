// Tile engine 4 of the collection kernels (collect_tile.wgsl, constant ENGINE 4; the WebGPU f16
// precision above N = 2,048): tensor cores through Dawn's subgroup matrices. A snippet:
// collect_tile.wgsl includes it in its `//!if ENGINE == 4` block (act_h, res_k, NSG, KSPLIT, qv
// and mma_offset are defined there); the module opens with `enable f16;` and
// `enable chromium_experimental_subgroup_matrix;` and binds nets16 as f16 (pack_half's layout).
//

// ---- engine 4: tensor cores through subgroup matrices (f16 operands, f32 accumulation) ----
// The layer's weights are a packed f16 matrix in nets16 (src/kernels/collect_half.ts: one
// matrix per op, both blocks of a fused layer in their output order, zero outside a block's
// columns, outputs and inputs padded to multiples of 16), found by the op's first block
// (mma_offset). Subgroup sg owns the output tiles 2 sg and 2 sg + 1 (16 outputs each; a
// 256-wide layer has 16, so 8 subgroups cover it; a narrower layer's spare subgroups repeat its
// last tile and drop it) for all MT row tiles: per 16 inputs it loads its 2 weight tiles from
// nets16 (column-major: W is [out, in]) and MT activation tiles from act_h, and issues 2 MT
// multiply-accumulates. After a barrier (every subgroup has read the input) each row tile's two
// result tiles go through the subgroup's scratch: bias, activation, then f16 into act_h (in
// place); a heads op stores its f32 tiles into qv directly and adds the bias there.
// Numerics: the products of f16-rounded weights and activations summed in f32 in the tensor
// core's order, the bias added last; activations are clamped to the f16 range (+-65504) when
// stored. Q-values (qv) stay f32. Not bit-identical to the reference: a tolerance mode, like
// the CUDA kernels' TF32.
alias MmA = subgroup_matrix_left<f16, 16, 16>;
alias MmB = subgroup_matrix_right<f16, 16, 16>;
alias MmC = subgroup_matrix_result<f32, 16, 16>;

fn to_half(x: f32) -> f16 {
  return f16(clamp(x, -65504.0, 65504.0));
}

// Result tiles ca (outputs 16 ta..) and cb (16 tb..) of row tile mt through this subgroup's two
// scratch slots (in qv) into act_h; keep_a / keep_b are false for a spare
// subgroup's repeated tile. Every invocation calls it (barriers).
fn mma_out(ca: MmC, cb: MmC, mt: u32, ta: u32, tb: u32, keep_a: bool, keep_b: bool, b0: Block, b1: Block, kind: u32, out_col: u32, lid: u32, sg: u32) {
  let slot = sg * 512u;
  subgroupMatrixStore<row_major>(&qv, slot, ca, 16u);
  subgroupMatrixStore<row_major>(&qv, slot + 256u, cb, 16u);
  workgroupBarrier();
  let n_out = b0.rows + b1.rows;
  for (var e = lid % 32u; e < 512u; e += 32u) {
    let second = e >= 256u;
    let r = mt * 16u + (e % 256u) / 16u;
    let j = select(ta, tb, second) * 16u + e % 16u;
    if (select(keep_a, keep_b, second) && j < n_out) {
      act_h[r * ACT_W + out_col + j] = to_half(activate(qv[slot + e] + layer_bias(b0, b1, j), kind));
    }
  }
  workgroupBarrier();
}

// A heads op's tile c (rows 16 mt.., outputs 16 t..) straight into qv (row stride QW); a spare
// subgroup's repeated tile goes to the spare rows past ROWS.
fn mma_q(c: MmC, mt: u32, t: u32, keep: bool) {
  let at = select(ROWS * QW, mt * 16u * QW + t * 16u, keep);
  subgroupMatrixStore<row_major>(&qv, at, c, QW);
}

//!if MMA_KSPLIT == 2
// The K split (KSPLIT 2, 512 threads, MT 1: small tiles, where a layer is a latency chain of
// 16-input steps): subgroup sg works on output tiles 2 (sg % 8) and 2 (sg % 8) + 1 over the input
// steps s = sg / 8, sg / 8 + 2, ..., so each chain is half as long; both halves store their
// partial tiles into res_k and the whole workgroup adds them (half 0 first), then the bias and
// activation, into act_h (f16) or qv (f32).
fn dense_mma_ksplit(b0: Block, b1: Block, n_k: u32, kind: u32, to_q: bool, out_col: u32, lid: u32, sg: u32) {
  let n_out = b0.rows + b1.rows;
  let steps = (n_k + 15u) / 16u;
  let kp = steps * 16u;
  let tiles = (n_out + 15u) / 16u;
  let off = mma_offset(b0.w);
  let pair = sg % 8u;
  let t0 = min(2u * pair, tiles - 1u);
  let t1 = min(2u * pair + 1u, tiles - 1u);
  let w0 = off + t0 * 16u * kp;
  let w1 = off + t1 * 16u * kp;
  var c0 = MmC();
  var c1 = MmC();
  for (var st = sg / 8u; st < steps; st += KSPLIT) {
    let k = st * 16u;
    let b_0 = subgroupMatrixLoad<MmB, col_major>(&nets16, w0 + k, kp);
    let b_1 = subgroupMatrixLoad<MmB, col_major>(&nets16, w1 + k, kp);
    let a0 = subgroupMatrixLoad<MmA, row_major>(&act_h, k, ACT_W);
    c0 = subgroupMatrixMultiplyAccumulate(a0, b_0, c0);
    c1 = subgroupMatrixMultiplyAccumulate(a0, b_1, c1);
  }
  subgroupMatrixStore<row_major>(&res_k, sg * 512u, c0, 16u);
  subgroupMatrixStore<row_major>(&res_k, sg * 512u + 256u, c1, 16u);
  workgroupBarrier();
  // Element e of pair p's two tiles: res_k[p * 512 + e] (steps 0, 2, ..) + res_k[(p + 8) * 512 + e].
  for (var i = lid; i < 8u * 512u; i += WG_X) {
    let p = i / 512u;
    let e = i % 512u;
    let t = 2u * p + e / 256u;
    let r = (e % 256u) / 16u;
    let j = t * 16u + e % 16u;
    if (t < tiles && j < n_out) {
      let y = activate((res_k[i] + res_k[i + 8u * 512u]) + layer_bias(b0, b1, j), kind);
      if (to_q) {
        qv[r * QW + out_col + j] = y;
      } else {
        act_h[r * ACT_W + out_col + j] = to_half(y);
      }
    }
  }
}
//!endif

// Each 16-input step loads its own weight tiles (loading the next step's ahead measured slower).
// Accumulators: 2 output tiles x MT row tiles (MT <= 3).
fn dense_mma(b0: Block, b1: Block, n_k: u32, kind: u32, to_q: bool, out_col: u32, lid: u32, sg: u32) {
//!if MMA_KSPLIT == 2
  if (KSPLIT > 1) {
    dense_mma_ksplit(b0, b1, n_k, kind, to_q, out_col, lid, sg);
    return;
  }
//!endif
  let n_out = b0.rows + b1.rows;
  let kp = (n_k + 15u) / 16u * 16u;
  let tiles = (n_out + 15u) / 16u;
  let off = mma_offset(b0.w);
  let t0 = min(2u * sg, tiles - 1u);
  let t1 = min(2u * sg + 1u, tiles - 1u);
  let w0 = off + t0 * 16u * kp;
  let w1 = off + t1 * 16u * kp;
  var c00 = MmC();
  var c01 = MmC();
  var c10 = MmC();
  var c11 = MmC();
  var c20 = MmC();
  var c21 = MmC();
  for (var k = 0u; k < kp; k += 16u) {
    let b_0 = subgroupMatrixLoad<MmB, col_major>(&nets16, w0 + k, kp);
    let b_1 = subgroupMatrixLoad<MmB, col_major>(&nets16, w1 + k, kp);
    let a0 = subgroupMatrixLoad<MmA, row_major>(&act_h, k, ACT_W);
    c00 = subgroupMatrixMultiplyAccumulate(a0, b_0, c00);
    c01 = subgroupMatrixMultiplyAccumulate(a0, b_1, c01);
    if (MT > 1) {
      let a1 = subgroupMatrixLoad<MmA, row_major>(&act_h, 16u * ACT_W + k, ACT_W);
      c10 = subgroupMatrixMultiplyAccumulate(a1, b_0, c10);
      c11 = subgroupMatrixMultiplyAccumulate(a1, b_1, c11);
    }
    if (MT > 2) {
      let a2 = subgroupMatrixLoad<MmA, row_major>(&act_h, 32u * ACT_W + k, ACT_W);
      c20 = subgroupMatrixMultiplyAccumulate(a2, b_0, c20);
      c21 = subgroupMatrixMultiplyAccumulate(a2, b_1, c21);
    }
  }
  workgroupBarrier();
  let keep0 = 2u * sg < tiles;
  let keep1 = 2u * sg + 1u < tiles;
  if (to_q) {
    // Heads: f32 Q-values straight into qv, then the bias (no activation: ACT_NONE).
    mma_q(c00, 0u, t0, keep0);
    mma_q(c01, 0u, t1, keep1);
    if (MT > 1) {
      mma_q(c10, 1u, t0, keep0);
      mma_q(c11, 1u, t1, keep1);
    }
    if (MT > 2) {
      mma_q(c20, 2u, t0, keep0);
      mma_q(c21, 2u, t1, keep1);
    }
    workgroupBarrier();
    for (var e = lid; e < ROWS * n_out; e += WG_X) {
      let r = e / n_out;
      let j = e % n_out;
      qv[r * QW + out_col + j] = activate(qv[r * QW + out_col + j] + layer_bias(b0, b1, j), kind);
    }
    return;
  }
  mma_out(c00, c01, 0u, t0, t1, keep0, keep1, b0, b1, kind, out_col, lid, sg);
  if (MT > 1) {
    mma_out(c10, c11, 1u, t0, t1, keep0, keep1, b0, b1, kind, out_col, lid, sg);
  }
  if (MT > 2) {
    mma_out(c20, c21, 2u, t0, t1, keep0, keep1, b0, b1, kind, out_col, lid, sg);
  }
}
