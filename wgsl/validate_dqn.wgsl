// validate_dqn: the validation backtest (src/eval/backtest.ts) with a DQN-family greedy policy, one
// workgroup a launch (descriptor, bindings and uniforms: src/kernels/validate_dqn.ts). One episode
// from splitStart, `steps` decisions, steps [stepBegin, stepEnd) of them a launch (the episode
// resumed from and left in env_f / env_i: validate_env.wgsl). The first launch copies the online
// net's weights (nets at u.netBase) transposed into out_f past the trace (transpose_net), which
// the later launches of the backtest read as they find it; then per step
// the WG_X (256 or 1024) invocations run the net: the trunk's and both streams' hidden layers
// (256 outputs a layer) in TRUNK_PARTS = WG_X / 256 parts of their inputs, one invocation each,
// added in order, and their output layers (f32 sum bias first then inputs in order, LeakyReLU, as
// src/nets/forward.ts; C51's 2,346 outputs one an invocation in rounds; the plain head's 46
// outputs in OUT_PARTS parts of their inputs, one invocation each, added in order), the mean of the
// advantages over actions per atom, then per action Q (plain: (V + A) - mean; C51: the softmax
// over atoms of (V + A) - mean and its expectation over the support; IQN (HEAD 2, iqn_q): per act
// tau t < IQN_TAUS the trunk times phi_t through the streams and the plain combination, summed
// over t in order, then divided by IQN_TAUS); invocation 0 takes the first argmax and steps the
// simulator (validate_env.wgsl). IQN's taus are the host's fixed quadrature tau_t =
// f32((t + 0.5) / K) (eval/policies.ts dqnGreedyPolicy), rounded exactly here; phi_t =
// relu(tau_embed(cosine features of tau_t)) (iqn_cos.wgsl) is computed by the first launch into
// the scratch past the transposed net, and the taus go through the streams TAU_GROUP at a time,
// every output of theirs summed by one invocation over all its inputs in order.
//
// The build with SPECULATE 1 runs the backtest as speculative rounds instead (u.mode 1 and 2:
// validate_speculate.wgsl; src/kernels/validate_dqn.ts), with the same net code (greedy) and the
// same trace.
//
// Numerics: f32 in the reference's order except the parts (the trunk's and the plain and C51
// streams' hidden layers with TRUNK_PARTS > 1, the plain head's output layer: a sum of partial
// sums); the compiler may fuse multiply-adds, WGSL's division
// and exp are a few ulp loose, the Cephes cos within about 1e-7, so a Q value can differ in its
// last bits and an action only where two Q values tie that closely.
//!include validate_env.wgsl
//!include iqn_cos.wgsl
//!if SPECULATE == 1
//!include validate_speculate.wgsl
//!endif

const HEAD_C51 = 1;
const HEAD_IQN = 2;
const S0_W = NET_Q_SHARED_LAYERS_0_W;
const S0_B = NET_Q_SHARED_LAYERS_0_B;
const S0_IN = NET_Q_SHARED_LAYERS_0_IN;
const S0_OUT = NET_Q_SHARED_LAYERS_0_OUT;
const S1_W = NET_Q_SHARED_LAYERS_1_W;
const S1_B = NET_Q_SHARED_LAYERS_1_B;
const S1_IN = NET_Q_SHARED_LAYERS_1_IN;
const S1_OUT = NET_Q_SHARED_LAYERS_1_OUT;
const V0_W = NET_Q_VALUE_STREAM_0_W;
const V0_B = NET_Q_VALUE_STREAM_0_B;
const V0_IN = NET_Q_VALUE_STREAM_0_IN;
const V0_OUT = NET_Q_VALUE_STREAM_0_OUT;
const V1_W = NET_Q_VALUE_STREAM_1_W;
const V1_B = NET_Q_VALUE_STREAM_1_B;
const V1_IN = NET_Q_VALUE_STREAM_1_IN;
const A0_W = NET_Q_ADVANTAGE_STREAM_0_W;
const A0_B = NET_Q_ADVANTAGE_STREAM_0_B;
const A0_IN = NET_Q_ADVANTAGE_STREAM_0_IN;
const A0_OUT = NET_Q_ADVANTAGE_STREAM_0_OUT;
const A1_W = NET_Q_ADVANTAGE_STREAM_1_W;
const A1_B = NET_Q_ADVANTAGE_STREAM_1_B;
const A1_IN = NET_Q_ADVANTAGE_STREAM_1_IN;
const A1_OUT = NET_Q_ADVANTAGE_STREAM_1_OUT;
// IQN's tau_embed (offsets 0 and never read by the other heads, whose IQN_TAUS = IQN_EMBED = 1).
const T_W = NET_Q_TAU_EMBED_W;
const T_B = NET_Q_TAU_EMBED_B;
// IQN's taus go through the streams TAU_GROUP at a time, so that a group reads the streams'
// weights once; TAU_LANES invocations share each hidden output, one every TAU_LANES-th tau.
const TAU_GROUP = 8u;
const TAU_LANES = WG_X / 256u;
const TAUS_PER_LANE = TAU_GROUP / TAU_LANES;

