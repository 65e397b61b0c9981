// iqn_taus: the IQN taus of a train step and their cosine features (src/kernels/iqn_taus.ts).
// Row r < 2 batch nTau: online taus (r < batch nTau) then target taus; sample b, Philox word k
// (t, or nTau + t for a target tau) of Philox(TAU_STREAM, b, step, k >> 2), step =
// state[stateAt] + stepSlot. taus[tauOff + r] = tau_r; acts[cosOff + r embed + i] = cos(i pi tau_r).
// Bindings (declared by the preamble generated from src/kernels/iqn_taus.ts):
//   state: array<u32>, read; taus, acts: array<f32>, read_write
//   u: Uniforms { batch, nTau, embed, stateAt, stepSlot, key0, key1, tauOff, cosOff }
// Workgroup: WG_X threads, one (r, i) each. Numerics: cos with its argument reduced to [-pi, pi]
// (Cody-Waite, two-part 2 pi): WGSL's cos is only specified there, and the arguments reach 63 pi.
//!include philox.wgsl

const PI_F32: f32 = 3.141592653589793;
const TWO_PI_HI: f32 = 6.28125;
const TWO_PI_LO: f32 = 0.0019353071795864769;
const INV_TWO_PI: f32 = 0.15915494309189535;

fn cos_reduced(x: f32) -> f32 {
  let n = round(x * INV_TWO_PI);
  return cos((x - n * TWO_PI_HI) - n * TWO_PI_LO);
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
  acts[u.cosOff + idx] = cos_reduced((f32(i) * PI_F32) * tau);
}
