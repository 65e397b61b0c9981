// dqn_loss: the DQN-family loss head on a sampled replay batch (src/learn/dqn_loss.ts): dueling
// double DQN with the Huber loss (atoms == 1) or C51 (atoms > 1), with the dueling combination and
// its backward folded in (src/learn/dueling.ts). Per sample b < batch, from the streams' outputs:
//   head outputs Q[a, z] = (V[z] + A[a, z]) - (sum_a A[a, z]) / 45 of online s, online s', target s'
//   Huber: a* = argmax_a Q_online(s', a) (first on ties), y = G + d Q_target(s', a*),
//          delta = Q(s, a) - y; g = w clip(delta, kappa) / batch; td[b] = delta
//   C51:   a* = argmax of the online s' expected values sum_z softmax(Q[a, .])_z z_k; the target
//          softmax at a* projected on the support (Tz = clamp(G + d z_k), split between floor and
//          ceil); L = -sum m_z logp_z with logp from the log-softmax; g_z = w / batch (p_z sum(m) - m_z);
//          td[b] = L
//   td[batch + b] = w L (L = Huber(delta) for the Huber head). The head-output gradient is g at the
//   taken action, zero elsewhere, so the combination's backward is dV = g (the sum over actions)
//   and dA[a', z] = (a' == a ? g_z : 0) - dV_z / 45.
// Bindings (declared by the preamble generated from src/kernels/dqn_loss.ts):
//   acts: const float*: the online net's V rows (atoms floats) at vOff / nextVOff, A rows (45 x
//     atoms, action-major) at aOff / nextAOff, row b of each at b atoms and b 45 atoms
//   targetActs: const float*: the target net's, V rows at tvOff and A rows at taOff (its own
//     buffer: the target net's forward pass need not wait for the online net's)
//   rows: const float*: [batch, REPLAY_F] replay rows (return at RETURN_AT, discount at DISCOUNT_AT)
//   actions: const int* (clamped to [0, 45)); weights: const float*: importance weights
//   deltas: float*: dV rows at dVOff, dA rows at dAOff (the streams' output layers' deltas)
//   td: float*: [2 batch] priority signals, then weighted losses
//   u: Uniforms { batch, atoms, vOff, aOff, nextVOff, nextAOff, tvOff, taOff, dVOff, dAOff, kappa,
//      vMin, vMax }
// Block: WG_X threads, one sample (block b of the flat grid): the three rows' means an (atom, row)
// a thread, the s' head outputs into shared memory an output a thread, C51's exp(l - max) an output
// a thread, thread q < 45 action q's value at s' (max, sum, expectation), thread 0 the argmax; C51's two distributions (target at the argmax, the taken
// action's) one atom a thread where the order does not matter (loads, exp, division, the
// gradient), one thread where it does (maxima, sums, the projection, the loss); the deltas an
// output a thread: the reference's values bit for bit in f32.
// Numerics: f32 with the accurate expf/logf (the TS reference uses Math.exp / Math.log rounded to
// f32: tolerance).
#include "grid.cuh"
#include "learn_common.cuh"

__device__ __forceinline__ float dqn_huber(float x, float kappa) {
  const float a = fabsf(x);
  return a <= kappa ? 0.5f * x * x : kappa * (a - 0.5f * kappa);
}

