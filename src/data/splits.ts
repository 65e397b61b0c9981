/**
 * Chronological train / validation / test splits (SPEC 1). Layout over bars [0, n):
 *
 *   [0, L) warm-up | train | L-bar gap | val | L-bar gap | test
 *
 * with L = maxLookback. The warm-up bars have no features (they are zeros) and are never states;
 * the gaps keep every rolling feature window of a split's bars inside that split, up to the
 * exponentially decayed memory of EMAs. The bars left after warm-up and gaps are shared by
 * trainFrac / valFrac / the rest, rounding down, with the test split taking the remainder.
 * A SplitRange [start, end) holds the bars that belong to a split; a state at t also needs bar
 * t + 1 of the same split, so the last state of a split is end - 2.
 */
import type { Config } from '../config.js';
import type { SplitRange, Splits } from './types.js';

export class SplitError extends Error {
  override name = 'SplitError';
}

/**
 * Splits `n` bars by `cfg.data`. The training split must hold one episode
 * (`env.episodeBars + 1` bars); validation and test at least 2 bars (one state and its next bar).
 */
export function makeSplits(n: number, cfg: Pick<Config, 'data' | 'env'>): Splits {
  const { L, usable, nTrain, nVal, nTest, needTrain, fits } = splitSizes(n, cfg);
  if (!fits) {
    const need = Math.ceil(
      3 * L +
        Math.max(
          needTrain / cfg.data.trainFrac,
          3 / cfg.data.valFrac,
          3 / (1 - cfg.data.trainFrac - cfg.data.valFrac),
        ),
    );
    throw new SplitError(
      `data too short for the config: ${n} bars minus ${L} warm-up and 2 x ${L} gap bars (data.maxLookback) ` +
        `leave ${Math.max(0, usable)}, split into train ${Math.max(0, nTrain)} / val ${Math.max(0, nVal)} / test ${Math.max(0, nTest)}; ` +
        `train needs >= ${needTrain} (env.episodeBars + 1), val and test >= 2. ` +
        `Use about ${need} bars or more, or lower data.maxLookback / env.episodeBars`,
    );
  }
  const train = { start: L, end: L + nTrain };
  const val = { start: train.end + L, end: train.end + L + nVal };
  const test = { start: val.end + L, end: n };
  return { train, val, test };
}

/** The split lengths of `n` bars by `cfg`, and whether makeSplits takes them. */
function splitSizes(n: number, cfg: Pick<Config, 'data' | 'env'>) {
  const L = cfg.data.maxLookback;
  const usable = n - 3 * L;
  const nTrain = Math.floor(usable * cfg.data.trainFrac);
  const nVal = Math.floor(usable * cfg.data.valFrac);
  const nTest = usable - nTrain - nVal;
  const needTrain = cfg.env.episodeBars + 1;
  return { L, usable, nTrain, nVal, nTest, needTrain, fits: nTrain >= needTrain && nVal >= 2 && nTest >= 2 };
}

/** The fewest bars makeSplits splits by `cfg` (every longer series splits too). */
export function minBars(cfg: Pick<Config, 'data' | 'env'>): number {
  let n = 3 * cfg.data.maxLookback;
  while (!splitSizes(n, cfg).fits) n++;
  return n;
}

/**
 * Every bar after the warm-up, [maxLookback, n): what `backtest --split all` runs over. Needs one
 * state and its next bar past the warm-up, not the three splits' room.
 */
export function allBars(n: number, cfg: Pick<Config, 'data'>): SplitRange {
  const L = cfg.data.maxLookback;
  if (n < L + 2) {
    throw new SplitError(
      `data too short for a backtest: ${n} bars, of which the first ${L} are the warm-up ` +
        `(the checkpoint's data.maxLookback); --split all needs at least ${L + 2} (the warm-up, a state and its next bar)`,
    );
  }
  return { start: L, end: n };
}
