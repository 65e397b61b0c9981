/**
 * Curiosity forward-model training (SPEC 5): the TS reference of its loss and AdamW step.
 * The model maps state[0..32) ++ one-hot(category, 3) to a prediction of next_state[0..32);
 * the caller builds those input rows (the category encoding belongs to the environment).
 *
 *   mse  = mean over the batch and the 32 outputs of (pred - target)^2   (torch's MSELoss 'mean')
 *   dpred = 2 * (pred - target) / (batch * 32)
 * then AdamW (decoupled weight decay, PyTorch semantics; see optim.ts), no gradient clipping.
 * The loss runs in f64 from the stored predictions; the matmuls follow the buffers' precision.
 */
import type { NetLayout } from '../nets/layout.js';
import { backwardMlp, type Floats, forwardMlpBatch, type MlpCache } from './mlp.js';
import { type AdamState, adamStep } from './optim.js';

/**
 * MSE of the model on rows 0..batch of `cache.acts[0]` against `targets` `[batch, out]`;
 * overwrites `grad` with its gradient. `dPred` is scratch of at least batch * out floats.
 */
export function curiosityLossAndGrad(
  layout: NetLayout,
  params: Floats,
  cache: MlpCache,
  targets: ArrayLike<number>,
  batch: number,
  grad: Floats,
  dPred: Floats,
): number {
  const out = layout.layers[layout.layers.length - 1].out;
  const n = batch * out;
  if (targets.length < n || dPred.length < n) {
    throw new Error(`curiosity: targets (${targets.length}) and dPred (${dPred.length}) need ${n} floats`);
  }
  const pred = forwardMlpBatch(layout, params, cache, batch);
  let sum = 0;
  for (let k = 0; k < n; k++) {
    const err = pred[k] - targets[k];
    sum += err * err;
    dPred[k] = (2 * err) / n;
  }
  backwardMlp(layout, params, cache, dPred, batch, grad);
  return sum / n;
}

export interface CuriosityTrainOptions {
  lr: number;
  weightDecay: number;
}

/** One AdamW step on one batch; returns the batch's MSE before the step. */
export function curiosityTrainStep(
  layout: NetLayout,
  params: Floats,
  adam: AdamState,
  cache: MlpCache,
  targets: ArrayLike<number>,
  batch: number,
  grad: Floats,
  dPred: Floats,
  opts: CuriosityTrainOptions,
): number {
  const mse = curiosityLossAndGrad(layout, params, cache, targets, batch, grad, dPred);
  adamStep(params, grad, adam, { lr: opts.lr, weightDecay: opts.weightDecay });
  return mse;
}