// act: the layer input at 0 (the state, then the trunk's layers in place; the output layers'
// parts while those run), the streams' hidden layers at HID (value, then advantage at HID +
// V0_OUT); V [ATOMS] then A [45 * ATOMS] (action-major), the mean of A over actions per atom, Q.
// With TRUNK_PARTS > 1, heads (HEADS_LEN >= WG_X floats) also holds the hidden layers' parts,
// part p of output j at j + 256 p, while no head output is live.
const HID = 256u;
var<workgroup> act: array<f32, 512>;
var<workgroup> heads: array<f32, HEADS_LEN>;
var<workgroup> mean_a: array<f32, ATOMS>;
var<workgroup> q: array<f32, 48>;
// IQN (1 float elsewhere): a group of TAU_GROUP taus' h = trunk * phi, then their streams' hidden
// layers (256 floats a tau); their output layers (HEAD_OUT a tau), then each tau's mean of A.
var<workgroup> hbuf: array<f32, IQN_HBUF>;
var<workgroup> iqn_out: array<f32, IQN_OUTS>;
const_assert IQN_TAUS >= 1 && IQN_TAUS <= 128 && IQN_EMBED >= 1;
const_assert HEAD != HEAD_IQN || (IQN_HBUF == TAU_GROUP * 256 && IQN_OUTS == TAU_GROUP * (HEAD_OUT + 1));
const_assert TAU_GROUP % TAU_LANES == 0 && S1_OUT % 16 == 0;
const_assert OUT_PARTS >= 1 && (OUT_PARTS == 1 || OUT_PARTS * HEAD_OUT <= WG_X);
const_assert S0_OUT <= WG_X && S1_OUT <= WG_X && V0_OUT + A0_OUT <= WG_X && STATE_DIM <= 256;
const_assert WG_X == 256 * TRUNK_PARTS && HEADS_LEN >= HEAD_OUT && (TRUNK_PARTS == 1 || HEADS_LEN >= WG_X);
const_assert S0_OUT <= 256 && S1_OUT <= 256 && V0_OUT + A0_OUT <= 256 && NUM_ACTIONS <= 48;
const_assert S0_IN == STATE_DIM && V0_IN == S1_OUT && A0_IN == S1_OUT && V1_IN == V0_OUT && A1_IN == A0_OUT;
const_assert NET_Q_VALUE_STREAM_1_OUT == ATOMS && HEAD_OUT == ATOMS + A1_OUT && A1_OUT == NUM_ACTIONS * ATOMS && MARKET_FEATURES <= WG_X;

fn leaky(a: f32) -> f32 {
  return select(a * 0.01, a, a > 0.0);
}

// Float sb of out_f, past the trace, holds the net's weights transposed: a layer's [n_out, n_in]
// matrix at nets[u.netBase + w] is at out_f[sb + w] as [n_in, n_out], so that the invocations'
// loads of input k's weights, one output each, are contiguous (the row-major rows are n_in floats
// apart: every invocation's load was its own cache line). Written by the backtest's first launch.
var<private> sb: u32;

fn transpose_layer(w: u32, n_in: u32, n_out: u32, lid: u32) {
  for (var i = lid; i < n_in * n_out; i += WG_X) {
    out_f[sb + w + (i % n_in) * n_out + i / n_in] = nets[u.netBase + w + i];
  }
}

fn transpose_net(lid: u32) {
  transpose_layer(S0_W, S0_IN, S0_OUT, lid);
  transpose_layer(S1_W, S1_IN, S1_OUT, lid);
  transpose_layer(V0_W, V0_IN, V0_OUT, lid);
  transpose_layer(A0_W, A0_IN, A0_OUT, lid);
  transpose_layer(V1_W, V1_IN, ATOMS, lid);
  transpose_layer(A1_W, A1_IN, A1_OUT, lid);
}

// IQN: phi_t = relu(tau_embed(cosine features of tau_t)) of every act tau, into out_f at
// sb + NET_Q_SIZE ([IQN_TAUS, S1_OUT]), by the backtest's first launch (the taus and the net are
// fixed for the backtest).
// Output j sums its bias, then its inputs in order (forwardIqn's dense).
fn iqn_phi(lid: u32) {
  for (var i = lid; i < IQN_TAUS * S1_OUT; i += WG_X) {
    let t = i / S1_OUT;
    let j = i % S1_OUT;
    let tau = iqn_act_tau(t);
    var acc = nets[u.netBase + T_B + j];
    for (var k = 0u; k < IQN_EMBED; k++) {
      acc = acc + nets[u.netBase + T_W + j * IQN_EMBED + k] * iqn_cos_feature(k, tau);
    }
    out_f[sb + NET_Q_SIZE + i] = max(acc, 0.0);
  }
}

