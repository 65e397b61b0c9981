// Tile engine of the collection kernels: a workgroup computes dense layers for the ROWS rows it
// owns (rows = episodes of the tile, or episode x tau pairs for IQN) as small matrix products,
// Y[r, j] = act(b[j] + sum_k W[j, k] * X[r, k]), with X in workgroup memory (`act`, ROWS rows of
// ACT_W floats) and W streamed through workgroup memory in k-slices of KT (`ws`, vec4 quads of
// four consecutive inputs of one output).
// A snippet: the kernel that includes it (`//!include collect_tile.wgsl`) defines
//   ROWS, ACT_W (row stride of act, a multiple of 4), QW (row stride of qv), WS_OUT (widest
//   layer output) and MJ_MAX (ceil(WS_OUT / TJ)),
// and the spec constants give WG_X (threads), TJ (threads across outputs) and KT (k-slice, a
// multiple of 4). Weights are read from the `nets` binding (src/nets/layout.ts flat layout).
//
// Thread shape: thread lid computes outputs j = tj + TJ * m (tj = lid % TJ, m < MJ_MAX) of rows
// te * ME + i (te = lid / TJ, i < ME, ME = ceil(ROWS / (WG_X / TJ))); its ME x MJ_MAX
// accumulators stay in registers for the whole layer, so a layer can write its output over its
// own input (after a barrier) and one ROWS x ACT_W buffer serves every layer. With TJ = 32 a
// warp shares its rows: X reads are workgroup-memory broadcasts. W is read as one vec4 per
// output and 4 inputs (a quarter of the load instructions, and of Tint's robustness clamps, of
// scalar reads); the quads of an output are XOR-swizzled so the 8 invocations of a quarter-warp,
// reading 8 consecutive outputs, hit 8 distinct 16-byte bank groups without padding.
// A layer is one or two weight blocks: outputs [0, rows0) from block 0 and [rows0, rows0 +
// rows1) from block 1; a block reads input columns [k_lo, k_lo + k_len) (zero weight
// elsewhere). Two blocks fuse the value and advantage streams (same input) and the two heads
// (different halves of the input) into one pass.
//
// Engines (constant ENGINE; all give the same bits): 0, the thread shape above, activations
// as scalars (`act_s`); 1, quad blocks: activations as vec4 of 4 consecutive columns (`act_v`),
// and thread lid computes the 4 consecutive outputs of each output quad oq = tq + TQ * m
// (tq = lid % TQ, m < MQ, TQ = WS_OUT / (4 * MQ)) for rows rg * MR + i (rg = lid / TQ, i < MR):
// per input it reads MR activation vec4s (one per 4 inputs, broadcast: a warp shares its
// rows) and MQ weight vec4s (`ws` transposed: one vec4 holds an output quad's weights of one
// input, so the accumulators of a quad take one vec4 multiply-add per input), a third of the
// load instructions of engine 0 and no per-output index arithmetic; it writes whole quads, so
// no invocation ever stores a single component of a shared vector. Every writer of act goes
// through act_set4 (whole quads) for that reason (one exception: engine 5's GV_PP layers, whose
// threads store named components, see dense_gv). 2, engine 1 unrolled (MQ = 2, MR <= 4: named
// accumulators, see dense_quad2), on act_v like engine 1.
//
// 4, tensor cores (`dense_mma`, the f16 precision mode): activations as f16 (`act_h`), weights
// as an f16 copy in subgroup-matrix tiles (`nets16`, packed by pack_half), each subgroup
// multiplying 16 x 16 x 16 tiles with f32 accumulation; not the same bits (see dense_mma).
//
// Each engine's functions, workgroup arrays and branches sit in `//!if ENGINE == ...` blocks: the
// WebGPU backend compiles a module with its own engine's code only (src/backend/webgpu/preamble.ts
// selectWgsl), so a shader compiler never sees the other engines' dead code. Unresolved, the
// source is still one valid module (the blocks are comments and the ENGINE tests decide).
//
// Numerics: each accumulator starts at the bias and adds w * x in increasing k (the reference
// order); the compiler may fuse the multiply-add. Padding columns of X (between a layer's input
// width and the next multiple of KT) must hold finite values: their weights are zero, so they
// add exactly 0. Every invocation of the workgroup must call `dense` (it has barriers), and
// the caller puts a barrier after it before anything reads the output.

