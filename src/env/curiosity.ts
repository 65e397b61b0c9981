/**
 * Curiosity bonus (SPEC 5) from the forward model 35 -> 64 LeakyReLU -> 32: input the first 32
 * state floats (market features of bar t) ++ one-hot(category), target the first 32 floats of
 * the next state (features of bar t + 1). mse = f32 sum of f32 squared errors (index
 * ascending) times 1/32; bonus = min(f32(scale * mse), max).
 */
import type { Market } from '../data/types.js';
import { forwardMlp } from '../nets/forward.js';
import { CURIOSITY_IN, CURIOSITY_OUT, MARKET_FEATURES, type NetLayout } from '../nets/layout.js';
import type { EnvParams } from './params.js';

const f = Math.fround;

/** The curiosity forward model's layout and flat parameters. */
export interface CuriosityModel {
  layout: NetLayout;
  params: Float32Array;
}

const input = new Float32Array(CURIOSITY_IN);
const predicted = new Float32Array(CURIOSITY_OUT);
const INV_OUT = f(1 / CURIOSITY_OUT);

/** Prediction error of `model` for category `cat` taken at bar t (next state at bar t + 1). */
export function curiosityMse(model: CuriosityModel, market: Market, t: number, cat: number): number {
  const src = t * MARKET_FEATURES;
  for (let k = 0; k < CURIOSITY_OUT; k++) input[k] = market.features[src + k];
  for (let k = 0; k < 3; k++) input[CURIOSITY_OUT + k] = k === cat ? 1 : 0;
  forwardMlp(model.layout, model.params, input, predicted);
  const next = src + MARKET_FEATURES;
  let acc = 0;
  for (let k = 0; k < CURIOSITY_OUT; k++) {
    const d = f(predicted[k] - market.features[next + k]);
    acc = f(acc + f(d * d));
  }
  return f(acc * INV_OUT);
}

export function curiosityBonus(
  model: CuriosityModel,
  params: EnvParams,
  market: Market,
  t: number,
  cat: number,
): number {
  return Math.min(f(params.curiosityScale * curiosityMse(model, market, t, cat)), params.curiosityMax);
}
