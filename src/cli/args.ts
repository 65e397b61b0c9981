/**
 * Minimal flag parsing on top of node:util parseArgs: typed options, positional arguments,
 * negative numbers as values (`--seed -1`), and one line for an unknown or malformed flag that
 * names the nearest valid one.
 */
import { parseArgs } from 'node:util';
import { type BackendChoice, type BackendRequest, chooseBackend } from '../backend/index.js';
import { BackendUnavailableError } from '../backend/types.js';
import { DECIMAL, nearestName } from '../config.js';
import { UserError } from './main.js';

export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; default?: string | boolean }
>;

export interface ParsedFlags {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

/** A word after an option that is its value, though it starts with `-`: `-1`, `-.5`, `-Infinity`. */
export const NEGATIVE_NUMBER = /^-(\d|\.\d|Infinity$)/;

export function parseFlags(args: string[], options: OptionSpec, _usage?: string): ParsedFlags {
  // parseArgs reads `-1` as a short option: join it to the string option before it.
  const joined: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const name = /^--([^=]+)$/.exec(args[i])?.[1];
    if (name && options[name]?.type === 'string' && NEGATIVE_NUMBER.test(args[i + 1] ?? '')) {
      joined.push(`--${name}=${args[++i]}`);
    } else joined.push(args[i]);
  }
  try {
    const { values, positionals } = parseArgs({
      args: joined,
      options,
      allowPositionals: true,
      strict: true,
    });
    return { values: values as ParsedFlags['values'], positionals };
  } catch (err) {
    throw new UserError(flagError(err as Error & { code?: string }, options));
  }
}

/** parseArgs' error as one line: the flag, the nearest known one, where the list is. */
function flagError(err: Error & { code?: string }, options: OptionSpec): string {
  const flag = /option '([^']+)'/i.exec(err.message)?.[1] ?? '';
  const help = '--help lists the options';
  if (err.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const near = nearestName(flag.replace(/^-+/, ''), Object.keys(options));
    return `unknown option ${flag}${near ? `; did you mean --${near}?` : `; ${help}`}`;
  }
  if (err.code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    const name = /--([\w-]+)/.exec(err.message)?.[1];
    if (name && options[name]?.type === 'boolean') return `--${name} takes no value`;
    return `--${name ?? flag} needs a value`;
  }
  return `${err.message.split('\n')[0]}; ${help}`;
}

/** An integer flag with bounds, or a UserError naming the flag. */
export function intFlag(value: string | undefined, name: string, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  const n = DECIMAL.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isInteger(n) || n < min)
    throw new UserError(`--${name} must be an integer >= ${min}, got "${value}"`);
  return n;
}

/** The backend a command asked for (`--backend`); one that cannot start is a UserError saying why. */
export async function chooseBackendFlag(request: string): Promise<BackendChoice> {
  try {
    return await chooseBackend(request as BackendRequest);
  } catch (err) {
    if (err instanceof BackendUnavailableError) throw new UserError(err.message);
    throw err;
  }
}
