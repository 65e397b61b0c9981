// dqn_loss: the DQN-family loss head on a sampled replay batch (src/learn/dqn_loss.ts): dueling
// double DQN with the Huber loss (atoms == 1) or C51 (atoms > 1). Per sample b < batch:
//   Huber: a* = argmax_a online[nextOff + b 45 + a] (first on ties), y = G + d targetNet[.. a*],
//          delta = Q(s, a) - y; dOut at a = w clip(delta, kappa) / batch; td[b] = delta
//   C51:   a* = argmax of the online next rows' expected values sum_z softmax(l)_z z_k; the target
//          softmax at a* projected on the support (Tz = clamp(G + d z_k), split between floor and
//          ceil); L = -sum m_z logp_z with logp from the log-softmax; dOut over a's atoms =
//          w / batch (p_z sum(m) - m_z); td[b] = L
//   td[batch + b] = w L (L = Huber(delta) for the Huber head); dOut zero off the action.
// Bindings (declared by the preamble generated from src/kernels/dqn_loss.ts):
//   online: const float*: Q(s) rows at qOff, Q(s') rows at nextOff (45 x atoms per row)
//   targetNet: const float*: target-net Q(s') rows at targetOff
//   rows: const float*: [batch, REPLAY_F] replay rows (return at RETURN_AT, discount at DISCOUNT_AT)
//   actions: const int* (clamped to [0, 45)); weights: const float*: importance weights
//   dOut: float*: head-output gradient rows at dOutOff
//   td: float*: [2 batch] priority signals, then weighted losses
//   u: Uniforms { batch, atoms, qOff, nextOff, targetOff, dOutOff, kappa, vMin, vMax }
// Block: WG_X threads, one sample (block b of the flat grid). Its threads zero the sample's dOut row
// off the action's atoms; C51: thread q < 45 takes action q's expected value at s', thread 0 the
// argmax; the two distributions (target at the argmax, the taken action's) go one atom a thread
// where the order does not matter (loads, exp, division, the gradient), one thread where it does
// (maxima, sums, the projection, the loss): the reference's values bit for bit in f32.
// Numerics: f32 with the accurate expf/logf (the TS reference uses Math.exp / Math.log rounded to
// f32: tolerance).
#include "grid.cuh"
#include "learn_common.cuh"

__device__ __forceinline__ float dqn_huber(float x, float kappa) {
  const float a = fabsf(x);
  return a <= kappa ? 0.5f * x * x : kappa * (a - 0.5f * kappa);
}