const ACT_NONE = 0u;
const ACT_RELU = 1u;
const ACT_LEAKY = 2u;
const TE = WG_X / TJ;
const ME = (ROWS + TE - 1) / TE;
// Quads per output and slice.
const KT4 = KT / 4;
// ACT_W4 vec4s per activation row.
const ACT_W4 = ACT_W / 4;
//!if ENGINE == 0
// Outputs sharing a 128-byte bank line (8 quads); the swizzle mask (none when KT4 is not a power
// of two: XOR could leave the output's quads).
const SWZ_DIV = max(8 / KT4, 1);
const SWZ_MASK = select(0, KT4 - 1, (KT4 & (KT4 - 1)) == 0);
// Staged weight quads per invocation and slice.
const PREFETCH = (WS_OUT * KT4 + WG_X - 1) / WG_X;
//!endif

//!if ENGINE == 2
// Engine 1's quad blocks (see the header).
const TQ = WS_OUT / (4 * MQ);
const RG = WG_X / TQ;
const MR = (ROWS + RG - 1) / RG;
const WQ = WS_OUT / 4;
const PREFETCH_Q = (WQ * KT + WG_X - 1) / WG_X;
//!endif

// Engines 0 and 3 read scalar activations, engines 1 and 2 vec4s. Unresolved, the unused one is
// one element.
const SCALAR = ENGINE == 0;
//!if ENGINE == 0
var<workgroup> act_s: array<f32, select(1, ROWS * ACT_W, SCALAR)>;
//!endif
// Activation buffers: one, or engine 5's two with GV_PP (its dual pass's layers read one and write
// the other).
//!if ENGINE == 5
const ACT_BUFS = 1u + GV_PP;
//!endif
//!if ENGINE != 5
const ACT_BUFS = 1u;
//!endif
//!if ENGINE == 2, 5
var<workgroup> act_v: array<vec4<f32>, select(1, ROWS * ACT_W4 * ACT_BUFS, !SCALAR)>;
//!endif
// Staged weights: vec4 quads (engines 0-2); engine 3 stages scalars, KT + 1 per output (the
// padding word keeps a warp's 32 outputs on 32 banks). Unresolved, the unused one is one element.
//!if ENGINE == 0, 2
var<workgroup> ws: array<vec4<f32>, WS_OUT * KT4>;
//!endif
//!if ENGINE == 4
// Engine 4: f16 activations (rows of ACT_W halves, a multiple of 8 so every tile row starts on
// 16 bytes). Its epilogue scratch (two 16 x 16 f32 result tiles per subgroup) shares qv's
// memory: Q-values live from a heads op to the action / TD op after it, with no other layer in
// between, and a heads op stores its tiles straight into qv (16 spare rows past ROWS take the
// repeated tiles of subgroups without one of their own).
const NSG = WG_X / 32;
// K split (512 threads, one row tile): subgroups sg and sg + 8 take alternate 16-input steps of the
// same output tiles, and the epilogue adds their partial tiles from `res_k` (not shared with qv).
const KSPLIT = MMA_KSPLIT;
var<workgroup> act_h: array<f16, ROWS * ACT_W>;
//!if MMA_KSPLIT == 2
var<workgroup> res_k: array<f32, NSG * 512>;
//!endif
const QV_LEN = select(max((ROWS + 16) * QW, NSG * 512), ROWS * QW, KSPLIT > 1);
//!endif
//!if ENGINE != 4
const QV_LEN = ROWS * QW;
//!endif
// The tile row of an episode's target-net Q-values: TILE_E + its own row in engine 5's dual pass
// (GV_DUAL 1), else its own.
//!if ENGINE == 5
const TD_ROW0 = select(0u, TILE_E, GV_DUAL == 1);
//!endif
//!if ENGINE != 5
const TD_ROW0 = 0u;
//!endif
var<workgroup> qv: array<f32, QV_LEN>;

