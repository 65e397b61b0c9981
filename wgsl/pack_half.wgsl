// pack_half: the f16 copy of the collection nets for the tensor-core tile engine (ENGINE 4 of
// collect_tile.wgsl). Word i of nets16 holds halves 2i (low) and 2i + 1 (high) of the packed
// layout of src/kernels/collect_half.ts: entry e of `table` (11 words: off, outPad, kPad, then
// w, rows, kLo, kLen of its two blocks) is an outPad x kPad row-major matrix at half `off`;
// row j < rows0 is block 0's output j, then block 1's; input k of a block row is
// nets[w + jr * kLen + k - kLo] inside [kLo, kLo + kLen), zero elsewhere; halves outside every
// entry are zero. Values are clamped to +-65504 before the conversion (pack2x16float).
// u.order 1 (engine 5) stores each matrix in k-groups instead: half i of an entry is input
// 8 (i / (8 outPad)) + i % 8 of row (i / 8) % outPad (the 8 inputs of a group, then the next row).
// Bindings (preamble from src/kernels/collect_half.ts): nets (f32, read), table (u32, read),
// nets16 (u32, read_write); u: { words, entries, order }. One invocation per word; grid1d.

const STRIDE = 11u;

fn packed_value(t: u32, j: u32, k: u32) -> f32 {
  let r0 = table[t + 4u];
  var b = t + 3u;
  var jr = j;
  if (j >= r0) {
    b = t + 7u;
    jr = j - r0;
  }
  let k_lo = table[b + 2u];
  let k_len = table[b + 3u];
  if (jr >= table[b + 1u] || k < k_lo || k >= k_lo + k_len) {
    return 0.0;
  }
  return clamp(nets[table[b] + jr * k_len + (k - k_lo)], -65504.0, 65504.0);
}

@compute @workgroup_size(WG_X, WG_Y, WG_Z)
fn pack_half(
  @builtin(workgroup_id) wid: vec3<u32>,
  @builtin(num_workgroups) nwg: vec3<u32>,
  @builtin(local_invocation_index) lid: u32,
) {
  let wi = (wid.x + nwg.x * (wid.y + nwg.y * wid.z)) * (WG_X * WG_Y * WG_Z) + lid;
  if (wi >= u.words) {
    return;
  }
  let h = 2u * wi;
  var v = vec2<f32>(0.0);
  for (var e = 0u; e < u.entries; e++) {
    let t = e * STRIDE;
    let off = table[t];
    let kp = table[t + 2u];
    let op = table[t + 1u];
    if (h >= off && h < off + op * kp) {
      let i = h - off;
      if (u.order == 1u) {
        // Halves i and i + 1 share a row and a group (i even, groups of 8).
        let j = (i / 8u) % op;
        let k = (i / (8u * op)) * 8u + i % 8u;
        v = vec2<f32>(packed_value(t, j, k), packed_value(t, j, k + 1u));
      } else {
        v = vec2<f32>(packed_value(t, i / kp, i % kp), packed_value(t, (i + 1u) / kp, (i + 1u) % kp));
      }
      break;
    }
  }
  nets16[wi] = pack2x16float(v);
}
