// delta_sum: deltas[outOff + i] = deltas[aOff + i] + deltas[bOff + i] for i < count (the dueling
// trunk's output deltas from its two streams' input gradients).
// Bindings (declared by the preamble generated from src/kernels/delta_sum.ts):
//   deltas: array<f32>, read_write; u: Uniforms { count, aOff, bOff, outOff }
// Workgroup: WG_X threads, one float each. Numerics: one f32 add.

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn delta_sum(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * u32(WG_X) + tid;
  if (i >= u.count) {
    return;
  }
  deltas[u.outOff + i] = deltas[u.aOff + i] + deltas[u.bOff + i];
}
