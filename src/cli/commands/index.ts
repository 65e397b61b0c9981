/** The registry of CLI commands: add a command's module here. */
import type { Command } from '../main.js';

export const commands: Command[] = [];
