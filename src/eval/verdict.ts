/**
 * Which epoch is best, and what a run achieved, in words.
 *
 * Validation score = the annualised Sharpe ratio of the greedy policy on the validation split,
 * after costs (metrics.ts). It is scale-free, so it does not favour a policy that merely takes
 * more risk, and a policy that stands aside scores 0, above any losing one. `best/` holds the
 * first epoch with the highest score (a later epoch must score strictly higher to replace it).
 */
import type { Metrics, ValidationReport } from './metrics.js';

export const validationScore = (policy: Metrics): number => policy.sharpe;

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(2)}%`;
const num = (x: number) => (Math.abs(x) >= 1e5 ? x.toExponential(2) : x.toFixed(2));

/**
 * One plain sentence: did the policy beat buy-and-hold and random on `split` in return and
 * Sharpe, and by how much (every figure, the baselines' next to the policy's); a second one when
 * the policy never traded.
 */
export function verdictSentence(who: string, split: string, v: ValidationReport): string {
  const { policy: p, buyHold: b, random: r } = v;
  const missed: string[] = [];
  for (const [name, m] of [
    ['buy-and-hold', b],
    ['random', r],
  ] as const) {
    const what = [
      ...(p.totalReturn > m.totalReturn ? [] : ['return']),
      ...(p.sharpe > m.sharpe ? [] : ['Sharpe']),
    ];
    if (what.length) missed.push(`${name} in ${what.join(' and ')}`);
  }
  const outcome = missed.length
    ? `did NOT beat ${missed.join(', nor ')} on the ${split} split`
    : `beat buy-and-hold and random on the ${split} split in return and Sharpe`;
  // A policy that stands aside scores 0: say so, or "beat" reads as skill.
  const flat = p.trades === 0 ? ' It never traded: it stood flat over the whole split.' : '';
  return (
    `${who} ${outcome}: return ${pct(p.totalReturn)} against ${pct(b.totalReturn)} (buy-and-hold) and ` +
    `${pct(r.totalReturn)} (random), Sharpe ${num(p.sharpe)} against ${num(b.sharpe)} and ${num(r.sharpe)}.${flat}`
  );
}