struct Block {
  // Offsets of the weight [rows, k_len] and bias [rows] in nets.
  w: u32,
  b: u32,
  rows: u32,
  k_lo: u32,
  k_len: u32,
}

fn block(w: u32, b: u32, rows: u32, k_lo: u32, k_len: u32) -> Block {
  return Block(w, b, rows, k_lo, k_len);
}

const NO_BLOCK = Block(0u, 0u, 0u, 0u, 0u);

fn activate(a: f32, kind: u32) -> f32 {
  if (kind == ACT_RELU) {
    return select(0.0, a, a > 0.0);
  }
  if (kind == ACT_LEAKY) {
    return select(a * 0.01, a, a > 0.0);
  }
  return a;
}

fn act_get(r: u32, k: u32) -> f32 {
//!if ENGINE == 4
  if (ENGINE == 4) {
    return f32(act_h[r * ACT_W + k]);
  }
//!endif
//!if ENGINE == 2, 5
  if (!SCALAR) {
    return act_v[r * ACT_W4 + k / 4u][k % 4u];
  }
//!endif
//!if ENGINE == 0
  if (SCALAR) {
    return act_s[r * ACT_W + k];
  }
//!endif
  return 0.0;
}

// Columns 4 * k4 .. 4 * k4 + 3 of row r. Whole quads only: a store to one component of a
// shared vector may be compiled as a read-modify-write of the whole vector (HLSL, a dynamically
// indexed component), a race between invocations writing neighbours.
fn act_set4(r: u32, k4: u32, v: vec4<f32>) {
//!if ENGINE == 4
  if (ENGINE == 4) {
    let o = r * ACT_W + 4u * k4;
    act_h[o] = to_half(v.x);
    act_h[o + 1u] = to_half(v.y);
    act_h[o + 2u] = to_half(v.z);
    act_h[o + 3u] = to_half(v.w);
    return;
  }
//!endif
//!if ENGINE == 2, 5
  if (!SCALAR) {
    act_v[r * ACT_W4 + k4] = v;
  }
//!endif
//!if ENGINE == 0
  if (SCALAR) {
    let o = r * ACT_W + 4u * k4;
    act_s[o] = v.x;
    act_s[o + 1u] = v.y;
    act_s[o + 2u] = v.z;
    act_s[o + 3u] = v.w;
  }
//!endif
}

//!if ENGINE == 0
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

//!endif

// Input column k of the block row starting at nets[row]: zero outside the block's columns.
fn block_weight(blk: Block, row: u32, k: u32) -> f32 {
  if (k < blk.k_lo || k >= blk.k_lo + blk.k_len) {
    return 0.0;
  }
  return nets[row + (k - blk.k_lo)];
}

fn layer_bias(b0: Block, b1: Block, j: u32) -> f32 {
  if (j < b0.rows) {
    return nets[b0.b + j];
  }
  return nets[b1.b + j - b0.rows];
}

//!if ENGINE == 0
// Slot of quad k4 (inputs 4 * k4 .. 4 * k4 + 3 of the slice) of output j in ws.
fn ws_index(j: u32, k4: u32) -> u32 {
  return j * KT4 + (k4 ^ ((j / SWZ_DIV) & SWZ_MASK));
}
//!endif

//!if ENGINE == 0

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
//!endif

// Y = act(X W^T + b) over input columns [k_start, n_k) (k_start a multiple of KT: the blocks
// have no weight before it) for all ROWS rows; Y goes to columns [out_col, out_col + n_out) of
// act (to_q false, in place) or of qv (to_q true).
// `sg` is the invocation's subgroup (engine 4 only: the subgroup_id builtin; others pass lid / 32).
fn dense(b0: Block, b1: Block, k_start: u32, n_k: u32, kind: u32, to_q: bool, out_col: u32, lid: u32, sg: u32) {
//!if ENGINE == 0
  if (ENGINE == 0) {
    dense_scalar(b0, b1, k_start, n_k, kind, to_q, out_col, lid);
  }
//!endif
//!if ENGINE == 2
  if (ENGINE == 2) {
    dense_quad2(b0, b1, k_start, n_k, kind, to_q, out_col, lid);
  }
//!endif
//!if ENGINE == 4
  if (ENGINE == 4) {
    dense_mma(b0, b1, n_k, kind, to_q, out_col, lid, sg);
  }
//!endif
//!if ENGINE == 5
  if (ENGINE == 5) {
    dense_gv(b0, b1, kind, to_q, out_col, lid, 0u);
  }
//!endif
}