extern "C" __global__ void __launch_bounds__(WG_X * WG_Y * WG_Z) dqn_loss(KERNEL_ARGS) {
  LEARN_GRID_DEP_WAIT();  // first: a PDL launch may start before the previous kernel ends
  // Per-atom means of online s, online s', target s'; the s' head outputs; each action's value.
  __shared__ float mean[3 * MAX_ATOMS];
  __shared__ float next[NUM_ACTIONS * MAX_ATOMS];
  __shared__ float qv[NUM_ACTIONS];
  __shared__ float lt[MAX_ATOMS], la[MAX_ATOMS], pt[MAX_ATOMS], pa[MAX_ATOMS], m[MAX_ATOMS], g[MAX_ATOMS];
  __shared__ float red[4];  // target max, action max, target sum, action sum
  __shared__ unsigned int best_s;
  __shared__ float msum_s;
  const unsigned long long bid = flat_block_id();
  if (bid >= u.batch) return;
  const unsigned int b = (unsigned int)bid;
  const unsigned int tid = local_index();
  const unsigned int n = u.atoms;
  const unsigned int row = NUM_ACTIONS * n;
  const unsigned int o = b * row;
  const unsigned int a = (unsigned int)min(max(actions[b], 0), NUM_ACTIONS - 1);

  for (unsigned int j = tid; j < 3u * n; j += WG_X) {
    const unsigned int which = j / n;
    const unsigned int z = j - which * n;
    const float* A = (which == 2u ? targetActs + u.taOff : acts + (which == 0u ? u.aOff : u.nextAOff)) + o + z;
    float s = 0.0f;
    for (unsigned int q = 0; q < NUM_ACTIONS; q++) s += A[q * n];
    mean[which * MAX_ATOMS + z] = s / (float)NUM_ACTIONS;
  }
  __syncthreads();
  for (unsigned int k = tid; k < row; k += WG_X) {
    const unsigned int z = k % n;
    next[k] = (acts[u.nextVOff + b * n + z] + acts[u.nextAOff + o + k]) - mean[MAX_ATOMS + z];
  }
  __syncthreads();
  // Each action's value at s': C51 its expected value under the softmax of its logits (exp(l - max)
  // an output a thread, stored over the logits, then each action's sum and expectation in atom
  // order by one thread), the Huber head's output itself.
  const float dz = n > 1u ? (u.vMax - u.vMin) / (float)(n - 1u) : 0.0f;
  if (n > 1u) {
    for (unsigned int q = tid; q < NUM_ACTIONS; q += WG_X) {
      float top = next[q * n];
      for (unsigned int z = 1; z < n; z++) top = fmaxf(top, next[q * n + z]);
      qv[q] = top;
    }
    __syncthreads();
    for (unsigned int k = tid; k < row; k += WG_X) next[k] = expf(next[k] - qv[k / n]);
    __syncthreads();
    for (unsigned int q = tid; q < NUM_ACTIONS; q += WG_X) {
      const float* e = next + q * n;
      float sum = 0.0f;
      for (unsigned int z = 0; z < n; z++) sum += e[z];
      float qa = 0.0f;
      for (unsigned int z = 0; z < n; z++) qa += (e[z] / sum) * (u.vMin + (float)z * dz);
      qv[q] = qa;
    }
  } else {
    for (unsigned int q = tid; q < NUM_ACTIONS; q += WG_X) qv[q] = next[q];
  }
  __syncthreads();
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
  // The target's head outputs at the argmax and the online s outputs at the taken action.
  const unsigned int best = best_s;
  for (unsigned int z = tid; z < n; z += WG_X) {
    lt[z] = (targetActs[u.tvOff + b * n + z] + targetActs[u.taOff + o + best * n + z]) - mean[2u * MAX_ATOMS + z];
    la[z] = (acts[u.vOff + b * n + z] + acts[u.aOff + o + a * n + z]) - mean[z];
  }
  __syncthreads();
  const float ret = rows[b * REPLAY_F + RETURN_AT];
  const float disc = rows[b * REPLAY_F + DISCOUNT_AT];
  const float w = weights[b];
  const float fb = (float)u.batch;

  if (n == 1u) {
    if (tid == 0u) {
      const float y = ret + disc * lt[0];
      const float delta = la[0] - y;
      g[0] = w * fminf(u.kappa, fmaxf(-u.kappa, delta)) / fb;
      td[b] = delta;
      td[u.batch + b] = w * dqn_huber(delta, u.kappa);
    }
  } else {
    // The two distributions: their max (thread 0 the target, thread 1 the action), exp(l - max)
    // per atom, the sums in atom order (threads 0 and 1 again), the probabilities per atom; thread
    // 0 then projects the target and sums the loss in atom order, and the threads take the
    // action's gradient per atom: the softmax's values, the reference's order.
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
    for (unsigned int z = tid; z < n; z += WG_X) g[z] = scale * (pa[z] * msum_s - m[z]);
  }
  __syncthreads();
  // dV = the sum over actions of the head-output gradient (g at the action, zeros elsewhere: the
  // reference's running sum from +0 gives 0 + g); dA = that gradient less dV / 45.
  for (unsigned int z = tid; z < n; z += WG_X) deltas[u.dVOff + b * n + z] = 0.0f + g[z];
  for (unsigned int k = tid; k < row; k += WG_X) {
    const unsigned int q = k / n;
    const unsigned int z = k - q * n;
    const float dv = 0.0f + g[z];
    deltas[u.dAOff + o + k] = (q == a ? g[z] : 0.0f) - dv / (float)NUM_ACTIONS;
  }
}