// acc0 plus inputs k0 .. k1 - 1 of output j of a dense layer, in order: act[x_off + k] times the
// transposed weights at out_f[sb + w] ([n_in, n_out]). Sixty-four loads in flight before their
// sums (the GPU build, LOADS 64), then sixteen, then one at a time (one invocation's loads are all
// it has to hide the memory's latency with; 64 measured 12% faster than 16 on an H100). The
// software adapters' build (LOADS 16) leaves the 64-load block out: lavapipe's LLVM took 48 s to
// compile the plain head's sequential build with it, 7 s without; the sums are the same.
fn dense_range(w: u32, n_out: u32, j: u32, x_off: u32, k0: u32, k1: u32, acc0: f32) -> f32 {
  var acc = acc0;
  let col = sb + w + j;
  var k = k0;
//!if LOADS == 64
  for (; k + 64u <= k1; k += 64u) {
    let w0 = out_f[col + (k + 0u) * n_out];
    let w1 = out_f[col + (k + 1u) * n_out];
    let w2 = out_f[col + (k + 2u) * n_out];
    let w3 = out_f[col + (k + 3u) * n_out];
    let w4 = out_f[col + (k + 4u) * n_out];
    let w5 = out_f[col + (k + 5u) * n_out];
    let w6 = out_f[col + (k + 6u) * n_out];
    let w7 = out_f[col + (k + 7u) * n_out];
    let w8 = out_f[col + (k + 8u) * n_out];
    let w9 = out_f[col + (k + 9u) * n_out];
    let w10 = out_f[col + (k + 10u) * n_out];
    let w11 = out_f[col + (k + 11u) * n_out];
    let w12 = out_f[col + (k + 12u) * n_out];
    let w13 = out_f[col + (k + 13u) * n_out];
    let w14 = out_f[col + (k + 14u) * n_out];
    let w15 = out_f[col + (k + 15u) * n_out];
    let w16 = out_f[col + (k + 16u) * n_out];
    let w17 = out_f[col + (k + 17u) * n_out];
    let w18 = out_f[col + (k + 18u) * n_out];
    let w19 = out_f[col + (k + 19u) * n_out];
    let w20 = out_f[col + (k + 20u) * n_out];
    let w21 = out_f[col + (k + 21u) * n_out];
    let w22 = out_f[col + (k + 22u) * n_out];
    let w23 = out_f[col + (k + 23u) * n_out];
    let w24 = out_f[col + (k + 24u) * n_out];
    let w25 = out_f[col + (k + 25u) * n_out];
    let w26 = out_f[col + (k + 26u) * n_out];
    let w27 = out_f[col + (k + 27u) * n_out];
    let w28 = out_f[col + (k + 28u) * n_out];
    let w29 = out_f[col + (k + 29u) * n_out];
    let w30 = out_f[col + (k + 30u) * n_out];
    let w31 = out_f[col + (k + 31u) * n_out];
    let w32 = out_f[col + (k + 32u) * n_out];
    let w33 = out_f[col + (k + 33u) * n_out];
    let w34 = out_f[col + (k + 34u) * n_out];
    let w35 = out_f[col + (k + 35u) * n_out];
    let w36 = out_f[col + (k + 36u) * n_out];
    let w37 = out_f[col + (k + 37u) * n_out];
    let w38 = out_f[col + (k + 38u) * n_out];
    let w39 = out_f[col + (k + 39u) * n_out];
    let w40 = out_f[col + (k + 40u) * n_out];
    let w41 = out_f[col + (k + 41u) * n_out];
    let w42 = out_f[col + (k + 42u) * n_out];
    let w43 = out_f[col + (k + 43u) * n_out];
    let w44 = out_f[col + (k + 44u) * n_out];
    let w45 = out_f[col + (k + 45u) * n_out];
    let w46 = out_f[col + (k + 46u) * n_out];
    let w47 = out_f[col + (k + 47u) * n_out];
    let w48 = out_f[col + (k + 48u) * n_out];
    let w49 = out_f[col + (k + 49u) * n_out];
    let w50 = out_f[col + (k + 50u) * n_out];
    let w51 = out_f[col + (k + 51u) * n_out];
    let w52 = out_f[col + (k + 52u) * n_out];
    let w53 = out_f[col + (k + 53u) * n_out];
    let w54 = out_f[col + (k + 54u) * n_out];
    let w55 = out_f[col + (k + 55u) * n_out];
    let w56 = out_f[col + (k + 56u) * n_out];
    let w57 = out_f[col + (k + 57u) * n_out];
    let w58 = out_f[col + (k + 58u) * n_out];
    let w59 = out_f[col + (k + 59u) * n_out];
    let w60 = out_f[col + (k + 60u) * n_out];
    let w61 = out_f[col + (k + 61u) * n_out];
    let w62 = out_f[col + (k + 62u) * n_out];
    let w63 = out_f[col + (k + 63u) * n_out];
    acc = acc + w0 * act[x_off + k + 0u];
    acc = acc + w1 * act[x_off + k + 1u];
    acc = acc + w2 * act[x_off + k + 2u];
    acc = acc + w3 * act[x_off + k + 3u];
    acc = acc + w4 * act[x_off + k + 4u];
    acc = acc + w5 * act[x_off + k + 5u];
    acc = acc + w6 * act[x_off + k + 6u];
    acc = acc + w7 * act[x_off + k + 7u];
    acc = acc + w8 * act[x_off + k + 8u];
    acc = acc + w9 * act[x_off + k + 9u];
    acc = acc + w10 * act[x_off + k + 10u];
    acc = acc + w11 * act[x_off + k + 11u];
    acc = acc + w12 * act[x_off + k + 12u];
    acc = acc + w13 * act[x_off + k + 13u];
    acc = acc + w14 * act[x_off + k + 14u];
    acc = acc + w15 * act[x_off + k + 15u];
    acc = acc + w16 * act[x_off + k + 16u];
    acc = acc + w17 * act[x_off + k + 17u];
    acc = acc + w18 * act[x_off + k + 18u];
    acc = acc + w19 * act[x_off + k + 19u];
    acc = acc + w20 * act[x_off + k + 20u];
    acc = acc + w21 * act[x_off + k + 21u];
    acc = acc + w22 * act[x_off + k + 22u];
    acc = acc + w23 * act[x_off + k + 23u];
    acc = acc + w24 * act[x_off + k + 24u];
    acc = acc + w25 * act[x_off + k + 25u];
    acc = acc + w26 * act[x_off + k + 26u];
    acc = acc + w27 * act[x_off + k + 27u];
    acc = acc + w28 * act[x_off + k + 28u];
    acc = acc + w29 * act[x_off + k + 29u];
    acc = acc + w30 * act[x_off + k + 30u];
    acc = acc + w31 * act[x_off + k + 31u];
    acc = acc + w32 * act[x_off + k + 32u];
    acc = acc + w33 * act[x_off + k + 33u];
    acc = acc + w34 * act[x_off + k + 34u];
    acc = acc + w35 * act[x_off + k + 35u];
    acc = acc + w36 * act[x_off + k + 36u];
    acc = acc + w37 * act[x_off + k + 37u];
    acc = acc + w38 * act[x_off + k + 38u];
    acc = acc + w39 * act[x_off + k + 39u];
    acc = acc + w40 * act[x_off + k + 40u];
    acc = acc + w41 * act[x_off + k + 41u];
    acc = acc + w42 * act[x_off + k + 42u];
    acc = acc + w43 * act[x_off + k + 43u];
    acc = acc + w44 * act[x_off + k + 44u];
    acc = acc + w45 * act[x_off + k + 45u];
    acc = acc + w46 * act[x_off + k + 46u];
    acc = acc + w47 * act[x_off + k + 47u];
    acc = acc + w48 * act[x_off + k + 48u];
    acc = acc + w49 * act[x_off + k + 49u];
    acc = acc + w50 * act[x_off + k + 50u];
    acc = acc + w51 * act[x_off + k + 51u];
    acc = acc + w52 * act[x_off + k + 52u];
    acc = acc + w53 * act[x_off + k + 53u];
    acc = acc + w54 * act[x_off + k + 54u];
    acc = acc + w55 * act[x_off + k + 55u];
    acc = acc + w56 * act[x_off + k + 56u];
    acc = acc + w57 * act[x_off + k + 57u];
    acc = acc + w58 * act[x_off + k + 58u];
    acc = acc + w59 * act[x_off + k + 59u];
    acc = acc + w60 * act[x_off + k + 60u];
    acc = acc + w61 * act[x_off + k + 61u];
    acc = acc + w62 * act[x_off + k + 62u];
    acc = acc + w63 * act[x_off + k + 63u];
  }
//!endif
  for (; k + 16u <= k1; k += 16u) {
    let w0 = out_f[col + (k + 0u) * n_out];
    let w1 = out_f[col + (k + 1u) * n_out];
    let w2 = out_f[col + (k + 2u) * n_out];
    let w3 = out_f[col + (k + 3u) * n_out];
    let w4 = out_f[col + (k + 4u) * n_out];
    let w5 = out_f[col + (k + 5u) * n_out];
    let w6 = out_f[col + (k + 6u) * n_out];
    let w7 = out_f[col + (k + 7u) * n_out];
    let w8 = out_f[col + (k + 8u) * n_out];
    let w9 = out_f[col + (k + 9u) * n_out];
    let w10 = out_f[col + (k + 10u) * n_out];
    let w11 = out_f[col + (k + 11u) * n_out];
    let w12 = out_f[col + (k + 12u) * n_out];
    let w13 = out_f[col + (k + 13u) * n_out];
    let w14 = out_f[col + (k + 14u) * n_out];
    let w15 = out_f[col + (k + 15u) * n_out];
    acc = acc + w0 * act[x_off + k + 0u];
    acc = acc + w1 * act[x_off + k + 1u];
    acc = acc + w2 * act[x_off + k + 2u];
    acc = acc + w3 * act[x_off + k + 3u];
    acc = acc + w4 * act[x_off + k + 4u];
    acc = acc + w5 * act[x_off + k + 5u];
    acc = acc + w6 * act[x_off + k + 6u];
    acc = acc + w7 * act[x_off + k + 7u];
    acc = acc + w8 * act[x_off + k + 8u];
    acc = acc + w9 * act[x_off + k + 9u];
    acc = acc + w10 * act[x_off + k + 10u];
    acc = acc + w11 * act[x_off + k + 11u];
    acc = acc + w12 * act[x_off + k + 12u];
    acc = acc + w13 * act[x_off + k + 13u];
    acc = acc + w14 * act[x_off + k + 14u];
    acc = acc + w15 * act[x_off + k + 15u];
  }
  for (; k < k1; k++) {
    acc = acc + out_f[col + k * n_out] * act[x_off + k];
  }
  return acc;
}