// Action q's expected value under the softmax of l[0 .. n) over the support vMin + z dz: the
// probabilities as the softmax rounds them (exp(l - max), divided by the sum in order),
// recomputed instead of stored.
__device__ __forceinline__ float dqn_expected(const float* l, unsigned int n, float vMin, float dz) {
  float top = l[0];
  for (unsigned int z = 1; z < n; z++) top = fmaxf(top, l[z]);
  float s = 0.0f;
  for (unsigned int z = 0; z < n; z++) s += expf(l[z] - top);
  float qa = 0.0f;
  for (unsigned int z = 0; z < n; z++) qa += (expf(l[z] - top) / s) * (vMin + (float)z * dz);
  return qa;
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) dqn_loss(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  __shared__ float qv[NUM_ACTIONS];
  const unsigned long long bid = flat_block_id();
  if (bid >= u.batch) return;
  const unsigned int b = (unsigned int)bid;
  const unsigned int tid = local_index();
  const unsigned int n = u.atoms;
  const unsigned int row = NUM_ACTIONS * n;
  const unsigned int o = b * row;
  const unsigned int a = (unsigned int)min(max(actions[b], 0), NUM_ACTIONS - 1);
  for (unsigned int k = tid; k < row; k += WG_X)
    if (k / n != a) dOut[u.dOutOff + o + k] = 0.0f;
  const float ret = rows[b * REPLAY_F + RETURN_AT];
  const float disc = rows[b * REPLAY_F + DISCOUNT_AT];
  const float w = weights[b];
  const float fb = (float)u.batch;

  if (n == 1u) {
    if (tid != 0u) return;
    const float* next = online + u.nextOff + o;
    unsigned int best = 0;
    for (unsigned int q = 1; q < NUM_ACTIONS; q++)
      if (next[q] > next[best]) best = q;
    const float y = ret + disc * targetNet[u.targetOff + o + best];
    const float delta = online[u.qOff + o + a] - y;
    dOut[u.dOutOff + o + a] = w * fminf(u.kappa, fmaxf(-u.kappa, delta)) / fb;
    td[b] = delta;
    td[u.batch + b] = w * dqn_huber(delta, u.kappa);
    return;
  }

  const float dz = (u.vMax - u.vMin) / (float)(n - 1u);
  for (unsigned int q = tid; q < NUM_ACTIONS; q += WG_X)
    qv[q] = dqn_expected(online + u.nextOff + o + q * n, n, u.vMin, dz);
  __syncthreads();
  // The target distribution at the argmax and the taken action's: logits, their max (thread 0 for
  // the target, thread 1 for the action), exp(l - max) per atom, the sums in atom order (threads
  // 0 and 1 again), the probabilities per atom; thread 0 then projects the target and sums the
  // loss in atom order, and the threads write the action's gradient per atom: the softmax's
  // values, the reference's order.
  __shared__ float lt[MAX_ATOMS], la[MAX_ATOMS], pt[MAX_ATOMS], pa[MAX_ATOMS], m[MAX_ATOMS];
  __shared__ float red[4];  // target max, action max, target sum, action sum
  __shared__ unsigned int best_s;
  __shared__ float msum_s;
  if (tid == 0u) {
    unsigned int best = 0;
    float bestQ = 0.0f;
    for (unsigned int q = 0; q < NUM_ACTIONS; q++) {
      if (q == 0u || qv[q] > bestQ) {
        bestQ = qv[q];
        best = q;
      }
    }
    best_s = best;
  }
  __syncthreads();
  for (unsigned int z = tid; z < n; z += WG_X) {
    lt[z] = targetNet[u.targetOff + o + best_s * n + z];
    la[z] = online[u.qOff + o + a * n + z];
  }
  __syncthreads();
  if (tid < 2u) {
    const float* l = tid == 0u ? lt : la;
    float top = l[0];
    for (unsigned int z = 1; z < n; z++) top = fmaxf(top, l[z]);
    red[tid] = top;
  }
  __syncthreads();
  for (unsigned int z = tid; z < n; z += WG_X) {
    pt[z] = expf(lt[z] - red[0]);
    pa[z] = expf(la[z] - red[1]);
  }
  __syncthreads();
  if (tid < 2u) {
    const float* e = tid == 0u ? pt : pa;
    float sum = 0.0f;
    for (unsigned int z = 0; z < n; z++) sum += e[z];
    red[2u + tid] = sum;
  }
  __syncthreads();
  for (unsigned int z = tid; z < n; z += WG_X) {
    pt[z] = pt[z] / red[2];
    pa[z] = pa[z] / red[3];
    m[z] = 0.0f;
  }
  __syncthreads();
  if (tid == 0u) {
    for (unsigned int k = 0; k < n; k++) {
      const float tz = fminf(u.vMax, fmaxf(u.vMin, ret + disc * (u.vMin + (float)k * dz)));
      const float pos = (tz - u.vMin) / dz;
      const unsigned int lo = min(n - 1u, (unsigned int)floorf(pos));
      const unsigned int hi = min(n - 1u, (unsigned int)ceilf(pos));
      if (lo == hi) {
        m[lo] += pt[k];
      } else {
        m[lo] += pt[k] * ((float)hi - pos);
        m[hi] += pt[k] * (pos - (float)lo);
      }
    }
    const float mx = red[1];
    const float lse = logf(red[3]);
    float ce = 0.0f, msum = 0.0f;
    for (unsigned int z = 0; z < n; z++) {
      ce -= m[z] * ((la[z] - mx) - lse);
      msum += m[z];
    }
    msum_s = msum;
    td[b] = ce;
    td[u.batch + b] = w * ce;
  }
  __syncthreads();
  const float scale = w / fb;
  for (unsigned int z = tid; z < n; z += WG_X) dOut[u.dOutOff + o + a * n + z] = scale * (pa[z] * msum_s - m[z]);
}
