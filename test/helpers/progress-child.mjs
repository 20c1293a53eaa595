// A run whose epochs print to stdout and stderr while the progress display shows, for the tests
// of what a terminal shows: `node progress-child.mjs <workspace>`. XPM_TEST_EPOCH_LINES=0 turns
// the built-in epoch line off; XPM_TEST_THROW_AT=<epoch> throws in that epoch's onEpoch, and the
// child then says whether stdout and stderr write as before the run.
import { demoLearner, learn } from "xpm-torch";

const [workspace] = process.argv.slice(2);
const epochLines = process.env.XPM_TEST_EPOCH_LINES !== "0";
const throwAt = Number(process.env.XPM_TEST_THROW_AT ?? 0);
const writes = [process.stdout.write, process.stderr.write];

const run = learn(demoLearner({ seed: 5, max_epochs: 3, steps_per_epoch: 300 }), {
  workspace,
  handleSignals: false,
  epochLines,
  onEpoch: (e) => {
    console.log(`user epoch ${e.epoch} loss ${e.loss}`, { mrr: e.metrics["heldout/mrr"] });
    console.error(`user stderr ${e.epoch}`);
    // A line written in pieces shows once it is whole.
    process.stdout.write(`partial `);
    process.stdout.write(`line ${e.epoch}\nand a rest `);
    process.stdout.write(`${e.epoch}\n`);
    if (e.epoch === throwAt) throw new Error(`thrown at epoch ${e.epoch}`);
  },
});
try {
  await run;
} catch (error) {
  const restored = process.stdout.write === writes[0] && process.stderr.write === writes[1];
  console.log(`${error.message}; writes restored: ${restored}`);
}