//!if ENGINE == 0
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

//!endif

//!if ENGINE == 2
// ---- engine 1: quad blocks ----

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

//!endif

//!if ENGINE == 2
// ---- engine 2: quad blocks, unrolled ----
// Engine 1's thread shape and slices with MQ = 2 and MR <= 4 written out: the 2 x MR accumulator
// quads are named variables (no private array a compiler could leave in local memory when it
// does not unroll the loops, and no dynamically indexed vector component), and a staged item
// whose 4 outputs lie in one block's rows and columns reads its 4 weights with one bounds
// decision instead of one per weight. Same per-output order as engines 0 and 1.

// The 4 weights of output quad j .. j + 3 at input k (engine 1's item).
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

// Engine 1's output store of one accumulator quad (row r, output quad oq).
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

//!endif

//!if ENGINE == 4, 5
// Offset in nets16, in halves, of the packed matrix of the layer whose first block starts at
// nets[w] (engines 4 and 5: src/kernels/collect_half.ts).
fn mma_offset(w: u32) -> u32 {
  if (w == MMH_KEY_0) { return MMH_OFF_0; }
  if (w == MMH_KEY_1) { return MMH_OFF_1; }
  if (w == MMH_KEY_2) { return MMH_OFF_2; }
  if (w == MMH_KEY_3) { return MMH_OFF_3; }
  if (w == MMH_KEY_4) { return MMH_OFF_4; }
  if (w == MMH_KEY_5) { return MMH_OFF_5; }
  if (w == MMH_KEY_6) { return MMH_OFF_6; }
  if (w == MMH_KEY_7) { return MMH_OFF_7; }
  if (w == MMH_KEY_8) { return MMH_OFF_8; }
  return MMH_OFF_9;
}
//!endif

//!if ENGINE == 4
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
//!endif

//!if ENGINE == 5
// ---- engine 5: weight streaming for latency-bound small tiles (f16 weights, f32 math) ----
// A small tile (N = 128: one to a few episodes per workgroup) computes each layer as a few
// matrix-vector products: its time is the time to bring the layer's weights from L2, not the
// multiply-adds. Engines 0 and 2 stage the weights through workgroup memory slice by slice, two
// barriers per slice; engine 5 has no staging: thread (p, j) of a layer reads output j's f16
// weights straight from nets16 into registers in batches of GV_UNROLL 16-byte words (8 inputs
// each), the next batch in flight while this one multiplies, and keeps ROWS f32 sums. The
// weights are pack_half's k-group layout (src/kernels/collect_half.ts, order 1): word g * outPad +
// j of a matrix holds inputs 8 g .. 8 g + 7 of output j, so a warp's 32 consecutive outputs read
// 512 consecutive bytes. A layer narrower than the workgroup splits its input groups over `parts`
// threads per output (WG_X / outputs rounded up to a power of two >= 32: the heads' 46 outputs take
// 4 parts at 256 threads), which add their sums through gv_part after the layer's barrier. An
// output reads only its own block's input groups (the heads: advantages from columns 128-255, the
// value from 0-127; k_lo a multiple of 8), activations as vec4 broadcasts from act_v.
// Numerics: f16-rounded weights (as engine 4), f32 activations and sums: y = act(sum over the parts
// in order of each part's sum over its groups in increasing input, part 0's starting at the bias
// b). Not bit-identical to the reference:
// the f16 precision mode.
// GV_DUAL 1 (the DQN kernel): a target-net op (gv_delta, the nets offset from the online net to the
// target, nonzero) runs the online net's same layer beside it on the same input: rows [0, TILE_E)
// through the online weights, rows [TILE_E, 2 TILE_E) through the target's (ROWS = 2 TILE_E); half the
// threads take each net. The online Q-values of s' so computed are next step's Q(s_t+1) unless an
// episode of the tile restarted (collect_dqn.wgsl skips its online pass then).
// GV_CUR 1 (the DQN kernel): a side layer rides along with an op (gv_side, blk.rows 0: none): a
// small layer on its own rows of gv_cx (64 floats a row; set src, then dst, TILE_E rows each),
// one 16-byte weight word per thread (its words <= WG_X, checked by the host), loaded beside the
// op's first batch and multiplied after its own; gv_spart holds the words' sums, added after the
// op's barrier in group order, group 0's starting at the bias. The DQN kernel runs the curiosity
// model's two layers so beside the next-state pass's first two, off the step's chain.
var<workgroup> gv_part: array<f32, WG_X * TILE_E>;
var<private> gv_delta: u32 = 0u;
struct GvSide {
  blk: Block,
  kind: u32,
  src: u32,
  dst: u32,
}
var<private> gv_side: GvSide;
// Past the model's rows, GV_TGT: each episode's 8 quads of the bonus's target (the first 32
// features of s'), kept there by the fill of s'.
const GV_TGT = 2u * TILE_E * 16u;
var<workgroup> gv_cx: array<vec4<f32>, select(1u, GV_TGT + TILE_E * 8u, GV_CUR == 1)>;
var<workgroup> gv_spart: array<f32, select(1u, GV_SIDE_WORDS * TILE_E, GV_CUR == 1)>;
const_assert GV_CUR == 0 || GV_SIDE_WORDS <= WG_X;

