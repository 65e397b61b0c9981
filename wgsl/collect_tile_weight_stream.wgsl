// Tile engine 5 of the collection kernels (collect_tile.wgsl, constant ENGINE 5; the WebGPU f16
// precision up to N = 2,048): f16 weights streamed from L2 straight into registers, f32 math. A
// snippet: collect_tile.wgsl includes it in its `//!if ENGINE == 5` block (act_v, ACT_BUFS, qv and
// mma_offset are defined there); the module binds nets16 as vec4<u32> words (pack_half's k-group
// layout). collect_dqn_stream.wgsl holds the DQN kernel's side of this engine.
//

// ---- engine 5: weight streaming for latency-bound small tiles (f16 weights, f32 math) ----
// A small tile (N = 128: one to a few episodes per workgroup) computes each layer as a few
// matrix-vector products: its time is the time to bring the layer's weights from L2, not the
// multiply-adds. Engines 0 and 2 stage the weights through workgroup memory slice by slice, two
// barriers per slice; engine 5 has no staging: thread (p, j) of a layer reads output j's f16
// weights straight from nets16 into registers in batches of STREAM_RUN_WORDS 16-byte words (8 inputs
// each), the next batch in flight while this one multiplies, and keeps ROWS f32 sums. The
// weights are pack_half's k-group layout (src/kernels/collect_half.ts, order 1): word g * outPad +
// j of a matrix holds inputs 8 g .. 8 g + 7 of output j, so a warp's 32 consecutive outputs read
// 512 consecutive bytes. A layer narrower than the workgroup splits its input groups over `parts`
// threads per output (WG_X / outputs rounded up to a power of two >= 32: the heads' 46 outputs take
// 4 parts at 256 threads), which add their sums through stream_part after the layer's barrier. An
// output reads only its own block's input groups (the heads: advantages from columns 128-255, the
// value from 0-127; k_lo a multiple of 8), activations as vec4 broadcasts from act_v.
// Numerics: f16-rounded weights (as engine 4), f32 activations and sums: y = act(sum over the parts
// in order of each part's sum over its groups in increasing input, part 0's starting at the bias
// b). Not bit-identical to the reference:
// the f16 precision mode.
// DUAL_PASS 1 (the DQN kernel): a target-net op (stream_delta, the nets offset from the online net to the
// target, nonzero) runs the online net's same layer beside it on the same input: rows [0, TILE_E)
// through the online weights, rows [TILE_E, 2 TILE_E) through the target's (ROWS = 2 TILE_E); half the
// threads take each net. The online Q-values of s' so computed are next step's Q(s_t+1) unless an
// episode of the tile restarted (collect_dqn.wgsl skips its online pass then).
// CURIOSITY_SIDE 1 (the DQN kernel): a side layer rides along with an op (stream_side, blk.rows 0: none): a
// small layer on its own rows of stream_curiosity_rows (64 floats a row; set src, then dst, TILE_E rows each),
// one 16-byte weight word per thread (its words <= WG_X, checked by the host), loaded beside the
// op's first batch and multiplied after its own; stream_side_part holds the words' sums, added after the
// op's barrier in group order, group 0's starting at the bias. The DQN kernel runs the curiosity
// model's two layers so beside the next-state pass's first two, off the step's chain.
var<workgroup> stream_part: array<f32, WG_X * TILE_E>;
var<private> stream_delta: u32 = 0u;
struct StreamSide {
  blk: Block,
  kind: u32,
  src: u32,
  dst: u32,
}
var<private> stream_side: StreamSide;
// Past the model's rows, BONUS_TARGET_ROW: each episode's 8 quads of the bonus's target (the first 32
// features of s'), kept there by the fill of s'.
const BONUS_TARGET_ROW = 2u * TILE_E * 16u;
var<workgroup> stream_curiosity_rows: array<vec4<f32>, select(1u, BONUS_TARGET_ROW + TILE_E * 8u, CURIOSITY_SIDE == 1)>;
var<workgroup> stream_side_part: array<f32, select(1u, SIDE_LAYER_WORDS * TILE_E, CURIOSITY_SIDE == 1)>;
const_assert CURIOSITY_SIDE == 0 || SIDE_LAYER_WORDS <= WG_X;

