/** `foxhunt report DIR`: (re)writes DIR/report.html from the run's log and checkpoint. */
import { loadSourcedBars, repairOptions } from '../../node/data.js';
import { writeReport } from '../../node/report.js';
import { parseFlags } from '../args.js';
import { type Command, UserError } from '../main.js';
import { asUserError } from './train.js';

const usage = `usage: foxhunt report DIR [--data FILE [--drop-invalid] [--fill-gaps]]

Writes DIR/report.html: one self-contained page (readable offline) with the run's reward and
losses per epoch, best/'s validation equity curve against buy-and-hold and random, its drawdown,
its action and exposure distribution, the metric tables and the verdict. \`foxhunt train\` writes
it at the end of every run; this rebuilds it.

  --data FILE      the bars the run trained on (checked against its checkpoint; default: the file
                   its checkpoint names, with the repairs it names)
  --drop-invalid   drop FILE's rows that break a rule, as the run did
  --fill-gaps      fill FILE's missing bars, as the run did`;

export const reportCommand: Command = {
  name: 'report',
  summary: "write a run directory's report.html (charts, metric tables, verdict)",
  usage,
  async run(args) {
    const { values, positionals } = parseFlags(
      args,
      { data: { type: 'string' }, 'drop-invalid': { type: 'boolean' }, 'fill-gaps': { type: 'boolean' } },
      usage,
    );
    if (positionals.length !== 1) throw new UserError(`give exactly one run directory\n${usage}`);
    const repair = repairOptions(values);
    if (repair.error) throw new UserError(repair.error);
    return asUserError(async () => {
      const bars = await loadSourcedBars(values.data as string | undefined, repair.opts);
      if (bars?.repairs) console.error(`data: ${bars.source}: ${bars.repairs}`);
      console.log(await writeReport(positionals[0], bars, (line) => console.error(`warning: ${line}`)));
      return 0;
    });
  },
};
