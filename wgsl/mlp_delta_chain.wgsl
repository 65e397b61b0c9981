// mlp_delta_chain: the input gradients (deltas) of consecutive layers of up to two chain networks
// in one launch, ROWS rows per workgroup, the rows' deltas kept in workgroup memory from layer to
// layer. Net n's layer c (c = 0 the top), for b < batch, i < in_c:
//   deltas[pOff_c + b * in_c + i] = (sum_o deltas[dOff_c + b * out_c + o] * W[o, i]) * act'(acts[xOff_c + b * in_c + i])
// the sum over o increasing from 0, W [out_c, in_c] at params[wOff_c]; layer c + 1 starts from the
// delta layer c wrote (out_{c+1} = in_c, dOff_{c+1} = pOff_c; the dispatch checks it).
// Bindings (declared by the preamble generated from src/kernels/mlp_delta_chain.ts):
//   params: array<f32>, read: the networks' flat parameters (W [out, in] row-major, then bias)
//   acts: array<f32>, read: each layer's input rows at xOff_c (the previous layer's outputs)
//   deltas: array<f32>, read_write: each network's top delta rows at dOff_0, every dX at pOff_c
//   mb: array<f32>, read: ppo_gather's action, old log-prob, advantage, return (loss mode only)
//   partials: array<f32>, read_write: the loss mode's LOSS_PARTS sums per workgroup at lossAt
//   u: Uniforms { batch, nets, the loss mode's loss, rows and ppo_loss's nActions .. lossAt, then
//      per net n < 2: layers, pFrom, pEnd (unused here: the CUDA staged build's copy), then per
//      layer c < 4: in, out, wOff, dOff, xOff, pOff, pAct }
//      (pAct: 0 none, 1 relu, 2 leaky 0.01; widths <= MAX_WIDTH)
// The THREADS invocations split in `nets` equal parts, one per network; the networks run at once,
// in steps with a barrier between them, a shorter chain starting later (its last layer in the last
// step). In its part, invocation t takes the inputs i = t, t + part, ..: it adds delta[r][o] *
// W[o, i] over o increasing for all ROWS rows (each weight read once from global memory, the
// rows' deltas from the tile, kept as [unit][ROWS]), multiplies by act', and writes the result to
// the next tile and to deltas. Each network has two tiles that the steps alternate between (tile
// A holds its deltas out_0, in_1, ..; tile B in_0, in_2, ..): TILE_FLOATS = ROWS * the sum of the
// networks' widest deltas of each.
// LOSS = 1 (the loss mode's build; u.loss = 1): the workgroup first computes the PPO loss head of
// its rows (ppo_loss_head.wgsl, the code ppo_loss runs), writing the output deltas (the chain's
// top deltas: net 0 the policy output, net 1 the value) to `deltas` and its LOSS_PARTS sums to
// partials[lossAt + block * LOSS_PARTS ..]; mb holds ppo_gather's per-sample floats.
// Numerics: f32, each sum from +0 in increasing o as the TS reference; the compiler may fuse
// multiply-adds, so the twins agree to a tolerance (fixed order: the same bits every run).

const THREADS = WG_X * WG_Y * WG_Z;

var<workgroup> tile: array<f32, TILE_FLOATS>;

//!if LOSS == 1
//!include ppo_loss_head.wgsl
//!endif

struct DeltaLayer {
  n_in: u32,
  n_out: u32,
  w_off: u32,
  d_off: u32,
  x_off: u32,
  p_off: u32,
  p_act: u32,
}

fn delta_layer(n: u32, c: u32) -> DeltaLayer {
  if (n == 0u) {
    if (c == 0u) {
      return DeltaLayer(u.in0_0, u.out0_0, u.wOff0_0, u.dOff0_0, u.xOff0_0, u.pOff0_0, u.pAct0_0);
    }
    if (c == 1u) {
      return DeltaLayer(u.in0_1, u.out0_1, u.wOff0_1, u.dOff0_1, u.xOff0_1, u.pOff0_1, u.pAct0_1);
    }
    if (c == 2u) {
      return DeltaLayer(u.in0_2, u.out0_2, u.wOff0_2, u.dOff0_2, u.xOff0_2, u.pOff0_2, u.pAct0_2);
    }
    return DeltaLayer(u.in0_3, u.out0_3, u.wOff0_3, u.dOff0_3, u.xOff0_3, u.pOff0_3, u.pAct0_3);
  }
  if (c == 0u) {
    return DeltaLayer(u.in1_0, u.out1_0, u.wOff1_0, u.dOff1_0, u.xOff1_0, u.pOff1_0, u.pAct1_0);
  }
  if (c == 1u) {
    return DeltaLayer(u.in1_1, u.out1_1, u.wOff1_1, u.dOff1_1, u.xOff1_1, u.pOff1_1, u.pAct1_1);
  }
  if (c == 2u) {
    return DeltaLayer(u.in1_2, u.out1_2, u.wOff1_2, u.dOff1_2, u.xOff1_2, u.pOff1_2, u.pAct1_2);
  }
  return DeltaLayer(u.in1_3, u.out1_3, u.wOff1_3, u.dOff1_3, u.xOff1_3, u.pOff1_3, u.pAct1_3);
}