// a + the products of one word's 8 weights (w01 .. w67, unpacked) with inputs xa, xb, in input order.
fn gv_dot(w01: vec2<f32>, w23: vec2<f32>, w45: vec2<f32>, w67: vec2<f32>, xa: vec4<f32>, xb: vec4<f32>, a0: f32) -> f32 {
  var a = a0;
  a = a + w01.x * xa.x;
  a = a + w01.y * xa.y;
  a = a + w23.x * xa.z;
  a = a + w23.y * xa.w;
  a = a + w45.x * xb.x;
  a = a + w45.y * xb.y;
  a = a + w67.x * xb.z;
  a = a + w67.y * xb.w;
  return a;
}

// Block b of net n (0 the online net, 1 the op's own) of a dual op; b itself outside one (gv_delta 0).
fn gv_block(b: Block, n: u32) -> Block {
  if (n == 1u || b.rows == 0u) {
    return b;
  }
  return Block(b.w - gv_delta, b.b - gv_delta, b.rows, b.k_lo, b.k_len);
}

// A part's words come in runs of GV_UNROLL consecutive groups (g, g + 1, ..), runs
// parts * GV_UNROLL apart, and the input reads of a run are indexed from one base clamped once
// (min: the identity for a run inside the row, as every run is: blocks start at a multiple of
// GV_UNROLL groups), so the shader compiler's range analysis proves every read in bounds and adds
// no clamp of its own per read (WebGPU's bounds checks).
const GV_RUN_MAX = ACT_W4 / 2u - GV_UNROLL;
const_assert (ACT_W4 / 2u) % GV_UNROLL == 0;

// Loads the run of words g .. g + GV_UNROLL - 1 of output base; past the block's last group a load
// repeats it (unused).
fn gv_load_run(w: ptr<function, array<vec4<u32>, GV_UNROLL>>, base: u32, g: u32, g_hi: u32, out_pad: u32) {
  for (var u = 0u; u < GV_UNROLL; u++) {
    (*w)[u] = nets16[base + min(g + u, g_hi - 1u) * out_pad];
  }
}

