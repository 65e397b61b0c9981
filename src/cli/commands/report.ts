/** `foxhunt report DIR`: (re)writes DIR/report.html from the run's log and checkpoint. */
import { writeReport } from '../../node/report.js';
import { parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';
import { asUserError } from './train.js';

const usage = `usage: foxhunt report DIR [--data FILE]

Writes DIR/report.html: one self-contained page (readable offline) with the run's reward and
losses per epoch, best/'s validation equity curve against buy-and-hold and random, its drawdown,
its action and exposure distribution, the metric tables and the verdict. \`foxhunt train\` writes
it at the end of every run; this rebuilds it.

  --data FILE   the bars a run on a data file trained on (default: the file its checkpoint names)`;

export const reportCommand: Command = {
  name: 'report',
  summary: "write a run directory's report.html (charts, metric tables, verdict)",
  usage,
  async run(args) {
    const { values, positionals } = parseFlags(args, { data: { type: 'string' } }, usage);
    if (positionals.length !== 1) throw new UserError(`give exactly one run directory\n${usage}`);
    return asUserError(async () => {
      console.log(await writeReport(positionals[0], values.data as string | undefined));
      return 0;
    });
  },
};
