// The minibatch shuffle of src/learn/shuffle.ts: a keyed bijection of [0, count) each thread
// evaluates for its own index. A snippet (pulled in with `//!include shuffle.wgsl`); it needs
// philox.wgsl. 4-round balanced Feistel network on 2h-bit words, h = max(1, ceil(bits(count-1)/2)),
// round k: (L, R) -> (R, L xor (word 0 of Philox(counter = (stream, epoch, R, k), key) & mask)),
// cycle walking until the word lands in [0, count). Integer-only: bit-identical to the TS twin.
//!include philox.wgsl

const SHUFFLE_ROUNDS = 4u;

fn feistel_half_bits(count: u32) -> u32 {
  var bits = 0u;
  if (count > 1u) {
    bits = 32u - countLeadingZeros(count - 1u);
  }
  return max(1u, (bits + 1u) / 2u);
}

// The image of `index` (< count) under the permutation of `epoch`; `stream` is Stream.Shuffle.
fn shuffle_index(index: u32, count: u32, epoch: u32, stream: u32, key: vec2<u32>) -> u32 {
  let h = feistel_half_bits(count);
  let mask = (1u << h) - 1u;
  var x = index;
  loop {
    var left = x >> h;
    var right = x & mask;
    for (var k = 0u; k < SHUFFLE_ROUNDS; k++) {
      let f = philox4x32(vec4<u32>(stream, epoch, right, k), key).x & mask;
      let next = left ^ f;
      left = right;
      right = next;
    }
    x = (left << h) | right;
    if (x < count) {
      break;
    }
  }
  return x;
}
