import { describe, expect, it } from 'vitest';
import { EpochTail } from '../../../src/train/epoch_end.js';

describe('EpochTail', () => {
  it('runs a deferred end once, when started or settled, and hands back its result', async () => {
    const tail = new EpochTail<number>();
    expect(await tail.settle()).toBeUndefined();
    let runs = 0;
    tail.defer(async () => ++runs);
    expect(runs).toBe(0);
    tail.start();
    tail.start();
    expect(runs).toBe(1);
    expect(await tail.settle()).toBe(1);
    expect(await tail.settle()).toBeUndefined();
    tail.defer(async () => ++runs);
    expect(await tail.settle()).toBe(2);
  });

  it('holds a rejection until settle rethrows it (not an unhandled rejection meanwhile)', async () => {
    const unhandled: unknown[] = [];
    const note = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', note);
    try {
      const tail = new EpochTail<void>();
      tail.defer(async () => {
        throw new Error('validation failed');
      });
      tail.start();
      await new Promise((resolve) => setTimeout(resolve, 20));
      await expect(tail.settle()).rejects.toThrow('validation failed');
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', note);
    }
  });
});
