/**
 * DQN-family training (dueling double DQN, C51, IQN with n-step returns and prioritized replay),
 * top to bottom. One epoch (round r = epoch - 1):
 *   1. collect    N episodes x L epsilon-greedy steps on the online net, epsilon = epsilonAt(r)
 *                 (linear from dqn.epsilonStart to dqn.epsilonEnd over dqn.epsilonDecayEpochs);
 *                 the steps are folded into n-step transitions and enter the replay at the max priority
 *   2. train      dqn.stepsPerEpoch steps of batch dqn.batch (none while the replay holds fewer
 *                 rows than a batch); beta anneals over dqn.betaEpochs epochs of train steps
 *   3. curiosity  one AdamW step of the forward model every env.curiosityEvery rounds (bonus on)
 *   4. validate   the greedy policy over the validation split, next to buy-and-hold and random;
 *                 on a device engine validate_dqn (launches of up to 512 steps, CUDA 8,192), else
 *                 the host backtest
 *   5. checkpoint last/ every train.checkpointEvery epochs and after the last one; best/ when the
 *                 validation score (src/eval/verdict.ts) beats every earlier epoch's
 *   6. log        one JSON line to <outDir>/log.jsonl
 * Where the engine validates beside later work (DqnEngine.validatesBeside: CUDA), epoch e's
 * validation starts before epoch e + 1's collection and runs beside it and its train phase; epoch e
 * ends (5, 6) after that train phase, from a snapshot taken before the collection (so only where one is
 * taken every epoch anyway: train.checkpointEvery 1, or dqn.checkpointReplay false). The results
 * are the same either way.
 * After the last epoch, best/ is evaluated once on the test split and a summary line ends the log.
 * A non-finite reward, loss or parameter stops the run before anything of that epoch is written.
 */
import type { Config } from '../config.js';
import type { DqnEngine } from '../engine/dqn_engine.js';
import { backtestAsync, baselines } from '../eval/backtest.js';
import { dqnGreedyPolicy } from '../eval/policies.js';
import { validationScore, verdictSentence } from '../eval/verdict.js';
import { c51Support, epsilonAt, headOf } from '../learn/dqn_update.js';
import { duelingLayout } from '../nets/layout.js';
import { bestDir, lastDir } from './checkpoint.js';
import { loadDqnCheckpoint, saveDqnCheckpoint } from './dqn_checkpoint.js';
import { type EpochLoop, EpochTail, endEpoch } from './epoch_end.js';
import { TrainingDivergedError, type TrainRun } from './ppo.js';
import { appendLog, type EpochRecord, type RunSummary } from './runlog.js';

export type DqnRun = TrainRun<DqnEngine>;

