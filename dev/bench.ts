#!/usr/bin/env node
/** Entry of the dev benchmark harness (dev/main.ts): `node dist/dev/bench.js collect|train ...`. */
import { devMain } from './main.js';

devMain(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`dev/bench: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
