/**
 * Minimal flag parsing on top of node:util parseArgs: typed options, positional arguments,
 * and one clear error for an unknown or malformed flag.
 */
import { parseArgs } from 'node:util';
import { UserError } from './main.js';

export type OptionSpec = Record<
  string,
  { type: 'string' | 'boolean'; short?: string; default?: string | boolean }
>;

export interface ParsedFlags {
  values: Record<string, string | boolean | undefined>;
  positionals: string[];
}

export function parseFlags(args: string[], options: OptionSpec, usage: string): ParsedFlags {
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
    return { values: values as ParsedFlags['values'], positionals };
  } catch (err) {
    throw new UserError(`${(err as Error).message}\n${usage}`);
  }
}

/** An integer flag with bounds, or a UserError naming the flag. */
export function intFlag(value: string | undefined, name: string, fallback: number, min = 0): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min)
    throw new UserError(`--${name} must be an integer >= ${min}, got "${value}"`);
  return n;
}