// Adds the products of the run of words at g (those below g_hi) with rows r0 .. r0 + TILE_E - 1 of
// act_v (r0 counts from the buffer's first row: GV_PP's second buffer starts at row ROWS).
fn gv_fma_run(acc: ptr<function, array<f32, TILE_E>>, w: ptr<function, array<vec4<u32>, GV_UNROLL>>, g: u32, g_hi: u32, r0: u32) {
  let gb = 2u * min(g, GV_RUN_MAX);
  for (var u = 0u; u < GV_UNROLL; u++) {
    if (g + u < g_hi) {
      let wu = (*w)[u];
      let w01 = unpack2x16float(wu.x);
      let w23 = unpack2x16float(wu.y);
      let w45 = unpack2x16float(wu.z);
      let w67 = unpack2x16float(wu.w);
      for (var i = 0u; i < TILE_E; i++) {
        let k = min(r0 + i, ROWS * ACT_BUFS - 1u) * ACT_W4 + gb + 2u * u;
        (*acc)[i] = gv_dot(w01, w23, w45, w67, act_v[k], act_v[k + 1u], (*acc)[i]);
      }
    }
  }
}

// A thread's share of a layer (engine 5): its net n (dual pass), output j, part p of the parts
// that split the inputs, its rows from r0, the weight column base, groups [g_lo, g_hi).
struct GvGeom {
  n_out: u32,
  sh: u32,
  nj: u32,
  dual: bool,
  nets: u32,
  parts: u32,
  n: u32,
  j: u32,
  p: u32,
  c0: Block,
  c1: Block,
  r0: u32,
  out_pad: u32,
  base: u32,
  g_lo: u32,
  g_hi: u32,
  busy: bool,
}

fn gv_geom(b0: Block, b1: Block, lid: u32) -> GvGeom {
  let n_out = b0.rows + b1.rows;
  // Threads per net and part: nj = 2^sh >= 32 covering the outputs, so the thread split is shifts
  // and masks (every layer of the plain head is 32, 64 or 256 wide: the same parts as rounding up
  // to 32).
  let sh = max(5u, 32u - countLeadingZeros(n_out - 1u));
  let nj = 1u << sh;
  let dual = gv_delta != 0u;
  let parts = select(WG_X, WG_X / 2u, dual) >> sh;
  let n = select(0u, lid / (WG_X / 2u), dual);
  let x = select(lid, lid % (WG_X / 2u), dual);
  let j = x & (nj - 1u);
  let p = x >> sh;
  // This thread's net (the op's own, or the online net's twin layer) and its rows.
  let c0 = gv_block(b0, n);
  let c1 = gv_block(b1, n);
  var blk = c0;
  if (j >= c0.rows) {
    blk = c1;
  }
  return GvGeom(n_out, sh, nj, dual, select(1u, 2u, dual), parts, n, j, p, c0, c1, select(0u, n * TILE_E, dual),
    (n_out + 15u) / 16u * 16u, mma_offset(c0.w) / 8u + j, blk.k_lo / 8u, (blk.k_lo + blk.k_len + 7u) / 8u,
    p < parts && j < n_out);
}

// GV_PP 1 (the DQN kernel's dual pass, collect_dqn.wgsl gv_dense_at): pp names the layer's buffers.
// 0: in place on the first buffer (every other layer). 1 and 2: input in the first / second buffer,
// output to the other one, straight from the one thread that summed it (a layer 256 wide on 256
// threads a net has one part an output): no partial sums in workgroup memory and no barrier between
// the multiply-adds and the output (nothing overwrites the input). 3: input in the second buffer,
// output to qv (the heads, whose parts still add through gv_part after the layer's barrier). The
// side layer's sums (GV_CUR) are then added up in the op after its own (gv_red), not after the
// layer's barrier: an op with pp 1 or 2 has none.
const GV_PP_IN0_DIRECT = 1u;
const GV_PP_IN1_DIRECT = 2u;
const GV_PP_IN1_Q = 3u;
const_assert GV_PP == 0 || (GV_DUAL == 1 && WG_X == 512u);
var<private> gv_red: GvSide;

