// The Learner of the GPU suite's MiniLM benchmark (scripts/gpu/minilm-learner.mjs), as
// `scripts/gpu/suite.sh build` wires it for xpm-torch-run: the job, with its input paths relative
// to the job directory, which the suite makes beside model/ and triplets.tsv.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

import { describe, expect, it } from "vitest";

import { repoRoot, userEnv } from "./helpers/node.js";

interface Wired {
  model: { max_length: number; encoder: { path: string } };
  trainer: { batch_size: number; sampler: { triplets: { path: string } }; hooks: { __xpmtype__: string }[] };
  optimizers: { optimizer: { __xpmtype__: string; lr: number; weight_decay: number } }[];
  max_epochs: number;
  steps_per_epoch: number;
  checkpoint_interval: number;
  fabric_config: { accelerator: string; precision: string; devices: string };
}

describe("the GPU benchmark's Learner", () => {
  it("wires as the MiniLM job in bf16-mixed on one GPU, a warm-up epoch and 50 timed steps", () => {
    // The module imports the built package, as the suite's build runs it (after npm run build).
    const done = spawnSync(process.execPath, [join(repoRoot, "dist", "cli.js"), "wire", join(repoRoot, "scripts", "gpu", "minilm-learner.mjs")], {
      cwd: repoRoot,
      env: userEnv(),
      encoding: "utf8",
    });
    expect(done.status, done.stderr).toBe(0);
    const wire = JSON.parse(done.stdout) as Wired;
    expect([wire.model.encoder.path, wire.trainer.sampler.triplets.path]).toEqual(["../model", "../triplets.tsv"]);
    expect([wire.model.max_length, wire.trainer.batch_size]).toEqual([128, 8]);
    expect(wire.trainer.hooks.map((h) => h.__xpmtype__)).toEqual(["xpm_torch.losses.pairwise.CrossEntropyLoss"]);
    expect(wire.optimizers[0]!.optimizer).toMatchObject({ __xpmtype__: "xpm_torch.optim.AdamW", lr: 2e-5, weight_decay: 0.01 });
    expect(wire.fabric_config).toMatchObject({ accelerator: "cuda", precision: "bf16-mixed", devices: "1" });
    expect((wire.max_epochs - 1) * wire.steps_per_epoch).toBe(50);
    expect(wire.checkpoint_interval).toBe(wire.max_epochs);
  });
});
