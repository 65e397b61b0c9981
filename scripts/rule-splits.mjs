#!/usr/bin/env node
// The synthetic market's reference rule on its validation and test splits, beside buy-and-hold
// (docs/RESULTS.md): long when `ema_cross_12_48` > 0.5, short when < -0.5, else flat, market orders
// through the simulator at the default config (docs/DATA.md). Needs `npm run build`.
//   node scripts/rule-splits.mjs [FIRST_SEED [LAST_SEED]]   (default 1 6)
const d = new URL('../dist/src/', import.meta.url).href;
const { cloneDefaults } = await import(`${d}config.js`);
const { makeSplits } = await import(`${d}data/splits.js`);
const { generateSynthetic } = await import(`${d}data/synthetic.js`);
const { encodeAction, OrderType } = await import(`${d}env/actions.js`);
const { backtest, buyAndHold } = await import(`${d}eval/backtest.js`);
const { FEATURE_NAMES } = await import(`${d}features/features.js`);
const { buildMarket } = await import(`${d}features/market.js`);

const [first, last] = [Number(process.argv[2] ?? 1), Number(process.argv[3] ?? process.argv[2] ?? 6)];
const cfg = cloneDefaults();
const signal = FEATURE_NAMES.indexOf('ema_cross_12_48');
const [long, short, flat] = [4, 0, 2].map((e) => encodeAction(e, OrderType.Market, 2));
const rule = (s) => (s[signal] > 0.5 ? long : s[signal] < -0.5 ? short : flat);
const barsPerYear = 365 * 1440;
const cell = (m) => `${(100 * m.totalReturn).toFixed(2)}% / ${m.sharpe.toFixed(2)}`;
console.log('| seed | split | buy-and-hold | the rule | rule beats buy-and-hold |');
console.log('| ---: | --- | --- | --- | --- |');
for (let seed = first; seed <= last; seed++) {
  const market = buildMarket(generateSynthetic({ bars: cfg.data.synthBars, seed }), cfg);
  const { val, test } = makeSplits(market.n, cfg);
  for (const [name, split] of [
    ['validation', val],
    ['test', test],
  ]) {
    const held = buyAndHold(market, split, cfg.env, barsPerYear).metrics;
    const ruled = backtest(market, split, cfg.env, rule, barsPerYear).metrics;
    const beats = ruled.totalReturn > held.totalReturn && ruled.sharpe > held.sharpe;
    console.log(`| ${seed} | ${name} | ${cell(held)} | ${cell(ruled)} | ${beats ? 'yes' : 'no'} |`);
  }
}
