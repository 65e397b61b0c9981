/**
 * The trainer's config for the page's settings: the defaults of src/config.ts with the form's
 * fields and the device's run sizes (sizes.ts), checked by validateConfig. The page checks its
 * form with it as the fields change (a ConfigError names the field at fault); the worker trains
 * with it.
 */
import { type Config, defaultsFor, validateConfig } from '../src/config.js';
import type { Settings } from './api.js';
import { dqnSizesFor } from './sizes.js';

/** The page's form field that sets each config field the form reaches. */
export const FORM_FIELD: Record<string, string> = {
  'train.epochs': 'epochs',
  'rollout.episodes': 'episodes',
  'rollout.steps': 'steps',
  'ppo.lr': 'lr',
  'dqn.lr': 'lr',
  'train.seed': 'seed',
};

/**
 * The run's config; throws ConfigError (or, for a DQN-family sample that fits no storage
 * binding, an Error) as `foxhunt train` would. `limits`: the adapter's (sizes the DQN replay),
 * ignored on the CPU.
 */
export function configOf(s: Settings, limits: Record<string, number>): Config {
  const cfg = defaultsFor(s.algo);
  cfg.train.backend = s.backend;
  cfg.train.epochs = s.epochs;
  cfg.train.seed = s.seed;
  cfg.train.checkpointEvery = 1;
  cfg.rollout.episodes = s.episodes;
  cfg.rollout.steps = s.steps;
  cfg.ppo.minibatch = s.minibatch;
  cfg.ppo.updateEpochs = s.updateEpochs;
  if (s.algo === 'ppo') cfg.ppo.lr = s.lr;
  else {
    // The DQN family: batch, train steps and replay from the rollout and the device (sizes.ts);
    // exploration and the PER beta anneal over the run.
    const q = cfg.dqn;
    q.lr = s.lr;
    Object.assign(q, dqnSizesFor(s, q, s.backend === 'webgpu' ? limits : {}, s.algo));
    q.epsilonDecayEpochs = Math.min(q.epsilonDecayEpochs, s.epochs);
    q.betaEpochs = Math.min(q.betaEpochs, s.epochs);
  }
  cfg.data.synthBars = s.synthBars;
  cfg.env.episodeBars = s.episodeBars;
  // A rollout of no whole step leaves the default, so that the rollout's own rule names the field.
  const rollout = Math.floor(s.episodes * s.steps);
  if (rollout >= 1) cfg.env.curiosityBatch = Math.min(cfg.env.curiosityBatch, rollout);
  return validateConfig(cfg);
}