fn dense_gv(b0: Block, b1: Block, kind: u32, to_q: bool, out_col: u32, lid: u32, pp: u32) {
  let q = gv_geom(b0, b1, lid);
  let n_out = q.n_out;
  let sh = q.sh;
  let nj = q.nj;
  let dual = q.dual;
  let nets = q.nets;
  let parts = q.parts;
  let n = q.n;
  let j = q.j;
  let p = q.p;
  let c0 = q.c0;
  let c1 = q.c1;
  let direct = pp == GV_PP_IN0_DIRECT || pp == GV_PP_IN1_DIRECT;
  // The rows the layer reads: the second buffer's start at row ROWS.
  let r0 = q.r0 + select(0u, ROWS, pp == GV_PP_IN1_DIRECT || pp == GV_PP_IN1_Q);
  let out_pad = q.out_pad;
  let base = q.base;
  let g_lo = q.g_lo;
  let g_hi = q.g_hi;
  let busy = q.busy;
  var acc: array<f32, TILE_E>;
  // Part 0's sums start at the bias, loaded beside the first weights (not after the
  // layer's barrier).
  if (busy && p == 0u) {
    let bias = layer_bias(c0, c1, j);
    for (var i = 0u; i < TILE_E; i++) {
      acc[i] = bias;
    }
  }
  // GV_CUR 1: this thread's word of the side layer (group sq of output sj), loaded now.
  let sd = gv_side;
  let s_rows = sd.blk.rows;
  let s_groups = (sd.blk.k_len + 7u) / 8u;
  let s_busy = GV_CUR == 1 && s_rows != 0u && lid < s_rows * s_groups;
  let sj = lid % max(s_rows, 1u);
  let sq = lid / max(s_rows, 1u);
  var s_w = vec4<u32>(0u);
  var s_acc: array<f32, TILE_E>;
  if (s_busy) {
    s_w = nets16[mma_offset(sd.blk.w) / 8u + sq * ((s_rows + 15u) / 16u * 16u) + sj];
    if (sq == 0u) {
      let bias = layer_bias(sd.blk, NO_BLOCK, sj);
      for (var i = 0u; i < TILE_E; i++) {
        s_acc[i] = bias;
      }
    }
  }
  var red_done = false;
  if (busy) {
    let stride = parts * GV_UNROLL;
    let g0 = g_lo + p * GV_UNROLL;
    var next: array<vec4<u32>, GV_UNROLL>;
    gv_load_run(&next, base, g0, g_hi, out_pad);
    // GV_PP, pp 1 or 2: the side layer of the op before, while the first words are in flight.
    if (direct) {
      gv_side_reduce(gv_red, lid);
      red_done = true;
    }
    for (var g = g0; g < g_hi; g += stride) {
      var w = next;
      if (g + stride < g_hi) {
        gv_load_run(&next, base, g + stride, g_hi, out_pad);
      }
      gv_fma_run(&acc, &w, g, g_hi, r0);
    }
  }
  if (p < parts && !direct) {
    for (var i = 0u; i < TILE_E; i++) {
      gv_part[((n * parts + p) * TILE_E + i) * nj + j] = acc[i];
    }
  }
  if (s_busy) {
    let w01 = unpack2x16float(s_w.x);
    let w23 = unpack2x16float(s_w.y);
    let w45 = unpack2x16float(s_w.z);
    let w67 = unpack2x16float(s_w.w);
    for (var i = 0u; i < TILE_E; i++) {
      let xa = gv_cx[(sd.src + i) * 16u + 2u * sq];
      let xb = gv_cx[(sd.src + i) * 16u + 2u * sq + 1u];
      gv_spart[(sq * TILE_E + i) * s_rows + sj] = gv_dot(w01, w23, w45, w67, xa, xb, s_acc[i]);
    }
  }
  // GV_PP, pp 1 or 2: the one part's sum (from the bias) is the output, written to the other buffer
  // by the thread that summed it (reduced, the sum would be 0.0 + it, the same value): one component
  // of a vector four threads write, each its own. The component is named, not indexed: a shader
  // compiler may store a dynamically indexed component as a read-modify-write of the whole vector
  // (HLSL back ends have), a race with the neighbours; a named component is a store of its own.
  if (direct) {
    if (busy) {
      let ob = select(0u, ROWS, pp == GV_PP_IN0_DIRECT);
      let c = out_col + j;
      for (var i = 0u; i < TILE_E; i++) {
        let y = activate(acc[i], kind);
        let at = (ob + q.r0 + i) * ACT_W4 + c / 4u;
        switch (c % 4u) {
          case 0u: {
            act_v[at].x = y;
          }
          case 1u: {
            act_v[at].y = y;
          }
          case 2u: {
            act_v[at].z = y;
          }
          default: {
            act_v[at].w = y;
          }
        }
      }
    }
    if (!red_done) {
      gv_side_reduce(gv_red, lid);
    }
    return;
  }
  // Every thread has read the layer's input: outputs may overwrite it. Then thread (net, row,
  // quad) sums 4 outputs of a row and writes them as one vec4 (act_set4: whole quads only); a
  // quad's outputs past n_out are 0, as engine 2 writes them.
  workgroupBarrier();
  let qsh = sh - 2u;
  let nq = 1u << qsh;
  for (var e = lid; e < nets * TILE_E * nq; e += WG_X) {
    let en = (e >> qsh) / TILE_E;
    let i = (e >> qsh) % TILE_E;
    let j0 = (e & (nq - 1u)) * 4u;
    let d0 = gv_block(b0, en);
    let d1 = gv_block(b1, en);
    let r = select(i, en * TILE_E + i, dual);
    var y = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c++) {
      if (j0 + c < n_out) {
        var s = 0.0;
        for (var q = 0u; q < parts; q++) {
          s = s + gv_part[((en * parts + q) * TILE_E + i) * nj + j0 + c];
        }
        y[c] = activate(s, kind);
      }
    }
    if (to_q) {
      for (var c = 0u; c < 4u; c++) {
        if (j0 + c < n_out) {
          qv[r * QW + out_col + j0 + c] = y[c];
        }
      }
    } else if (j0 < n_out) {
      act_set4(r, out_col / 4u + j0 / 4u, y);
    }
  }
  gv_side_reduce(gv_red, lid);
}

