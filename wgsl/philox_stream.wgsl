// philox_stream: words[i] = word (i & 3) of Philox4x32-10 with
// counter = (stream, base + (i >> 2), step, 0) and key = (key0, key1), for i < n.
// Bindings (declared by the preamble generated from src/kernels/philox_stream.ts):
//   words: array<u32>, read_write, at least n elements
//   u: Uniforms { n, stream, base, step, key0, key1 } (all u32)
// Workgroup: WG_X threads, one 4-word block per thread; workgroups spread over x and y (grid1d),
// so the flat thread id is (x + nwg.x * (y + nwg.y * z)) * threads + local index.
// Exact integer arithmetic; base + block wraps modulo 2^32 like the TS reference.
//!include philox.wgsl

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn philox_stream(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let group = wid.x + nwg.x * (wid.y + nwg.y * wid.z);
  let block = group * (WG_X * WG_Y * WG_Z) + lid;
  // Blocks needed, written so that n close to 2^32 cannot overflow.
  let blocks = (u.n >> 2u) + select(0u, 1u, (u.n & 3u) != 0u);
  if (block >= blocks) {
    return;
  }
  let r = philox4x32(vec4<u32>(u.stream, u.base + block, u.step, 0u), vec2<u32>(u.key0, u.key1));
  for (var w = 0u; w < 4u; w++) {
    let i = block * 4u + w;
    if (i < u.n) {
      words[i] = r[w];
    }
  }
}
