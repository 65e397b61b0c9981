// Values vitest.config.ts provides to the browser project (read with `inject`).
import 'vitest';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Where the browser parity run writes its Markdown report ('' = nowhere). */
    parityReport: string;
    /** The commit recorded in that report. */
    parityCommit: string;
  }
}
