// The IQN cosine features' cos (src/nets/forward.ts iqnCosines: c_i(tau) = cos((i * PI_F32) * tau)).
// A snippet, not a kernel: iqn_taus.wgsl and validate_dqn.wgsl pull it in with a line
// `//!include iqn_cos.wgsl` (src/kernels/sources.ts). It declares no bindings.
// WGSL's builtin cos is only specified to 2^-11 absolute on [-pi, pi] (SwiftShader's is that
// coarse) and the arguments reach (embed - 1) pi, so cos is computed here: Cephes' cosf
// (three-part pi / 4 reduction, degree-6 polynomials), within about 1e-7 of the correctly
// rounded value on any adapter (the reference rounds f64 Math.cos to f32; CUDA uses cosf).

const PI_F32: f32 = 3.141592653589793;
const FOUR_OVER_PI: f32 = 1.2732395447351628;
const DP1: f32 = 0.78515625;
const DP2: f32 = 2.4187564849853515625e-4;
const DP3: f32 = 3.77489497744594108e-8;

fn cos_cephes(v: f32) -> f32 {
  let x = abs(v);
  var j = u32(x * FOUR_OVER_PI);
  j = (j + 1u) & ~1u;
  let y = f32(j);
  let r = ((x - y * DP1) - y * DP2) - y * DP3;
  j = j & 7u;
  var sign = 1.0;
  if (j > 3u) {
    j = j - 4u;
    sign = -sign;
  }
  if (j > 1u) {
    sign = -sign;
  }
  let z = r * r;
  var c: f32;
  if (j == 1u || j == 2u) {
    c = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
  } else {
    c = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
  }
  return sign * c;
}

// Cosine feature i of tau: cos(f32(f32(i) * PI_F32) * tau), the reference's products in order.
fn iqn_cos_feature(i: u32, tau: f32) -> f32 {
  return cos_cephes((f32(i) * PI_F32) * tau);
}
