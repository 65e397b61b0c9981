// iqn_taus: the IQN taus of a train step and their cosine features (src/kernels/iqn_taus.ts).
// Row r < 2 batch nTau: online taus (r < batch nTau) then target taus; sample b, Philox word k
// (t, or nTau + t for a target tau) of Philox(TAU_STREAM, b, step, k >> 2), step =
// state[stateAt] + stepSlot. taus[tauOff + r] = tau_r; acts[cosOff + r embed + i] = cos(i pi tau_r).
// Bindings (declared by the preamble generated from src/kernels/iqn_taus.ts):
//   state: array<u32>, read; taus, acts: array<f32>, read_write
//   u: Uniforms { batch, nTau, embed, stateAt, stepSlot, key0, key1, tauOff, cosOff }
// Workgroup: WG_X threads, one (r, i) each. Numerics: WGSL's builtin cos is only specified to
// 2^-11 absolute on [-pi, pi] (SwiftShader's is that coarse) and the arguments reach 63 pi, so
// cos is computed here: Cephes' cosf (three-part pi / 4 reduction, degree-6 polynomials), within
// about 1e-7 of the correctly rounded value on any adapter.
//!include philox.wgsl

const PI_F32: f32 = 3.141592653589793;
const FOUR_OVER_PI: f32 = 1.2732395447351628;
const DP1: f32 = 0.78515625;
const DP2: f32 = 2.4187564849853515625e-4;
const DP3: f32 = 3.77489497744594108e-8;

fn cos_cephes(v: f32) -> f32 {
  let x = abs(v);
  var j = u32(x * FOUR_OVER_PI);
  j = (j + 1u) & ~1u;
  let y = f32(j);
  let r = ((x - y * DP1) - y * DP2) - y * DP3;
  j = j & 7u;
  var sign = 1.0;
  if (j > 3u) {
    j = j - 4u;
    sign = -sign;
  }
  if (j > 1u) {
    sign = -sign;
  }
  let z = r * r;
  var c: f32;
  if (j == 1u || j == 2u) {
    c = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
  } else {
    c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
  }
  return sign * c;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn iqn_taus(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let idx = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * u32(WG_X) + lid;
  let half = u.batch * u.nTau;
  if (idx >= 2u * half * u.embed) {
    return;
  }
  let r = idx / u.embed;
  let i = idx % u.embed;
  let is_target = r >= half;
  let q = select(r, r - half, is_target);
  let b = q / u.nTau;
  let k = select(0u, u.nTau, is_target) + q % u.nTau;
  let step = state[u.stateAt] + u.stepSlot;
  let w = philox4x32(vec4<u32>(TAU_STREAM, b, step, k >> 2u), vec2<u32>(u.key0, u.key1));
  let tau = u32_to_unit_float(w[k & 3u]);
  if (i == 0u) {
    taus[u.tauOff + r] = tau;
  }
  acts[u.cosOff + idx] = cos_cephes((f32(i) * PI_F32) * tau);
}