// Output j of a dense layer over act[x_off ..]: the bias, then the inputs in order.
fn dense(w: u32, b: u32, n_in: u32, n_out: u32, j: u32, x_off: u32) -> f32 {
  return dense_range(w, n_out, j, x_off, 0u, n_in, nets[u.netBase + b + j]);
}

// Part p < TRUNK_PARTS of output j of a hidden layer over act[x_off ..]: its inputs [p c, p c + c),
// c = ceil(n_in / TRUNK_PARTS), part 0 from the bias.
fn dense_part(w: u32, b: u32, n_in: u32, n_out: u32, j: u32, p: u32, x_off: u32) -> f32 {
  let c = (n_in + TRUNK_PARTS - 1u) / TRUNK_PARTS;
  let k0 = min(p * c, n_in);
  let acc0 = select(0.0, nets[u.netBase + b + j], p == 0u);
  return dense_range(w, n_out, j, x_off, k0, min(k0 + c, n_in), acc0);
}

// The sum in order of the TRUNK_PARTS parts of output j in heads.
fn parts_sum(j: u32) -> f32 {
  var s = heads[j];
  for (var p = 1u; p < TRUNK_PARTS; p++) {
    s = s + heads[p * 256u + j];
  }
  return s;
}

// A trunk layer over act[0 .. n_in) into act[0 .. n_out) (LeakyReLU); returns output lid to the
// invocations lid < n_out (0 to the rest).
fn trunk_layer(w: u32, b: u32, n_in: u32, n_out: u32, lid: u32) -> f32 {
  var y = 0.0;
  if (TRUNK_PARTS == 1u) {
    if (lid < n_out) {
      y = leaky(dense(w, b, n_in, n_out, lid, 0u));
    }
    workgroupBarrier();
  } else {
    let j = lid % 256u;
    if (j < n_out) {
      heads[lid] = dense_part(w, b, n_in, n_out, j, lid / 256u, 0u);
    }
    workgroupBarrier();
    if (lid < n_out) {
      y = leaky(parts_sum(lid));
    }
  }
  if (lid < n_out) {
    act[lid] = y;
  }
  workgroupBarrier();
  return y;
}

