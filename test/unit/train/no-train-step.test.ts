/**
 * A DQN-family run whose replay never holds a batch trains nothing: it says so before the first
 * epoch, and each epoch line says why its loss is missing.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { noTrainStepWarning } from '../../../src/train/dqn_run.js';
import { epochLine } from '../../../src/train/report.js';
import type { EpochRecord } from '../../../src/train/runlog.js';

const cfg = (flags: Record<string, string>) => loadConfig(undefined, { 'train.algo': 'c51', ...flags });

describe('a DQN run that cannot fill a batch', () => {
  it('is warned about before it starts, with what to change', () => {
    const tiny = cfg({ 'train.epochs': '2', 'rollout.episodes': '2', 'rollout.steps': '5' });
    expect(noTrainStepWarning(tiny, 1, false)).toBe(
      'warning: no train step will run: 2 epochs of 2 x 5 steps put at most 20 rows in the replay, fewer than dqn.batch 512; raise --epochs, --rollout.episodes or --rollout.steps, or lower --dqn.batch',
    );
    // From epoch 2 of 2 only one collection is left.
    expect(noTrainStepWarning(tiny, 2, false)).toMatch(/: 1 epoch of 2 x 5 steps put at most 10 rows/);
    // Enough rows by the last epoch, a smaller batch, or a resume (whose replay it cannot see): no warning.
    expect(
      noTrainStepWarning(
        cfg({ 'train.epochs': '52', 'rollout.episodes': '2', 'rollout.steps': '5' }),
        1,
        false,
      ),
    ).toBeNull();
    expect(
      noTrainStepWarning(
        cfg({
          'train.epochs': '2',
          'rollout.episodes': '2',
          'rollout.steps': '5',
          'dqn.batch': '16',
          'dqn.replayCapacity': '16',
        }),
        1,
        false,
      ),
    ).toBeNull();
    expect(noTrainStepWarning(tiny, 1, true)).toBeNull();
  });

  it('says in the epoch line that no train step ran, not a loss of 0', () => {
    const record = (losses: Record<string, number>) =>
      ({
        epoch: 1,
        losses,
        reward: { total: 0.01 },
        epsilon: 1,
        throughput: { envStepsPerSec: 1, samplesPerSec: 0 },
        timeMs: { collect: 1, update: 0, curiosity: 0, validate: 1, checkpoint: 0 },
        validation: {
          policy: { totalReturn: 0.01, sharpe: 1 },
          buyHold: { totalReturn: 0.02, sharpe: 2 },
          random: { totalReturn: -0.1, sharpe: -3 },
        },
        score: 1,
      }) as unknown as EpochRecord;
    const idle = epochLine(record({ total: 0, trainSteps: 0, replaySize: 10 }), 2);
    expect(idle).toMatch(
      /^epoch 1\/2 {2}no train step \(the replay holds 10 rows, under a batch\) {2}epsilon 1\.000/,
    );
    expect(idle).not.toMatch(/loss/);
    expect(epochLine(record({ total: 0.25, trainSteps: 300, replaySize: 1000 }), 2)).toMatch(
      /^epoch 1\/2 {2}loss 0\.2500 /,
    );
  });
});
