/**
 * DQN-family training (dueling double DQN, C51, IQN with n-step returns and prioritized replay),
 * top to bottom. One epoch (round r = epoch - 1):
 *   1. collect    N episodes x L epsilon-greedy steps on the online net, epsilon = epsilonAt(r)
 *                 (linear from dqn.epsilonStart to dqn.epsilonEnd over dqn.epsilonDecayEpochs);
 *                 the steps are folded into n-step transitions and enter the replay at the max priority
 *   2. train      dqn.stepsPerEpoch steps of batch dqn.batch (none while the replay holds fewer
 *                 rows than a batch); beta anneals over all train steps of train.epochs
 *   3. curiosity  one AdamW step of the forward model every env.curiosityEvery rounds (bonus on)
 *   4. validate   the greedy policy over the validation split, next to buy-and-hold and random
 *   5. checkpoint every train.checkpointEvery epochs and after the last one
 *   6. log        one JSON line to <outDir>/log.jsonl
 * A non-finite reward, loss or parameter stops the run before anything of that epoch is written.
 */
import type { Config } from '../config.js';
import type { Market, Splits } from '../data/types.js';
import { c51Support, epsilonAt } from '../learn/dqn_update.js';
import { duelingLayout } from '../nets/layout.js';
import { backtest, baselines } from '../train/backtest.js';
import { checkpointDir } from '../train/checkpoint.js';
import { headOf } from '../train/cpu_dqn_engine.js';
import { saveDqnCheckpoint } from '../train/dqn_checkpoint.js';
import type { DqnEngine } from '../train/dqn_engine.js';
import { dqnGreedyPolicy } from '../train/policies.js';
import type { DataFingerprint } from '../train/ppo_checkpoint.js';
import { appendLog, type EpochRecord } from '../train/runlog.js';
import { type Phase, TrainingDivergedError } from './ppo.js';

export interface DqnRun {
  cfg: Config;
  market: Market;
  splits: Splits;
  engine: DqnEngine;
  outDir: string;
  barsPerYear: number;
  data: DataFingerprint;
  firstEpoch: number;
  onPhase?: (epoch: number, phase: Phase) => void;
  onEpoch?: (record: EpochRecord) => void;
}

export async function trainDqn(run: DqnRun): Promise<EpochRecord[]> {
  const { cfg, engine, market, splits } = run;
  const algo = cfg.train.algo as 'dqn' | 'c51' | 'iqn';
  const seed = cfg.train.seed;
  const head = headOf(algo);
  const layout = duelingLayout(head, cfg.dqn.atoms, cfg.dqn.iqnEmbed);
  const ckptDir = checkpointDir(run.outDir);
  const totalSteps = cfg.train.epochs * cfg.dqn.stepsPerEpoch;
  const { buyHold, random } = baselines(market, splits.val, cfg.env, seed, run.barsPerYear);
  const records: EpochRecord[] = [];
  let lastSaved = run.firstEpoch - 1;

  for (let epoch = run.firstEpoch; epoch <= cfg.train.epochs; epoch++) {
    const round = epoch - 1;
    const finite = (what: string, values: Record<string, number>) => {
      for (const [k, v] of Object.entries(values)) {
        if (Number.isFinite(v)) continue;
        throw new TrainingDivergedError(
          `epoch ${epoch}: ${what} ${k} is ${v}; the run stopped and ` +
            (lastSaved > 0
              ? `the last good checkpoint (epoch ${lastSaved}) in ${ckptDir} is kept`
              : 'no checkpoint was written') +
            '. Start a new run with a lower dqn.lr or dqn.maxGradNorm, or check the data',
        );
      }
    };

    run.onPhase?.(epoch, 'collect');
    let t0 = performance.now();
    const epsilon = epsilonAt(cfg.dqn, round);
    const rollout = await engine.collect(round, epsilon);
    const collectMs = performance.now() - t0;
    finite('the mean reward', rollout.reward);

    run.onPhase?.(epoch, 'update');
    t0 = performance.now();
    const trained = await engine.train(round, totalSteps);
    const updateMs = performance.now() - t0;
    finite('the loss', { loss: trained.loss, gradNorm: trained.gradNorm, td: trained.td });

    run.onPhase?.(epoch, 'curiosity');
    t0 = performance.now();
    let curiosityLoss: number | undefined;
    const curiosityOn = cfg.env.curiosityScale > 0 && cfg.env.curiosityMaxReward > 0;
    if (curiosityOn && (round + 1) % cfg.env.curiosityEvery === 0) {
      curiosityLoss = await engine.trainCuriosity(round);
      finite('the curiosity loss', { mse: curiosityLoss });
    }
    const curiosityMs = performance.now() - t0;

    run.onPhase?.(epoch, 'validate');
    t0 = performance.now();
    const params = await engine.params();
    for (const [net, p] of Object.entries(params)) {
      for (let k = 0; k < p.length; k++)
        if (!Number.isFinite(p[k])) finite(`a ${net} parameter`, { [k]: p[k] });
    }
    const policy = backtest(
      market,
      splits.val,
      cfg.env,
      dqnGreedyPolicy(head, layout, params.online, c51Support(cfg.dqn), cfg.dqn.iqnActTau),
      run.barsPerYear,
    ).metrics;
    const validateMs = performance.now() - t0;

    const record: EpochRecord = {
      epoch,
      algo,
      backend: engine.backend,
      losses: {
        total: trained.loss,
        gradNorm: trained.gradNorm,
        td: trained.td,
        trainSteps: trained.steps,
        beta: trained.beta,
        replaySize: trained.replaySize,
        ...(curiosityLoss === undefined ? {} : { curiosity: curiosityLoss }),
      },
      reward: rollout.reward,
      epsilon,
      throughput: {
        envStepsPerSec: rollout.steps / (collectMs / 1000),
        samplesPerSec: updateMs > 0 ? (trained.steps * cfg.dqn.batch) / (updateMs / 1000) : 0,
      },
      timeMs: {
        collect: collectMs,
        update: updateMs,
        curiosity: curiosityMs,
        validate: validateMs,
        checkpoint: 0,
      },
      validation: { policy, buyHold, random },
    };

    if (epoch % cfg.train.checkpointEvery === 0 || epoch === cfg.train.epochs) {
      run.onPhase?.(epoch, 'checkpoint');
      t0 = performance.now();
      await saveDqnCheckpoint(ckptDir, await engine.snapshot(), {
        algo,
        epoch,
        seed,
        backend: engine.backend,
        config: cfg,
        data: run.data,
        record,
      });
      record.timeMs.checkpoint = performance.now() - t0;
      lastSaved = epoch;
    }
    appendLog(run.outDir, record);
    records.push(record);
    run.onEpoch?.(record);
  }
  return records;
}