// The side layer sd's outputs from its words' sums in gv_spart, a quad a thread, on the workgroup's
// last threads (a layer's own sums take the first): after the barrier of the op that multiplied
// them (that op's own, or with GV_PP the op after it; gv_red names the layer, blk.rows 0 none).
fn gv_side_reduce(sd: GvSide, lid: u32) {
  let s_rows = sd.blk.rows;
  if (GV_CUR == 1 && s_rows != 0u) {
    let s_groups = (sd.blk.k_len + 7u) / 8u;
    let t = WG_X - 1u - lid;
    let sq4 = (s_rows + 3u) / 4u;
    if (t < TILE_E * sq4) {
      let i = t / sq4;
      let j0 = (t % sq4) * 4u;
      var y = vec4<f32>(0.0);
      for (var c = 0u; c < 4u; c++) {
        if (j0 + c < s_rows) {
          var s = 0.0;
          for (var q = 0u; q < s_groups; q++) {
            s = s + gv_spart[(q * TILE_E + i) * s_rows + j0 + c];
          }
          y[c] = activate(s, sd.kind);
        }
      }
      gv_cx[(sd.dst + i) * 16u + j0 / 4u] = y;
    }
  }
}
//!endif

// One op of a kernel's per-step program (see collect_dqn.wgsl): a DENSE layer of the tile
// engine, or a phase of the kernel identified by `kind` with an argument.
const OP_DENSE = 0u;

struct Op {
  kind: u32,
  b0: Block,
  b1: Block,
  k_start: u32,
  n_k: u32,
  act: u32,
  to_q: bool,
  out_col: u32,
  arg: u32,
}

fn phase(kind: u32, arg: u32) -> Op {
  return Op(kind, NO_BLOCK, NO_BLOCK, 0u, 0u, ACT_NONE, false, 0u, arg);
}

// A single-block layer with n_in inputs at columns [0, n_in).
fn layer(w: u32, b: u32, n_in: u32, n_out: u32, act_kind: u32, to_q: bool, out_col: u32) -> Op {
  return Op(OP_DENSE, block(w, b, n_out, 0u, n_in), NO_BLOCK, 0u, n_in, act_kind, to_q, out_col, 0u);
}