// Part p of output t of the streams' output layers (value_stream.1 for t < ATOMS, then
// advantage_stream.1): its inputs [p c, p c + c), c = ceil(n_in / OUT_PARTS), part 0 from the bias.
// The value and advantage outputs take the same path (no divergence within a warp).
fn output_part(t: u32, p: u32) -> f32 {
  let adv = t >= ATOMS;
  let n_in = select(u32(V1_IN), u32(A1_IN), adv);
  let j = select(t, t - ATOMS, adv);
  let b = select(u32(V1_B), u32(A1_B), adv);
  let c = (n_in + OUT_PARTS - 1u) / OUT_PARTS;
  let k0 = min(p * c, n_in);
  let acc0 = select(0.0, nets[u.netBase + b + j], p == 0u);
  return dense_range(select(u32(V1_W), u32(A1_W), adv), select(u32(ATOMS), u32(A1_OUT), adv), j,
                     select(HID, HID + V0_OUT, adv), k0, min(k0 + c, n_in), acc0);
}

// C51 support point k: vMin + k * delta, delta = (vMax - vMin) / (atoms - 1).
fn c51_atom(k: u32) -> f32 {
  let delta = (u.vMax - u.vMin) / f32(ATOMS - 1);
  return u.vMin + f32(k) * delta;
}

// Q of action a from heads and mean_a, plain and IQN (the quantile Q_tau of the tau in flight).
fn q_of(a: u32) -> f32 {
  return (heads[0] + heads[ATOMS + a]) - mean_a[0];
}

// C51 Q of every action into q (the whole workgroup): the expectation over the support of the
// softmax over atoms of V + A - mean A. The logits and their exponentials run on every invocation;
// the max, the sum and the expectation one action an invocation in atom order, so every Q has the
// bits of the one-invocation loop (forwardC51's order). They overwrite A; q holds each action's max
// until its Q.
fn c51_q(lid: u32) {
  for (var t = lid; t < A1_OUT; t += WG_X) {
    let z = t % ATOMS;
    heads[ATOMS + t] = (heads[z] + heads[ATOMS + t]) - mean_a[z];
  }
  workgroupBarrier();
  if (lid < NUM_ACTIONS) {
    var mx = -3.402823e38;
    for (var z = 0u; z < ATOMS; z++) {
      let logit = heads[ATOMS + lid * ATOMS + z];
      if (logit > mx) {
        mx = logit;
      }
    }
    q[lid] = mx;
  }
  workgroupBarrier();
  for (var t = lid; t < A1_OUT; t += WG_X) {
    heads[ATOMS + t] = exp(heads[ATOMS + t] - q[t / ATOMS]);
  }
  workgroupBarrier();
  if (lid < NUM_ACTIONS) {
    let o = ATOMS + lid * ATOMS;
    var s = 0.0;
    for (var z = 0u; z < ATOMS; z++) {
      s = s + heads[o + z];
    }
    var qa = 0.0;
    for (var z = 0u; z < ATOMS; z++) {
      qa = qa + (heads[o + z] / s) * c51_atom(z);
    }
    q[lid] = qa;
  }
}

