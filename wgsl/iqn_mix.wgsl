// iqn_mix: IQN's product of the trunk output with the tau embedding (src/kernels/iqn_mix.ts).
// Row r = b nTau + t of the embedding belongs to trunk row b.
//   mode 0: acts[outOff + r w + j] = trunk[b, j] * e[r, j]
//   mode 1: deltas[dTrunkOff + b w + j] = (sum_t dh[r, j] e[r, j]) act'(trunk[b, j]),
//           deltas[dEmbedOff + r w + j] = dh[r, j] trunk[b, j] act'(e[r, j]), dh = deltas[dOff ..]
// Bindings (declared by the preamble generated from src/kernels/iqn_mix.ts):
//   acts, deltas: array<f32>, read_write
//   u: Uniforms { mode, batch, nTau, width, trunkOff, embedOff, outOff, dOff, dTrunkOff,
//                 dEmbedOff, trunkAct, embedAct }
// Workgroup: WG_X threads, one float each (mode 1: one trunk float and its nTau embedding floats).
// Numerics: f32, sums over t ascending.

fn act_derivative(y: f32, act: u32) -> f32 {
  if (act == 1u) {
    return select(0.0, 1.0, y > 0.0);
  }
  if (act == 2u) {
    return select(0.01, 1.0, y > 0.0);
  }
  return 1.0;
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn iqn_mix(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let idx = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * u32(WG_X) + lid;
  let w = u.width;
  if (u.mode == 0u) {
    if (idx >= u.batch * u.nTau * w) {
      return;
    }
    let r = idx / w;
    let j = idx % w;
    acts[u.outOff + idx] = acts[u.trunkOff + (r / u.nTau) * w + j] * acts[u.embedOff + idx];
    return;
  }
  if (idx >= u.batch * w) {
    return;
  }
  let b = idx / w;
  let j = idx % w;
  let hv = acts[u.trunkOff + idx];
  var s = 0.0;
  for (var t = 0u; t < u.nTau; t++) {
    let k = (b * u.nTau + t) * w + j;
    let dh = deltas[u.dOff + k];
    let e = acts[u.embedOff + k];
    s = s + dh * e;
    deltas[u.dEmbedOff + k] = (dh * hv) * act_derivative(e, u.embedAct);
  }
  deltas[u.dTrunkOff + idx] = s * act_derivative(hv, u.trunkAct);
}
