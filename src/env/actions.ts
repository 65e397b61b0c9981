/**
 * The 45 discrete actions (SPEC 3): a = 9 * exposure_idx + 3 * order_type + fraction_idx.
 * Integer decoding only, identical in every twin.
 */

const f = Math.fround;

export const ACTIONS = 45;

/** Target exposure per exposure index. */
export const EXPOSURES: readonly number[] = [-1, -0.5, 0, 0.5, 1];

/** Fraction of the gap to the target traded now, per fraction index, as f32 constants. */
export const FRACTIONS: readonly number[] = [f(1 / 3), f(2 / 3), 1];

export const OrderType = { Market: 0, Limit: 1, Passive: 2 } as const;

/** Action category for diversity and curiosity (the one-hot index of the curiosity input). */
export const Category = { Short: 0, Flat: 1, Long: 2 } as const;

export function exposureIndex(a: number): number {
  return (a / 9) | 0;
}

export function orderType(a: number): number {
  return ((a % 9) / 3) | 0;
}

export function fractionIndex(a: number): number {
  return a % 3;
}

/** Short for exposure indices 0-1, Flat for 2, Long for 3-4. */
export function category(a: number): number {
  const x = exposureIndex(a);
  return x <= 1 ? Category.Short : x === 2 ? Category.Flat : Category.Long;
}

/** The action of an exposure index, order type and fraction index. */
export function encodeAction(exposureIdx: number, type: number, fractionIdx: number): number {
  return exposureIdx * 9 + type * 3 + fractionIdx;
}
