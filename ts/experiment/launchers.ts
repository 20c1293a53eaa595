// Where an experiment's jobs run. Launchers configure the scheduler, never a job: they are no
// part of any identifier, and the core never reads them.
import { defineConfig } from "../config/class.js";
import { meta } from "../config/declare.js";
import { int, list, str } from "../config/types.js";

/** Runs an experiment's jobs somewhere. */
export const Launcher = defineConfig("xpm_torch.experiments.Launcher", {}, { abstract: true });

/**
 * Runs each job as a process of this machine, at most `max_jobs` at once. GPUs listed in
 * `devices` are handed out exclusively (`CUDA_VISIBLE_DEVICES`), as many to a job as its
 * `fabric_config.devices` asks for; the CPU threads are shared out so that concurrent jobs do not
 * oversubscribe the cores.
 */
export const LocalLauncher = defineConfig(
  "xpm_torch.experiments.LocalLauncher",
  {
    max_jobs: meta(int((s) => s.min(1))).default(1).help("Jobs running at once"),
    devices: meta(list(int((s) => s.min(0))))
      .optional()
      .help("GPU indices to hand out (default: none; jobs then see the GPUs of the plan's environment)"),
    threads_per_job: meta(int((s) => s.min(1)))
      .optional()
      .help("Intra-op threads of each job (default: the CPUs this process may use divided by max_jobs, at least 1)"),
  },
  {
    extends: Launcher,
    validate(v, issue) {
      if (v.devices && new Set(v.devices).size !== v.devices.length) issue("devices", "lists a GPU twice");
    },
  },
);

/** SLURM's time limit formats: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS. */
const SLURM_TIME = /^(\d+|\d+:\d{2}|\d+:\d{2}:\d{2}|\d+-\d+|\d+-\d+:\d{2}|\d+-\d+:\d{2}:\d{2}|UNLIMITED|INFINITE)$/;

/**
 * Submits each job to SLURM with `sbatch`: the script is written into the job directory,
 * dependencies become `--dependency=afterok:<id>`, and a data-parallel job runs as `srun` with one
 * task per rank. Jobs are requeued on preemption, and told `signal_seconds` before their time
 * limit to write a checkpoint; the requeued job resumes from it.
 */
export const SlurmLauncher = defineConfig(
  "xpm_torch.experiments.SlurmLauncher",
  {
    partition: meta(str((s) => s.min(1))).optional(),
    account: meta(str((s) => s.min(1))).optional(),
    qos: meta(str((s) => s.min(1))).optional(),
    time: meta(str((s) => s.regex(SLURM_TIME, "a SLURM time limit such as 90, 4:00:00 or 2-00:00:00")))
      .optional()
      .help("Time limit"),
    nodes: meta(int((s) => s.min(1))).optional().help("Nodes (default: the job's fabric_config.num_nodes)"),
    gpus_per_node: meta(int((s) => s.min(0))).optional(),
    cpus_per_task: meta(int((s) => s.min(1))).optional(),
    mem: meta(str((s) => s.regex(/^\d+[KMGT]?$/, "a SLURM memory size such as 16G or 4000M"))).optional(),
    constraint: meta(str((s) => s.min(1))).optional(),
    sbatch_args: meta(list(str((s) => s.min(1)))).default([]).help("Further sbatch options, as they are"),
    signal_seconds: meta(int((s) => s.min(10)))
      .default(120)
      .help("How long before the time limit the job is told to checkpoint"),
  },
  { extends: Launcher },
);
