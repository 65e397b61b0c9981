/** The registry of CLI commands: add a command's module here. */
import type { Command } from '../main.js';
import { backtestCommand } from './backtest.js';
import { benchCollectCommand } from './bench-collect.js';
import { benchTrainCommand } from './bench-train.js';
import { benchDataCommand } from './data-bench.js';
import { dataCheckCommand } from './data-check.js';
import { dataFeaturesCommand } from './data-features.js';
import { dataSynthCommand } from './data-synth.js';
import { doctorCommand } from './doctor.js';
import { parityCommand } from './parity.js';
import { reportCommand } from './report.js';
import { simCommand } from './sim.js';
import { trainCommand } from './train.js';

export const commands: Command[] = [
  dataSynthCommand,
  dataCheckCommand,
  dataFeaturesCommand,
  benchDataCommand,
  benchTrainCommand,
  benchCollectCommand,
  doctorCommand,
  parityCommand,
  simCommand,
  trainCommand,
  backtestCommand,
  reportCommand,
];