// tau_t = f32((t + 0.5) / K) = f32((2t + 1) / 2K), correctly rounded as the host's f64 quotient
// rounded to f32 (WGSL's division is only within 2.5 ulp): m = floor(a 2^s / b) with the least s
// that puts m in [2^23, 2^24), rounded to nearest even by the remainder, then m 2^-s (exact).
// a 2^s < 2b 2^23 <= 2^32 for 2K <= 256.
fn iqn_act_tau(t: u32) -> f32 {
  let a = 2u * t + 1u;
  let b = 2u * IQN_TAUS;
  var s = 0u;
  while ((a << s) < (b << 23u)) {
    s++;
  }
  let n = a << s;
  var m = n / b;
  let r = n % b;
  if (2u * r > b || (2u * r == b && (m & 1u) == 1u)) {
    m++;
  }
  return f32(m) * bitcast<f32>((127u - s) << 23u);
}

// Both streams on act (hidden layers, output layers, the mean of A per atom): heads and mean_a.
// The output layers: with OUT_PARTS > 1 (plain, IQN: 46 outputs) invocation t + p HEAD_OUT sums
// part p of output t into act[t + p HEAD_OUT] (the layer input there was last read before the
// barrier above), and output t is then part 0 + part 1 + ... in order; C51's 2,346 outputs take
// one invocation each, in rounds.
fn streams(lid: u32) {
  if (TRUNK_PARTS == 1u) {
    if (lid < V0_OUT) {
      act[HID + lid] = leaky(dense(V0_W, V0_B, V0_IN, V0_OUT, lid, 0u));
    } else if (lid < V0_OUT + A0_OUT) {
      act[HID + lid] = leaky(dense(A0_W, A0_B, A0_IN, A0_OUT, lid - V0_OUT, 0u));
    }
  } else {
    let j = lid % 256u;
    let p = lid / 256u;
    if (j < V0_OUT) {
      heads[lid] = dense_part(V0_W, V0_B, V0_IN, V0_OUT, j, p, 0u);
    } else if (j < V0_OUT + A0_OUT) {
      heads[lid] = dense_part(A0_W, A0_B, A0_IN, A0_OUT, j - V0_OUT, p, 0u);
    }
    workgroupBarrier();
    if (lid < V0_OUT + A0_OUT) {
      act[HID + lid] = leaky(parts_sum(lid));
    }
  }
  workgroupBarrier();
  if (OUT_PARTS == 1u) {
    for (var t = lid; t < HEAD_OUT; t += WG_X) {
      heads[t] = output_part(t, 0u);
    }
  } else {
    if (lid < OUT_PARTS * HEAD_OUT) {
      act[lid] = output_part(lid % HEAD_OUT, lid / HEAD_OUT);
    }
    workgroupBarrier();
    if (lid < HEAD_OUT) {
      var sum = act[lid];
      for (var p = 1u; p < OUT_PARTS; p++) {
        sum = sum + act[p * HEAD_OUT + lid];
      }
      heads[lid] = sum;
    }
  }
  workgroupBarrier();
  if (lid < ATOMS) {
    var sum = 0.0;
    for (var a = 0u; a < NUM_ACTIONS; a++) {
      sum = sum + heads[ATOMS + a * ATOMS + lid];
    }
    mean_a[lid] = sum / f32(NUM_ACTIONS);
  }
  workgroupBarrier();
}

