/** The registry of CLI commands: add a command's module here. */
import type { Command } from '../main.js';
import { parityCommand } from './parity.js';

export const commands: Command[] = [parityCommand];
