/**
 * matmulShape (src/device/learn_mlp.ts), the DQN family's launch shapes: a backward launch within
 * its budget splits its dW tiles only as far as it stays within it (C51's and plain DQN's launches,
 * PPO's WebGPU ones); one past the budget by its own tiles (IQN's streams on batch x taus rows)
 * splits the dW tiles whose K loops over every row would otherwise outlast its waves of dX tiles.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { matmulShape } from '../../../src/device/learn_mlp.js';
import { dxTiles, gradTiles, MAX_DW_SPLITS } from '../../../src/kernels/mlp_backward.js';

/** An H100's CUDA budget: two 512-thread matmul workgroups per SM (dwSplitBudgetFor). */
const H100 = { kSplit: 4, budget: 264 };

describe('matmulShape', () => {
  it("splits the dW tiles of IQN's stream launches (batch 512 x 64 taus), which it ran unsplit", () => {
    const rows = 512 * 64;
    // The streams' output layers (value 128 -> 1, advantage 128 -> 45), then their hidden layers.
    const out = {
      ...H100,
      batch: rows,
      dw: gradTiles(128, 1) + gradTiles(128, 45),
      other: 2 * dxTiles(128, rows, 0),
      otherK: 45,
    };
    const hidden = {
      ...H100,
      batch: rows,
      dw: 2 * gradTiles(256, 128),
      other: 2 * dxTiles(256, rows, 0),
      otherK: 128,
    };
    expect(out.dw + out.other).toBeGreaterThan(H100.budget);
    expect(matmulShape(out).splits).toBeGreaterThan(1);
    expect(matmulShape(hidden).splits).toBeGreaterThan(1);
    // An eighth of the rows: still many dX tiles, still split.
    expect(
      matmulShape({ ...out, batch: rows / 8, other: 2 * dxTiles(128, rows / 8, 0) }).splits,
    ).toBeGreaterThan(1);
  });

  it('keeps a launch within its budget when its own tiles fit, splitting as far as the budget allows', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 0, max: 300 }),
        fc.integer({ min: 0, max: 120 }),
        fc.integer({ min: 16, max: 4096 }),
        fc.integer({ min: 1, max: 2400 }),
        fc.constantFrom(1, 2, 4),
        (dw, other, sumGroups, batch, otherK, kSplit) => {
          const budget = 264;
          fc.pre(dw + other <= budget);
          const r = matmulShape({ kSplit, budget, batch, dw, other, otherK }, sumGroups);
          expect(r.splits === 1 || r.splits * dw + other + sumGroups <= budget).toBe(true);
          expect(r.splits).toBeLessThanOrEqual(MAX_DW_SPLITS);
        },
      ),
    );
  });

  it('never splits past MAX_DW_SPLITS or into slices shorter than a k-tile, and never on the CPU', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 0, max: 20_000 }),
        fc.integer({ min: 1, max: 100_000 }),
        (dw, other, batch) => {
          const r = matmulShape({ ...H100, batch, dw, other, otherK: 64 });
          expect(r.splits).toBeLessThanOrEqual(Math.min(MAX_DW_SPLITS, Math.ceil(batch / 16)));
          expect(matmulShape({ kSplit: 2, budget: 0, batch, dw, other, otherK: 64 })).toEqual({
            kSplit: 2,
            splits: 1,
          });
        },
      ),
    );
  });
});