// Output k of the streams' output layers (value_stream.1 for k < ATOMS, then advantage_stream.1)
// of tau g's hidden layers in hbuf: the bias, then the inputs in order.
fn iqn_output(g: u32, k: u32) -> f32 {
  let adv = k >= ATOMS;
  let n_in = select(u32(V1_IN), u32(A1_IN), adv);
  let j = select(k, k - ATOMS, adv);
  let n_out = select(u32(ATOMS), u32(A1_OUT), adv);
  let col = sb + select(u32(V1_W), u32(A1_W), adv) + j;
  let x = g * 256u + select(0u, u32(V0_OUT), adv);
  var acc = nets[u.netBase + select(u32(V1_B), u32(A1_B), adv) + j];
  var i = 0u;
  for (; i + 16u <= n_in; i += 16u) {
    let w0 = out_f[col + (i + 0u) * n_out];
    let w1 = out_f[col + (i + 1u) * n_out];
    let w2 = out_f[col + (i + 2u) * n_out];
    let w3 = out_f[col + (i + 3u) * n_out];
    let w4 = out_f[col + (i + 4u) * n_out];
    let w5 = out_f[col + (i + 5u) * n_out];
    let w6 = out_f[col + (i + 6u) * n_out];
    let w7 = out_f[col + (i + 7u) * n_out];
    let w8 = out_f[col + (i + 8u) * n_out];
    let w9 = out_f[col + (i + 9u) * n_out];
    let w10 = out_f[col + (i + 10u) * n_out];
    let w11 = out_f[col + (i + 11u) * n_out];
    let w12 = out_f[col + (i + 12u) * n_out];
    let w13 = out_f[col + (i + 13u) * n_out];
    let w14 = out_f[col + (i + 14u) * n_out];
    let w15 = out_f[col + (i + 15u) * n_out];
    acc = acc + w0 * hbuf[x + i + 0u];
    acc = acc + w1 * hbuf[x + i + 1u];
    acc = acc + w2 * hbuf[x + i + 2u];
    acc = acc + w3 * hbuf[x + i + 3u];
    acc = acc + w4 * hbuf[x + i + 4u];
    acc = acc + w5 * hbuf[x + i + 5u];
    acc = acc + w6 * hbuf[x + i + 6u];
    acc = acc + w7 * hbuf[x + i + 7u];
    acc = acc + w8 * hbuf[x + i + 8u];
    acc = acc + w9 * hbuf[x + i + 9u];
    acc = acc + w10 * hbuf[x + i + 10u];
    acc = acc + w11 * hbuf[x + i + 11u];
    acc = acc + w12 * hbuf[x + i + 12u];
    acc = acc + w13 * hbuf[x + i + 13u];
    acc = acc + w14 * hbuf[x + i + 14u];
    acc = acc + w15 * hbuf[x + i + 15u];
  }
  for (; i < n_in; i++) {
    acc = acc + out_f[col + i * n_out] * hbuf[x + i];
  }
  return acc;
}

// IQN's Q into q (forwardIqn's order): per act tau t, h = trunk * phi_t, the streams on h and
// Q_t = (V + A) - mean A; Q = (sum over t in order of Q_t) / IQN_TAUS. The trunk is in act. The
// taus go TAU_GROUP at a time: invocation lid computes hidden output lid % 256 of the group's taus
// lid / 256, lid / 256 + TAU_LANES, ..., each over all its inputs in order, so a weight is loaded
// once per group and lane (the lanes' loads of it meet in the cache).
fn iqn_q(lid: u32) {
  var qsum = 0.0;
  let j = lid % 256u;
  let lane = lid / 256u;
  let adv = j >= V0_OUT;
  let jj = select(j, j - V0_OUT, adv);
  let n_out = select(u32(V0_OUT), u32(A0_OUT), adv);
  let col = sb + select(u32(V0_W), u32(A0_W), adv) + jj;
  let bias = nets[u.netBase + select(u32(V0_B), u32(A0_B), adv) + jj];
  for (var t0 = 0u; t0 < IQN_TAUS; t0 += TAU_GROUP) {
    let gn = min(TAU_GROUP, IQN_TAUS - t0);
    for (var i = lid; i < gn * S1_OUT; i += WG_X) {
      let g = i / S1_OUT;
      let k = i % S1_OUT;
      hbuf[g * 256u + k] = act[k] * out_f[sb + NET_Q_SIZE + (t0 + g) * S1_OUT + k];
    }
    workgroupBarrier();
    var acc: array<f32, TAUS_PER_LANE>;
    if (j < V0_OUT + A0_OUT) {
      for (var m = 0u; m < TAUS_PER_LANE; m++) {
        acc[m] = bias;
      }
      // Sixteen loads in flight before their sums, as in dense_range.
      for (var k = 0u; k < S1_OUT; k += 16u) {
        let w0 = out_f[col + (k + 0u) * n_out];
        let w1 = out_f[col + (k + 1u) * n_out];
        let w2 = out_f[col + (k + 2u) * n_out];
        let w3 = out_f[col + (k + 3u) * n_out];
        let w4 = out_f[col + (k + 4u) * n_out];
        let w5 = out_f[col + (k + 5u) * n_out];
        let w6 = out_f[col + (k + 6u) * n_out];
        let w7 = out_f[col + (k + 7u) * n_out];
        let w8 = out_f[col + (k + 8u) * n_out];
        let w9 = out_f[col + (k + 9u) * n_out];
        let w10 = out_f[col + (k + 10u) * n_out];
        let w11 = out_f[col + (k + 11u) * n_out];
        let w12 = out_f[col + (k + 12u) * n_out];
        let w13 = out_f[col + (k + 13u) * n_out];
        let w14 = out_f[col + (k + 14u) * n_out];
        let w15 = out_f[col + (k + 15u) * n_out];
        for (var m = 0u; m < TAUS_PER_LANE; m++) {
          let x = (lane + m * TAU_LANES) * 256u + k;
          var a = acc[m];
          a = a + w0 * hbuf[x + 0u];
          a = a + w1 * hbuf[x + 1u];
          a = a + w2 * hbuf[x + 2u];
          a = a + w3 * hbuf[x + 3u];
          a = a + w4 * hbuf[x + 4u];
          a = a + w5 * hbuf[x + 5u];
          a = a + w6 * hbuf[x + 6u];
          a = a + w7 * hbuf[x + 7u];
          a = a + w8 * hbuf[x + 8u];
          a = a + w9 * hbuf[x + 9u];
          a = a + w10 * hbuf[x + 10u];
          a = a + w11 * hbuf[x + 11u];
          a = a + w12 * hbuf[x + 12u];
          a = a + w13 * hbuf[x + 13u];
          a = a + w14 * hbuf[x + 14u];
          a = a + w15 * hbuf[x + 15u];
          acc[m] = a;
        }
      }
    }
    workgroupBarrier();
    if (j < V0_OUT + A0_OUT) {
      for (var m = 0u; m < TAUS_PER_LANE; m++) {
        let g = lane + m * TAU_LANES;
        if (g < gn) {
          hbuf[g * 256u + j] = leaky(acc[m]);
        }
      }
    }
    workgroupBarrier();
    for (var i = lid; i < gn * HEAD_OUT; i += WG_X) {
      iqn_out[i] = iqn_output(i / HEAD_OUT, i % HEAD_OUT);
    }
    workgroupBarrier();
    // Each tau's mean of A (one invocation a tau), then each action's Q_t added in tau order.
    if (lid < gn) {
      let o = lid * HEAD_OUT + ATOMS;
      var sum = 0.0;
      for (var a = 0u; a < NUM_ACTIONS; a++) {
        sum = sum + iqn_out[o + a];
      }
      iqn_out[TAU_GROUP * HEAD_OUT + lid] = sum / f32(NUM_ACTIONS);
    }
    workgroupBarrier();
    if (lid < NUM_ACTIONS) {
      for (var g = 0u; g < gn; g++) {
        let o = g * HEAD_OUT;
        qsum = qsum + ((iqn_out[o] + iqn_out[o + ATOMS + lid]) - iqn_out[TAU_GROUP * HEAD_OUT + g]);
      }
    }
    workgroupBarrier();
  }
  if (lid < NUM_ACTIONS) {
    q[lid] = qsum / f32(IQN_TAUS);
  }
}

