/** Types of scripts/sweep.mjs's exports, for its unit test (test/unit/scripts/sweep.test.ts). */
export type FlagValue = string | number | boolean;

export interface SweepConfig {
  name: string;
  flags: Record<string, FlagValue>;
  seeds: number[];
}

export interface ValidationMetrics {
  totalReturn: number;
  sharpe: number;
  trades: number;
}

export interface Validation {
  policy: ValidationMetrics;
  buyHold: ValidationMetrics;
  random: ValidationMetrics;
}

export interface LogRecord {
  epoch: number;
  validation: Validation;
}

export interface Figures {
  ret: number;
  sharpe: number;
  trades: number;
}

export interface EpochRow {
  epoch: number;
  policy: Figures;
  buyHold: Figures;
  random: Figures;
  ok: boolean;
}

export interface ConfigSummary {
  name: string;
  seeds: number[];
  rows: Record<number, EpochRow[]>;
  perSeed: Record<number, number[]>;
  allSeeds: number[];
  complete: number;
}

export const MIN_TRADES: number;
export function parseSweep(spec: unknown, where?: string): SweepConfig[];
export function trainArgs(config: SweepConfig, seed: number, outDir: string): string[];
export function runDir(outDir: string, name: string, seed: number): string;
export function readRunLog(dir: string): LogRecord[];
export function meetsCriterion(validation: Validation, minTrades?: number): boolean;
export function summarizeConfig(
  name: string,
  logs: Record<number, LogRecord[]>,
  minTrades?: number,
): ConfigSummary;
export function formatConfig(summary: ConfigSummary, flags?: Record<string, FlagValue> | null): string[];
export function summarizeSweep(configs: SweepConfig[], outDir: string, minTrades?: number): ConfigSummary[];
