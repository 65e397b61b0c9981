/**
 * `foxhunt` command dispatch. Each command lives in src/cli/commands/<name>.ts and is
 * registered in ./commands/index.ts; user errors print one line and exit 1.
 */
import { commands } from './commands/index.js';

export interface Command {
  /** `data synth`, `train`, ... (words before the flags). */
  name: string;
  /** One line for `foxhunt help`. */
  summary: string;
  /** Usage text shown by `foxhunt <name> --help` and on a usage error. */
  usage: string;
  run(args: string[]): Promise<number>;
}

/** A mistake the user can fix: printed as one line, never with a stack trace. */
export class UserError extends Error {
  override name = 'UserError';
}

function help(): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    'foxhunt: GPU reinforcement-learning trainer for trading agents',
    '',
    'usage: foxhunt <command> [options]',
    '',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'foxhunt <command> --help shows the options of one command.',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h') {
    console.log(help());
    return 0;
  }
  const code = await dispatch(commands, argv, 'foxhunt');
  const group = commands.filter((c) => c.name.startsWith(`${argv[0]} `));
  if (code === undefined && group.length > 0 && argv.slice(1).every((a) => a === '--help' || a === '-h')) {
    // `foxhunt bench` or `foxhunt data --help`: the group's subcommands.
    const width = Math.max(...group.map((c) => c.name.length));
    const lines = group.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`);
    console.log([`usage: foxhunt ${argv[0]} <subcommand> [options]`, '', ...lines].join('\n'));
    return argv.length > 1 ? 0 : 1;
  }
  if (code === undefined) {
    console.error(`foxhunt: unknown command "${argv.join(' ')}"\n\n${help()}`);
    return 1;
  }
  return code;
}

/**
 * Runs the command of `list` whose name prefixes argv (the longest wins: `data synth` before
 * `data`); user errors print one line `<program> <command>: message`. Undefined when no command
 * matches. The dev harnesses (dev/) dispatch their own commands through it.
 */
export async function dispatch(
  list: Command[],
  argv: string[],
  program: string,
): Promise<number | undefined> {
  const sorted = [...list].sort((a, b) => b.name.split(' ').length - a.name.split(' ').length);
  for (const cmd of sorted) {
    const words = cmd.name.split(' ');
    if (words.every((w, i) => argv[i] === w)) {
      const rest = argv.slice(words.length);
      if (rest.includes('--help') || rest.includes('-h')) {
        console.log(cmd.usage);
        return 0;
      }
      try {
        return await cmd.run(rest);
      } catch (err) {
        if (err instanceof UserError || (err instanceof Error && err.name === 'ConfigError')) {
          console.error(`${program} ${cmd.name}: ${err.message}`);
          return 1;
        }
        if (process.env.FOXHUNT_DEBUG) throw err;
        console.error(`${program} ${cmd.name}: ${err instanceof Error ? err.message : String(err)}`);
        console.error('(set FOXHUNT_DEBUG=1 for the stack trace)');
        return 1;
      }
    }
  }
  return undefined;
}
