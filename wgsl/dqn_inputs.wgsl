// dqn_inputs: the DQN learner's network inputs from a sampled batch in the replay row layout
// (src/learn/replay.ts): thread i < 2 batch STATE_DIM, half h = i / (batch STATE_DIM) (0: s, 1: s'),
// row b, feature k:
//   acts[outOff + i] = rows[b REPLAY_F + (h == 0 ? STATE_AT : NEXT_AT) + k]
// Bindings (declared by the preamble generated from src/kernels/dqn_inputs.ts):
//   rows: array<f32>, read [batch, REPLAY_F]; acts: array<f32>, read_write
//   u: Uniforms { batch, outOff }
// Workgroup: WG_X threads, one float each.

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn dqn_inputs(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) tid: u32,
) {
  let i = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * u32(WG_X) + tid;
  let half = u.batch * u32(STATE_DIM);
  if (i >= 2u * half) {
    return;
  }
  let j = i % half;
  let b = j / u32(STATE_DIM);
  let k = j - b * u32(STATE_DIM);
  let at = select(u32(STATE_AT), u32(NEXT_AT), i >= half);
  acts[u.outOff + i] = rows[b * u32(REPLAY_F) + at + k];
}
