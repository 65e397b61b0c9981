// dueling_combine: the dueling head's combination and its backward (src/learn/dueling.ts), rows
// k < rows of n = atoms outputs per action, action-major; thread (k, z):
//   backward == 0  acts[outOff + (k 45 + a) n + z] = (V[k, z] + A[k, a, z]) - (sum_a A[k, a, z]) / 45
//                  with V at acts[vOff + k n + z], A at acts[aOff + (k 45 + a) n + z]
//   backward == 1  dV = deltas[dVOff + k n + z] = sum_a dOut[k, a, z] (dOut at deltas[dOutOff ..]),
//                  deltas[dAOff + (k 45 + a) n + z] = dOut[k, a, z] - dV / 45
// Sums over a ascending, f32.
// Bindings (declared by the preamble generated from src/kernels/dueling_combine.ts):
//   acts: array<f32>, read_write; deltas: array<f32>, read_write
//   u: Uniforms { rows, atoms, backward, vOff, aOff, outOff, dOutOff, dVOff, dAOff }
// Workgroup: WG_X threads, one (row, atom) each. Numerics: f32 (WGSL's division: up to 2.5 ulp).

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn dueling_combine(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * u32(WG_X) + tid;
  let n = u.atoms;
  if (i >= u.rows * n) {
    return;
  }
  let k = i / n;
  let z = i - k * n;
  let base = k * u32(NUM_ACTIONS) * n + z;
  var s = 0.0;
  if (u.backward == 0u) {
    for (var a = 0u; a < u32(NUM_ACTIONS); a++) { s = s + acts[u.aOff + base + a * n]; }
    let mean = s / f32(NUM_ACTIONS);
    let v = acts[u.vOff + i];
    for (var a = 0u; a < u32(NUM_ACTIONS); a++) {
      acts[u.outOff + base + a * n] = (v + acts[u.aOff + base + a * n]) - mean;
    }
  } else {
    for (var a = 0u; a < u32(NUM_ACTIONS); a++) { s = s + deltas[u.dOutOff + base + a * n]; }
    deltas[u.dVOff + i] = s;
    let mean = s / f32(NUM_ACTIONS);
    for (var a = 0u; a < u32(NUM_ACTIONS); a++) {
      deltas[u.dAOff + base + a * n] = deltas[u.dOutOff + base + a * n] - mean;
    }
  }
}
