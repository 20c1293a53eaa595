// A training process for the crash tests: `node train-child.mjs <workspace> <seed>` runs the
// checkpoint-test task and prints its result as JSON on stdout.
import { demoLearner, learn } from "xpm-torch";

const [workspace, seed] = process.argv.slice(2);
const config = demoLearner({ seed: Number(seed), max_epochs: 12, steps_per_epoch: 60 });
try {
  let started = false;
  const onProgress = () => {
    if (!started) console.error("training started");
    started = true;
  };
  const result = await learn(config, { workspace, onProgress, onWarning: (m) => console.error(`warning: ${m}`) });
  process.stdout.write(JSON.stringify(result));
} catch (error) {
  console.error(`${error.code}: ${error.message}`);
  process.exitCode = 3;
}
