/**
 * The CPU engines' train phases are long host loops (minutes an epoch at the spec's GPU sizes: C51's
 * 600 train steps at batch 512 take about 4 minutes on two cores, IQN's 300 about 20). A stepTicker
 * gives the event loop a turn every TICK_MS between steps, so that Ctrl-C, a page's Pause and Stop
 * and timers run during them, and reports the steps done there (the CLI's progress line).
 */

/** `done` of `total` steps of the phase have run. */
export type StepProgress = (done: number, total: number) => void | Promise<void>;

/** Milliseconds between the ticker's turns. */
export const TICK_MS = 100;

/** A turn of the event loop: setImmediate where there is one (Node), else a zero timeout. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    if (typeof setImmediate === 'function') setImmediate(resolve);
    else setTimeout(resolve, 0);
  });
}

/**
 * Call after each of `total` steps with the steps done: at least `everyMs` after the last turn it
 * reports them to `onStep` and yields a turn of the event loop; otherwise it returns at once.
 */
export function stepTicker(
  total: number,
  onStep?: StepProgress,
  everyMs = TICK_MS,
  clock: () => number = () => performance.now(),
): (done: number) => Promise<void> {
  let last = clock();
  return async (done: number) => {
    if (clock() - last < everyMs) return;
    await onStep?.(done, total);
    await nextTurn();
    last = clock();
  };
}

/** Runs a stepping generator (ppoUpdateSteps, policyRolloutSteps) to its end, without turns. */
export function finish<R>(steps: Generator<number, R>): R {
  for (;;) {
    const next = steps.next();
    if (next.done) return next.value;
  }
}

/** Runs a stepping generator to its end through a stepTicker of `total` steps. */
export async function finishTicked<R>(
  steps: Generator<number, R>,
  total: number,
  onStep?: StepProgress,
): Promise<R> {
  const tick = stepTicker(total, onStep);
  let next = steps.next();
  while (!next.done) {
    await tick(next.value);
    next = steps.next();
  }
  return next.value;
}
