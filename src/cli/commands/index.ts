/** The registry of CLI commands: add a command's module here. */
import type { Command } from '../main.js';
import { doctorCommand } from './doctor.js';

export const commands: Command[] = [doctorCommand];
