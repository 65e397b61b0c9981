/**
 * The curiosity model of a DQN-family run on the host (both DQN engines): its params, AdamW state
 * and the train step of round r on a launch's rollout. Batch of round r: the launch's rows in the
 * order of the shuffle of epoch r (src/learn/shuffle.ts), the first env.curiosityBatch of them;
 * input = state[0..32) ++ one-hot(category), target = the row's next state[0..32) (the state after
 * the step, before any restart, so every row qualifies).
 */
import type { DqnRollout } from '../collect/rollout.js';
import type { Config } from '../config.js';
import { category } from '../env/actions.js';
import type { CuriosityModel } from '../env/curiosity.js';
import { curiosityTrainStep } from '../learn/curiosity.js';
import { createMlpCache } from '../learn/mlp.js';
import { type AdamState, createAdam } from '../learn/optim.js';
import { shuffleIndex } from '../learn/shuffle.js';
import { initParams } from '../nets/forward.js';
import { CURIOSITY_OUT, curiosityLayout, NetId, STATE_DIM } from '../nets/layout.js';

export interface HostCuriosity {
  model: CuriosityModel;
  adam: AdamState;
  /** One AdamW step on the first env.curiosityBatch rows of round `round`; the MSE before it. */
  train(rollout: DqnRollout, round: number): number;
}

export function createHostCuriosity(cfg: Config): HostCuriosity {
  const seed = cfg.train.seed;
  const layout = curiosityLayout();
  const cBatch = cfg.env.curiosityBatch;
  let cache: ReturnType<typeof createMlpCache> | null = null;
  const self: HostCuriosity = {
    model: { layout, params: initParams(layout, NetId.Curiosity, seed) },
    adam: createAdam(layout.size),
    train(rollout: DqnRollout, round: number): number {
      const count = rollout.n * rollout.steps;
      const rows = Math.min(cBatch, count);
      cache ??= createMlpCache(layout, cBatch);
      const input = cache.acts[0];
      const inDim = layout.layers[0].in;
      const targets = new Float32Array(rows * CURIOSITY_OUT);
      for (let j = 0; j < rows; j++) {
        const idx = shuffleIndex(j, count, round, seed);
        const s = idx * STATE_DIM;
        for (let k = 0; k < CURIOSITY_OUT; k++) {
          input[j * inDim + k] = rollout.states[s + k];
          targets[j * CURIOSITY_OUT + k] = rollout.nextStates[s + k];
        }
        const cat = category(rollout.actions[idx]);
        for (let k = 0; k < 3; k++) input[j * inDim + CURIOSITY_OUT + k] = k === cat ? 1 : 0;
      }
      const size = self.model.params.length;
      return curiosityTrainStep(
        layout,
        self.model.params,
        self.adam,
        cache,
        targets,
        rows,
        new Float32Array(size),
        new Float32Array(rows * CURIOSITY_OUT),
        { lr: cfg.env.curiosityLr, weightDecay: cfg.env.curiosityWeightDecay },
      );
    },
  };
  return self;
}