// a + the products of one word's 8 weights (w01 .. w67, unpacked) with inputs xa, xb, in input order.
fn stream_dot(w01: vec2<f32>, w23: vec2<f32>, w45: vec2<f32>, w67: vec2<f32>, xa: vec4<f32>, xb: vec4<f32>, a0: f32) -> f32 {
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

// Block b of net n (0 the online net, 1 the op's own) of a dual op; b itself outside one (stream_delta 0).
fn stream_block(b: Block, n: u32) -> Block {
  if (n == 1u || b.rows == 0u) {
    return b;
  }
  return Block(b.w - stream_delta, b.b - stream_delta, b.rows, b.k_lo, b.k_len);
}

// A part's words come in runs of STREAM_RUN_WORDS consecutive groups (g, g + 1, ..), runs
// parts * STREAM_RUN_WORDS apart, and the input reads of a run are indexed from one base clamped once
// (min: the identity for a run inside the row, as every run is: blocks start at a multiple of
// STREAM_RUN_WORDS groups), so the shader compiler's range analysis proves every read in bounds and adds
// no clamp of its own per read (WebGPU's bounds checks).
const STREAM_RUN_MAX = ACT_W4 / 2u - STREAM_RUN_WORDS;
const_assert (ACT_W4 / 2u) % STREAM_RUN_WORDS == 0;

// Loads the run of words g .. g + STREAM_RUN_WORDS - 1 of output base; past the block's last group a load
// repeats it (unused).
fn stream_load_run(w: ptr<function, array<vec4<u32>, STREAM_RUN_WORDS>>, base: u32, g: u32, g_hi: u32, out_pad: u32) {
  for (var u = 0u; u < STREAM_RUN_WORDS; u++) {
    (*w)[u] = nets16[base + min(g + u, g_hi - 1u) * out_pad];
  }
}

// Adds the products of the run of words at g (those below g_hi) with rows r0 .. r0 + TILE_E - 1 of
// act_v (r0 counts from the buffer's first row: PING_PONG's second buffer starts at row ROWS).
fn stream_fma_run(acc: ptr<function, array<f32, TILE_E>>, w: ptr<function, array<vec4<u32>, STREAM_RUN_WORDS>>, g: u32, g_hi: u32, r0: u32) {
  let gb = 2u * min(g, STREAM_RUN_MAX);
  for (var u = 0u; u < STREAM_RUN_WORDS; u++) {
    if (g + u < g_hi) {
      let wu = (*w)[u];
      let w01 = unpack2x16float(wu.x);
      let w23 = unpack2x16float(wu.y);
      let w45 = unpack2x16float(wu.z);
      let w67 = unpack2x16float(wu.w);
      for (var i = 0u; i < TILE_E; i++) {
        let k = min(r0 + i, ROWS * ACT_BUFS - 1u) * ACT_W4 + gb + 2u * u;
        (*acc)[i] = stream_dot(w01, w23, w45, w67, act_v[k], act_v[k + 1u], (*acc)[i]);
      }
    }
  }
}

// A thread's share of a layer (engine 5): its net n (dual pass), output j, part p of the parts
// that split the inputs, its rows from r0, the weight column base, groups [g_lo, g_hi).
struct StreamGeom {
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

fn stream_geom(b0: Block, b1: Block, lid: u32) -> StreamGeom {
  let n_out = b0.rows + b1.rows;
  // Threads per net and part: nj = 2^sh >= 32 covering the outputs, so the thread split is shifts
  // and masks (every layer of the plain head is 32, 64 or 256 wide: the same parts as rounding up
  // to 32).
  let sh = max(5u, 32u - countLeadingZeros(n_out - 1u));
  let nj = 1u << sh;
  let dual = stream_delta != 0u;
  let parts = select(WG_X, WG_X / 2u, dual) >> sh;
  let n = select(0u, lid / (WG_X / 2u), dual);
  let x = select(lid, lid % (WG_X / 2u), dual);
  let j = x & (nj - 1u);
  let p = x >> sh;
  // This thread's net (the op's own, or the online net's twin layer) and its rows.
  let c0 = stream_block(b0, n);
  let c1 = stream_block(b1, n);
  var blk = c0;
  if (j >= c0.rows) {
    blk = c1;
  }
  return StreamGeom(n_out, sh, nj, dual, select(1u, 2u, dual), parts, n, j, p, c0, c1, select(0u, n * TILE_E, dual),
    (n_out + 15u) / 16u * 16u, mma_offset(c0.w) / 8u + j, blk.k_lo / 8u, (blk.k_lo + blk.k_len + 7u) / 8u,
    p < parts && j < n_out);
}

// PING_PONG 1 (the DQN kernel's dual pass, collect_dqn.wgsl stream_dense_at): pp names the layer's buffers.
// 0: in place on the first buffer (every other layer). 1 and 2: input in the first / second buffer,
// output to the other one, straight from the one thread that summed it (a layer 256 wide on 256
// threads a net has one part an output): no partial sums in workgroup memory and no barrier between
// the multiply-adds and the output (nothing overwrites the input). 3: input in the second buffer,
// output to qv (the heads, whose parts still add through stream_part after the layer's barrier). The
// side layer's sums (CURIOSITY_SIDE) are then added up in the op after its own (stream_reduce), not after the
// layer's barrier: an op with pp 1 or 2 has none.
const PING_PONG_IN0_DIRECT = 1u;
const PING_PONG_IN1_DIRECT = 2u;
const PING_PONG_IN1_Q = 3u;
const_assert PING_PONG == 0 || (DUAL_PASS == 1 && WG_X == 512u);
var<private> stream_reduce: StreamSide;

fn dense_stream(b0: Block, b1: Block, kind: u32, to_q: bool, out_col: u32, lid: u32, pp: u32) {
  let q = stream_geom(b0, b1, lid);
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
  let direct = pp == PING_PONG_IN0_DIRECT || pp == PING_PONG_IN1_DIRECT;
  // The rows the layer reads: the second buffer's start at row ROWS.
  let r0 = q.r0 + select(0u, ROWS, pp == PING_PONG_IN1_DIRECT || pp == PING_PONG_IN1_Q);
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
  // CURIOSITY_SIDE 1: this thread's word of the side layer (group sq of output sj), loaded now.
  let sd = stream_side;
  let s_rows = sd.blk.rows;
  let s_groups = (sd.blk.k_len + 7u) / 8u;
  let s_busy = CURIOSITY_SIDE == 1 && s_rows != 0u && lid < s_rows * s_groups;
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
    let stride = parts * STREAM_RUN_WORDS;
    let g0 = g_lo + p * STREAM_RUN_WORDS;
    var next: array<vec4<u32>, STREAM_RUN_WORDS>;
    stream_load_run(&next, base, g0, g_hi, out_pad);
    // PING_PONG, pp 1 or 2: the side layer of the op before, while the first words are in flight.
    if (direct) {
      stream_side_reduce(stream_reduce, lid);
      red_done = true;
    }
    for (var g = g0; g < g_hi; g += stride) {
      var w = next;
      if (g + stride < g_hi) {
        stream_load_run(&next, base, g + stride, g_hi, out_pad);
      }
      stream_fma_run(&acc, &w, g, g_hi, r0);
    }
  }
  if (p < parts && !direct) {
    for (var i = 0u; i < TILE_E; i++) {
      stream_part[((n * parts + p) * TILE_E + i) * nj + j] = acc[i];
    }
  }
  if (s_busy) {
    let w01 = unpack2x16float(s_w.x);
    let w23 = unpack2x16float(s_w.y);
    let w45 = unpack2x16float(s_w.z);
    let w67 = unpack2x16float(s_w.w);
    for (var i = 0u; i < TILE_E; i++) {
      let xa = stream_curiosity_rows[(sd.src + i) * 16u + 2u * sq];
      let xb = stream_curiosity_rows[(sd.src + i) * 16u + 2u * sq + 1u];
      stream_side_part[(sq * TILE_E + i) * s_rows + sj] = stream_dot(w01, w23, w45, w67, xa, xb, s_acc[i]);
    }
  }
  // PING_PONG, pp 1 or 2: the one part's sum (from the bias) is the output, written to the other buffer
  // by the thread that summed it (reduced, the sum would be 0.0 + it, the same value): one component
  // of a vector four threads write, each its own. The component is named, not indexed: a shader
  // compiler may store a dynamically indexed component as a read-modify-write of the whole vector
  // (HLSL back ends have), a race with the neighbours; a named component is a store of its own.
  if (direct) {
    if (busy) {
      let ob = select(0u, ROWS, pp == PING_PONG_IN0_DIRECT);
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
      stream_side_reduce(stream_reduce, lid);
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
    let d0 = stream_block(b0, en);
    let d1 = stream_block(b1, en);
    let r = select(i, en * TILE_E + i, dual);
    var y = vec4<f32>(0.0);
    for (var c = 0u; c < 4u; c++) {
      if (j0 + c < n_out) {
        var s = 0.0;
        for (var q = 0u; q < parts; q++) {
          s = s + stream_part[((en * parts + q) * TILE_E + i) * nj + j0 + c];
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
  stream_side_reduce(stream_reduce, lid);
}

// The side layer sd's outputs from its words' sums in stream_side_part, a quad a thread, on the workgroup's
// last threads (a layer's own sums take the first): after the barrier of the op that multiplied
// them (that op's own, or with PING_PONG the op after it; stream_reduce names the layer, blk.rows 0 none).
fn stream_side_reduce(sd: StreamSide, lid: u32) {
  let s_rows = sd.blk.rows;
  if (CURIOSITY_SIDE == 1 && s_rows != 0u) {
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
            s = s + stream_side_part[(q * TILE_E + i) * s_rows + j0 + c];
          }
          y[c] = activate(s, sd.kind);
        }
      }
      stream_curiosity_rows[(sd.dst + i) * 16u + j0 / 4u] = y;
    }
  }
}