// The net on the state in act (the trunk, then the head) into q, the whole workgroup; invocation 0
// returns the first argmax (the others 0).
fn greedy(lid: u32) -> i32 {
  trunk_layer(S0_W, S0_B, S0_IN, S0_OUT, lid);
  trunk_layer(S1_W, S1_B, S1_IN, S1_OUT, lid);
  if (HEAD == HEAD_IQN) {
    iqn_q(lid);
  } else if (HEAD == HEAD_C51) {
    streams(lid);
    c51_q(lid);
  } else {
    streams(lid);
    if (lid < NUM_ACTIONS) {
      q[lid] = q_of(lid);
    }
  }
  workgroupBarrier();
  var a = 0;
  if (lid == 0u) {
    for (var k = 1; k < i32(NUM_ACTIONS); k++) {
      if (q[k] > q[a]) {
        a = k;
      }
    }
  }
  return a;
}

// Invocation 0: the state of episode ep into act past the market features, and its bar into bar_s;
// then every invocation loads the bar's market features.
fn load_state(ep: Episode, lid: u32) {
  if (lid == 0u) {
    bar_s = ep.bar;
    let pf = portfolio_features(ep);
    act[MARKET_FEATURES] = pf.x;
    act[MARKET_FEATURES + 1u] = pf.y;
    act[MARKET_FEATURES + 2u] = pf.z;
  }
  let bar = workgroupUniformLoad(&bar_s);
  if (lid < MARKET_FEATURES) {
    act[lid] = features[u32(bar) * MARKET_FEATURES + lid];
  }
  workgroupBarrier();
}

@compute @workgroup_size(WG_X, 1, 1)
fn validate_dqn(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
  let steps = u.steps;
  sb = OUT_F_STRIDE * steps;
//!if SPECULATE == 1
  // The rounds' build runs only the rounds: the sequential launches take the build without them,
  // so that either inlines the net's code once (lavapipe's LLVM, software build: 39 s for a build
  // with both, 14 s for the rounds alone).
  if (u.mode == MODE_GUESS) {
    spec_guess(wid.x, lid);
    return;
  }
  if (u.mode == MODE_ROLL) {
    spec_roll(lid);
    return;
  }
//!endif
//!if SPECULATE == 0
  var ep: Episode;
  if (lid == 0u) {
    validate_open(&ep);
  }
  if (u.stepBegin == 0u) {
    transpose_net(lid);
    if (HEAD == HEAD_IQN) {
      iqn_phi(lid);
    }
  }
  storageBarrier();
  var l = u.stepBegin;
  loop {
    if (l >= u.stepEnd || workgroupUniformLoad(&stop_s) != 0) {
      break;
    }
    load_state(ep, lid);
    let a = greedy(lid);
    if (lid == 0u) {
      validate_record(&ep, a, l, steps);
    }
    l++;
  }
  // After a collapse the account stays where it ended; the episode goes back for the next launch.
  if (lid == 0u) {
    validate_close(ep, l, steps);
  }
//!endif
}
