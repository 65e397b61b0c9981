/**
 * The dev benchmark harness: `node dist/dev/bench.js collect|train [knobs]` after `npm run build`
 * (or `npm run bundle`: the bundle carries dist/dev/). The user's `foxhunt bench collect|train`
 * measure what `foxhunt train` runs; these take every tuning knob (variants, tile engines, tile
 * shapes, cluster shapes, kernel constants, learner plans) to time experiments. Not listed in
 * `foxhunt help`.
 */
import { type Command, dispatch } from '../src/cli/main.js';
import { devBenchCollectCommand } from './bench-collect.js';
import { devBenchTrainCommand } from './bench-train.js';
import { devProbeDispatchCommand } from './probe-dispatch.js';
import { devProbeSpeculateCommand } from './probe-speculate.js';
import { devProbeValidateCommand } from './probe-validate.js';

export const devCommands: Command[] = [
  devBenchCollectCommand,
  devBenchTrainCommand,
  devProbeValidateCommand,
  devProbeDispatchCommand,
  devProbeSpeculateCommand,
];

const PROGRAM = 'dev/bench';

function help(): string {
  return [
    'dev/bench: the benchmark harness with every tuning knob (the user command is foxhunt bench)',
    '',
    "usage: node dist/dev/bench.js collect|train [options]   (--help lists a command's options)",
    '',
    ...devCommands.map((c) => `  ${c.name.padEnd(8)}  ${c.summary}`),
  ].join('\n');
}

export async function devMain(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    console.log(help());
    return 0;
  }
  const code = await dispatch(devCommands, argv, PROGRAM);
  if (code === undefined) {
    console.error(`${PROGRAM}: unknown command "${argv.join(' ')}"\n\n${help()}`);
    return 1;
  }
  return code;
}
