/** The CLI run in-process for tests: its exit code and what it printed on stdout and stderr. */
import { vi } from 'vitest';
import { main } from '../../src/cli/main.js';

export async function runCli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a) => void out.push(a.join(' ')));
  const error = vi.spyOn(console, 'error').mockImplementation((...a) => void err.push(a.join(' ')));
  try {
    const code = await main(args);
    return { code, out: out.join('\n'), err: err.join('\n') };
  } finally {
    log.mockRestore();
    error.mockRestore();
  }
}

/** Flags of a one-epoch CPU run on a short synthetic market (seconds). */
export const ONE_EPOCH_CPU = [
  '--backend',
  'cpu',
  '--epochs',
  '1',
  '--data.synthBars',
  '2000',
  '--env.episodeBars',
  '24',
  '--rollout.episodes',
  '4',
  '--rollout.steps',
  '16',
  '--ppo.minibatch',
  '32',
];
