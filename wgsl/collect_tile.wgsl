// Tile engine of the collection kernels: a workgroup computes dense layers for the ROWS rows it
// owns (rows = episodes of the tile, or episode x tau pairs for IQN) as small matrix products,
// Y[r, j] = act(b[j] + sum_k W[j, k] * X[r, k]), with X in workgroup memory (`act`, ROWS rows of
// ACT_W floats) and W streamed through workgroup memory in k-slices of KT (`ws`, vec4 quads of
// four consecutive inputs of one output).
// A snippet, not a kernel: collect_dqn.wgsl and collect_ppo.wgsl include it; the kernel defines
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
// Engines (constant ENGINE), each in its own file included below:
//   0  collect_tile_scalar.wgsl        the thread shape above, scalar activations (`act_s`), f32
//   2  collect_tile_quad.wgsl          quad blocks: vec4 activations (`act_v`), 2 output quads x
//                                      up to 4 rows a thread in named accumulators; same bits as 0
// Every writer of act goes through act_set4 (whole quads: a store to one dynamically indexed
// component of a shared vector may be compiled as a read-modify-write of it, a race).
// Engines 1 (quad blocks, not unrolled), 3 (small tiles) and the f16 engines 4 (tensor cores) and 5
// (weight streaming) were retired: docs/COLLECT.md.
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
// Engine 2's quad blocks (see collect_tile_quad.wgsl).
const TQ = WS_OUT / (4 * MQ);
const RG = WG_X / TQ;
const MR = (ROWS + RG - 1) / RG;
const WQ = WS_OUT / 4;
const PREFETCH_Q = (WQ * KT + WG_X - 1) / WG_X;
//!endif

// Engine 0 reads scalar activations, engine 2 vec4s. Unresolved, the unused one is one element.
const SCALAR = ENGINE == 0;
//!if ENGINE == 0
var<workgroup> act_s: array<f32, select(1, ROWS * ACT_W, SCALAR)>;
//!endif
//!if ENGINE == 2
var<workgroup> act_v: array<vec4<f32>, select(1, ROWS * ACT_W4, !SCALAR)>;
//!endif
// Staged weights: vec4 quads.
var<workgroup> ws: array<vec4<f32>, WS_OUT * KT4>;
var<workgroup> qv: array<f32, ROWS * QW>;

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
//!if ENGINE == 2
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
//!if ENGINE == 2
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
//!include collect_tile_scalar.wgsl
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

// Y = act(X W^T + b) over input columns [k_start, n_k) (k_start a multiple of KT: the blocks
// have no weight before it) for all ROWS rows; Y goes to columns [out_col, out_col + n_out) of
// act (to_q false, in place) or of qv (to_q true).
fn dense(b0: Block, b1: Block, k_start: u32, n_k: u32, kind: u32, to_q: bool, out_col: u32, lid: u32) {
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
}

//!if ENGINE == 2
//!include collect_tile_quad.wgsl
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
