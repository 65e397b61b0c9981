/**
 * Generalised advantage estimation over one episode slot's L steps (SPEC 9), the plain
 * backward loop the collection kernels run per thread. f32 at every step:
 *
 *   for l = L-1 .. 0 (i = base + l):
 *     done:                     next = 0,            carry = 0
 *     truncated or l == L - 1:  next = boot[l],      carry = 0   (V of the state after step l)
 *     otherwise:                next = values[i+1],  carry = adv[i+1]
 *     delta  = f32(f32(r[i] + f32(gamma * next)) - values[i])
 *     adv[i] = f32(delta + f32(f32(gamma * lambda) * carry))   (gamma, lambda rounded to f32 first)
 *     ret[i] = f32(adv[i] + values[i])
 *
 * The recursion is cut at every episode end (the slot's next step belongs to a new episode);
 * truncation and the end of the launch bootstrap with the critic's value of the pre-restart
 * next state.
 */

const f = Math.fround;

export function gaeEpisode(
  rewards: Float32Array,
  values: Float32Array,
  dones: Int32Array,
  truncateds: Int32Array,
  boot: Float32Array,
  base: number,
  steps: number,
  gamma: number,
  lambda: number,
  advantages: Float32Array,
  returns: Float32Array,
): void {
  const g = f(gamma);
  const gl = f(g * f(lambda));
  let carryAdv = 0;
  for (let l = steps - 1; l >= 0; l--) {
    const i = base + l;
    let next = 0;
    let carry = 0;
    if (!dones[i]) {
      if (truncateds[i] || l === steps - 1) {
        next = boot[l];
      } else {
        next = values[i + 1];
        carry = carryAdv;
      }
    }
    const delta = f(f(rewards[i] + f(g * next)) - values[i]);
    const adv = f(delta + f(gl * carry));
    advantages[i] = adv;
    returns[i] = f(adv + values[i]);
    carryAdv = adv;
  }
}
