// A training process for the crash tests: `node train-child.mjs <workspace> <seed>` runs the
// checkpoint-test task and prints its result as JSON on stdout.
//
// The moment of a crash is counted in training steps, not in time: with XPM_TEST_SIGNAL_AT_STEP=N
// (and XPM_TEST_SIGNAL=SIGKILL or SIGINT) a step hook sends this process the signal once the run
// reaches global step N, writing `signal <name> at step <N>` to stderr first. The hook is in
// every run of the task, signal or not, so that all of them are the same job.
import { Learner, LossTrainer, defineHook, demoLearner, learn } from "xpm-torch";

const [workspace, seed] = process.argv.slice(2);
const signalAt = Number(process.env.XPM_TEST_SIGNAL_AT_STEP ?? 0);
const signal = process.env.XPM_TEST_SIGNAL ?? "SIGKILL";

let sent = false;
const CrashAtStep = defineHook("xpm_torch_tests.CrashAtStep", {}, {
  kind: "step",
  after: (_self, state) => {
    if (sent || signalAt === 0 || state.step < signalAt) return;
    sent = true;
    console.error(`signal ${signal} at step ${state.step}`);
    process.kill(process.pid, signal);
  },
});

const demo = demoLearner({ seed: Number(seed), max_epochs: 12, steps_per_epoch: 60 });
const config = Learner.C({
  ...demo,
  trainer: LossTrainer.C({ ...demo.trainer, hooks: [...demo.trainer.hooks, CrashAtStep.C({})] }),
});
try {
  const result = await learn(config, { workspace, quiet: true, onWarning: (m) => console.error(`warning: ${m}`) });
  process.stdout.write(JSON.stringify(result));
} catch (error) {
  console.error(`${error.code}: ${error.message}`);
  process.exitCode = 3;
}