fn delta_layers(n: u32) -> u32 {
  return select(u.layers0, u.layers1, n == 1u);
}

// act' read from the activation's output: relu' = y > 0, leaky' = y > 0 ? 1 : 0.01.
fn act_derivative(y: f32, act: u32) -> f32 {
  if (act == 1u) {
    return select(0.0, 1.0, y > 0.0);
  }
  if (act == 2u) {
    return select(0.01, 1.0, y > 0.0);
  }
  return 1.0;
}

// Floats per row of net n's tiles A (its deltas out_0, in_1, in_3) and B (in_0, in_2): the widest
// of each (src/kernels/mlp_delta_chain.ts: tileWidths).
fn tile_widths(n: u32) -> vec2<u32> {
  var w = vec2<u32>(delta_layer(n, 0u).n_out, 0u);
  for (var c = 0u; c < delta_layers(n); c++) {
    let width = delta_layer(n, c).n_in;
    if (c % 2u == 0u) {
      w.y = max(w.y, width);
    } else {
      w.x = max(w.x, width);
    }
  }
  return w;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn mlp_delta_chain(
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
  let nets = u.nets;
  let part = THREADS / nets;
  let net = tid / part;
  let t = tid - net * part;
  var steps = u.layers0;
  if (nets > 1u) {
    steps = max(steps, u.layers1);
  }
  let first_step = steps - delta_layers(net);

  // The tiles: net 0's A and B, then net 1's.
  let w0 = tile_widths(0u);
  let tile_a1 = ROWS * (w0.x + w0.y);
  var tile_in = select(0u, tile_a1, net == 1u);  // this step's layer reads its deltas here
  var tile_out = tile_in + ROWS * select(w0.x, tile_widths(1u).x, net == 1u);

//!if LOSS == 1
  // The loss mode: the PPO loss head of the workgroup's rows first (ppo_loss_head.wgsl, ppo_loss's
  // code): team t of the THREADS / 32 takes rows t, t + THREADS / 32, .. (every team runs every
  // round: the trees' barriers stay uniform), writing the output deltas to `deltas`, which the
  // chain then loads as its top deltas below; the workgroup's loss sums to partials.
  if (u.loss != 0u) {
    let stats = advantage_stats(tid);
    let lane = tid % LOSS_TEAM;
    let team = tid / LOSS_TEAM;
    let teams = u32(THREADS) / LOSS_TEAM;
    var sums: array<f32, LOSS_PARTS>;
    for (var j = 0u; j < (u32(ROWS) + teams - 1u) / teams; j++) {
      let r = j * teams + team;
      loss_sample(row0 + r, r < rows, lane, team, stats, &sums);
    }
    for (var p = 0u; p < LOSS_PARTS; p++) {
      let total = block_sum(sums[p], tid);
      if (tid == 0u) {
        partials[u.lossAt + block * LOSS_PARTS + p] = total;
      }
    }
    storageBarrier();  // the top deltas just written are read back by other invocations
  }
//!endif

  // Both networks' top delta rows (contiguous in deltas; zeros past the batch) into tile A.
  for (var n = 0u; n < nets; n++) {
    let top = delta_layer(n, 0u);
    let at = select(0u, tile_a1, n == 1u);
    for (var e = tid; e < ROWS * top.n_out; e += THREADS) {
      var v = 0.0;
      if (e < rows * top.n_out) {
        v = deltas[top.d_off + row0 * top.n_out + e];
      }
      tile[at + (e % top.n_out) * ROWS + e / top.n_out] = v;
    }
  }
  workgroupBarrier();

  for (var s = 0u; s < steps; s++) {
    if (s >= first_step) {
      let L = delta_layer(net, s - first_step);
      for (var i = t; i < L.n_in; i += part) {
        var acc: array<f32, ROWS>;
        for (var r = 0u; r < ROWS; r++) {
          acc[r] = 0.0;  // explicitly: on lavapipe the bare declaration kept the last input's sums
        }
        for (var o = 0u; o < L.n_out; o++) {
          let wv = params[L.w_off + o * L.n_in + i];
          for (var r = 0u; r < ROWS; r++) {
            acc[r] = acc[r] + tile[tile_in + o * ROWS + r] * wv;
          }
        }
        for (var r = 0u; r < ROWS; r++) {
          var x = 0.0;
          if (r < rows) {
            x = acts[L.x_off + (row0 + r) * L.n_in + i];
          }
          let v = acc[r] * act_derivative(x, L.p_act);
          tile[tile_out + i * ROWS + r] = v;
          if (r < rows) {
            deltas[L.p_off + (row0 + r) * L.n_in + i] = v;
          }
        }
      }
      let swap = tile_in;
      tile_in = tile_out;
      tile_out = swap;
    }
    workgroupBarrier();
  }
}