export async function trainDqn(run: DqnRun): Promise<{ records: EpochRecord[]; summary: RunSummary }> {
  const { cfg, engine, market, splits } = run;
  const algo = cfg.train.algo as 'dqn' | 'c51' | 'iqn';
  const seed = cfg.train.seed;
  const head = headOf(algo);
  const layout = duelingLayout(head, cfg.dqn.atoms, cfg.dqn.iqnEmbed);
  const ckptDir = lastDir(run.outDir);
  const { buyHold, random } = baselines(market, splits.val, cfg.env, seed, run.barsPerYear);
  const records: EpochRecord[] = [];
  const loop: EpochLoop = {
    ...run,
    epochs: cfg.train.epochs,
    checkpointEvery: cfg.train.checkpointEvery,
    lastSaved: run.firstEpoch - 1,
  };

  // With the engine's validation beside later work (a CUDA stream), epoch e's validation starts
  // before epoch e + 1's collection and runs beside it and its train phase; the epoch ends (checkpoints,
  // log) after that train phase. Its snapshot is taken before the next collection, so this needs
  // one every epoch anyway: last/ every epoch, or a checkpoint without the replay.
  const overlap = validationOverlaps(cfg, engine) && cfg.train.epochs > run.firstEpoch;
  /** The previous epoch's validation and end, beside this epoch. */
  const tail = new EpochTail<void>();

  for (let epoch = run.firstEpoch; epoch <= cfg.train.epochs; epoch++) {
    const round = epoch - 1;
    const finite = (what: string, values: Record<string, number>, beforeUpdate = false) => {
      for (const [k, v] of Object.entries(values)) {
        if (Number.isFinite(v)) continue;
        throw new TrainingDivergedError(
          `epoch ${epoch}: ${what} ${k} is ${v}`,
          loop.lastSaved > 0
            ? `the last good checkpoint (epoch ${loop.lastSaved}) in ${ckptDir} is kept`
            : 'no checkpoint was written',
          market,
          'dqn',
          beforeUpdate,
        );
      }
    };

    // The previous epoch's validation starts first and runs beside this epoch's collection and
    // train phase; that epoch is written before anything of this one is checked (its own error,
    // a stop, comes first).
    tail.start();
    await run.onPhase?.(epoch, 'collect');
    let t0 = performance.now();
    const epsilon = epsilonAt(cfg.dqn, round);
    let rollout: Awaited<ReturnType<DqnEngine['collect']>>;
    try {
      rollout = await engine.collect(round, epsilon);
    } catch (err) {
      await tail.settle();
      throw err;
    }
    const collectMs = performance.now() - t0;
    if (!Object.values(rollout.reward).every(Number.isFinite)) {
      await tail.settle();
      finite('the mean reward', rollout.reward, epoch === 1);
    }

    await run.onPhase?.(epoch, 'update');
    t0 = performance.now();
    let trained: Awaited<ReturnType<DqnEngine['train']>>;
    try {
      trained = await engine.train(round, run.onStep && ((d, t) => run.onStep?.(epoch, 'update', d, t)));
    } catch (err) {
      await tail.settle();
      throw err;
    }
    const updateMs = performance.now() - t0;
    await tail.settle();
    finite("the train step's", { loss: trained.loss, gradNorm: trained.gradNorm, td: trained.td });

    await run.onPhase?.(epoch, 'curiosity');
    t0 = performance.now();
    let curiosityLoss: number | undefined;
    const curiosityOn = cfg.env.curiosityScale > 0 && cfg.env.curiosityMaxReward > 0;
    if (curiosityOn && (round + 1) % cfg.env.curiosityEvery === 0) {
      curiosityLoss = await engine.trainCuriosity(round);
      finite('the curiosity loss', { mse: curiosityLoss });
    }
    const curiosityMs = performance.now() - t0;

    await run.onPhase?.(epoch, 'validate');
    t0 = performance.now();
    const params = await engine.params();
    for (const [net, p] of Object.entries(params)) {
      for (let k = 0; k < p.length; k++)
        if (!Number.isFinite(p[k]))
          finite(`${/^[aeiou]/.test(net) ? 'an' : 'a'} ${net} parameter`, { [k]: p[k] });
    }
    const paramsMs = performance.now() - t0;
    // Overlapping: the state at the end of this epoch, before the next collection changes it.
    t0 = performance.now();
    const early =
      overlap && epoch < cfg.train.epochs ? await engine.snapshot(cfg.dqn.checkpointReplay) : null;
    const snapshotMs = early ? performance.now() - t0 : 0;

    const end = async () => {
      const t1 = performance.now();
      const policy = engine.validate
        ? (await engine.validate(splits.val, run.barsPerYear)).metrics
        : (
            await backtestAsync(
              market,
              splits.val,
              cfg.env,
              dqnGreedyPolicy(head, layout, params.online, c51Support(cfg.dqn), cfg.dqn.iqnActTau),
              run.barsPerYear,
              run.onStep && ((d, t) => run.onStep?.(epoch, 'validate', d, t)),
            )
          ).metrics;
      const validateMs = paramsMs + performance.now() - t1;

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
          checkpoint: snapshotMs,
        },
        validation: { policy, buyHold, random },
        score: validationScore(policy),
      };

      await endEpoch(loop, record, async () => {
        const snapshot = early ?? (await engine.snapshot(cfg.dqn.checkpointReplay));
        const state = { algo, epoch, seed, backend: engine.backend, config: cfg, data: run.data, record };
        return (dir) => saveDqnCheckpoint(run.storage, dir, snapshot, state);
      });
      records.push(record);
    };
    if (early) tail.defer(end);
    else await end();
  }
  const summary = await summarize(run);
  await appendLog(run.storage, run.outDir, summary);
  return { records, summary };
}

/**
 * Whether the loop runs epoch e's validation beside epoch e + 1's collection and train phase: the engine's
 * validation runs beside later work, and a snapshot is taken every epoch anyway (last/ every epoch,
 * or checkpoints without the replay), since the epoch ends after the next collection changed it.
 */
export function validationOverlaps(cfg: Config, engine: Pick<DqnEngine, 'validatesBeside'>): boolean {
  return engine.validatesBeside === true && (cfg.train.checkpointEvery === 1 || !cfg.dqn.checkpointReplay);
}

/** best/ as it is stored, on the test split (once, here), and the verdict sentences. */
async function summarize(run: DqnRun): Promise<RunSummary> {
  const { cfg, market, splits } = run;
  const best = await loadDqnCheckpoint(run.storage, bestDir(run.outDir));
  const head = headOf(cfg.train.algo);
  const layout = duelingLayout(head, cfg.dqn.atoms, cfg.dqn.iqnEmbed);
  const policy = dqnGreedyPolicy(
    head,
    layout,
    best.snapshot.params.online,
    c51Support(cfg.dqn),
    cfg.dqn.iqnActTau,
  );
  const test = {
    policy: (await backtestAsync(market, splits.test, cfg.env, policy, run.barsPerYear)).metrics,
    ...baselines(market, splits.test, cfg.env, cfg.train.seed, run.barsPerYear),
  };
  const { epoch, validation, score } = best.state.record;
  const who = `best/ (epoch ${epoch} of ${cfg.train.epochs})`;
  return {
    summary: true,
    algo: cfg.train.algo,
    backend: run.engine.backend,
    epochs: cfg.train.epochs,
    best: { epoch, score, validation },
    test,
    verdict: {
      validation: verdictSentence(who, 'validation', validation),
      test: verdictSentence(who, 'test', test),
    },
  };
}
