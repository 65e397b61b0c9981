// iqn_taus: the IQN taus of a train step and their cosine features (src/kernels/iqn_taus.ts).
// Row r < 2 batch nTau: online taus (r < batch nTau) then target taus; sample b, Philox word k
// (t, or nTau + t for a target tau) of Philox(TAU_STREAM, b, step, k >> 2), step =
// state[stateAt] + stepSlot. taus[tauOff + r] = tau_r; acts[cosOff + r embed + i] = cos(i pi tau_r).
// Bindings (declared by the preamble generated from src/kernels/iqn_taus.ts):
//   state: array<u32>, read; taus, acts: array<f32>, read_write
//   u: Uniforms { batch, nTau, embed, stateAt, stepSlot, key0, key1, tauOff, cosOff }
// Workgroup: WG_X threads, one (r, i) each. Numerics: the cosines are iqn_cos.wgsl's Cephes cosf
// (WGSL's builtin cos is too loose at arguments up to 63 pi), within about 1e-7 of the
// correctly rounded value on any adapter.
//!include philox.wgsl
//!include iqn_cos.wgsl

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
  acts[u.cosOff + idx] = iqn_cos_feature(i, tau);
}
