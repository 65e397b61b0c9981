/** A small DQN-family configuration whose replay fills a batch in the first epoch. */
import { type Config, loadConfig } from '../../src/config.js';

export const smallDqnConfig = (algo: string, extra: Record<string, string> = {}): Config =>
  loadConfig(undefined, {
    'train.algo': algo,
    'data.synthBars': '3000',
    'env.episodeBars': '64',
    'rollout.episodes': '4',
    'rollout.steps': '16',
    'dqn.batch': '16',
    'dqn.stepsPerEpoch': '5',
    'dqn.replayCapacity': '256',
    'dqn.targetEvery': '3',
    ...extra,
  });
