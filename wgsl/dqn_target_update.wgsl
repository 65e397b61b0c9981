// dqn_target_update: the target network's update after a DQN-family train step
// (src/learn/dqn_update.ts updateTarget), over count params k:
//   hard == 1  targetNet[targetOff + k] = online[onlineOff + k]
//   hard == 0  targetNet[targetOff + k] = t + tau (o - t)   (Polyak)
// Bindings (declared by the preamble generated from src/kernels/dqn_target_update.ts):
//   online: array<f32>, read; targetNet: array<f32>, read_write
//   u: Uniforms { count, onlineOff, targetOff, hard, tau }
// Workgroup: WG_X threads, one param each. Numerics: f32 (the compiler may fuse the multiply-add:
// one ulp).

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn dqn_target_update(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let k = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * u32(WG_X) + tid;
  if (k >= u.count) {
    return;
  }
  let o = online[u.onlineOff + k];
  let t = targetNet[u.targetOff + k];
  targetNet[u.targetOff + k] = select(t + u.tau * (o - t), o, u.hard == 1u);
}
