import { defineConfig } from "../class.js";
import { meta, param } from "../declare.js";
import { bool, int, literal, str } from "../types.js";

/** `xpm_torch.configuration.Strategy`. */
export const ConfigurationStrategy = defineConfig("xpm_torch.configuration.Strategy", {}, { abstract: true });

/** `xpm_torch.configuration.FabricConfigurationBase`. */
export const FabricConfigurationBase = defineConfig("xpm_torch.configuration.FabricConfigurationBase", {}, { abstract: true });

/** The precisions a run accepts (Lightning's spellings). */
export const CURRENT_PRECISIONS = ["32-true", "64-true", "bf16-true", "16-true", "bf16-mixed", "16-mixed"] as const;

/** Older Lightning spellings, still accepted with a deprecation warning, and what they mean. */
export const LEGACY_PRECISIONS = { "32": "32-true", "64": "64-true", "16": "16-mixed", bf16: "bf16-mixed" } as const;

export const PRECISIONS = [...CURRENT_PRECISIONS, ...(Object.keys(LEGACY_PRECISIONS) as (keyof typeof LEGACY_PRECISIONS)[])] as const;

/** The strategies a run accepts. */
export const STRATEGIES = ["auto", "ddp"] as const;

/**
 * `xpm_torch.configuration.FabricConfiguration`: precision and devices of a run.
 *
 * `num_threads` and `deterministic` are this port's own, declared Meta so that they never change
 * an experiment's identifier (and left out of params.json while unset). Without `num_threads`,
 * `OMP_NUM_THREADS` decides when set, else half the CPUs the process may use.
 * `deterministic: true` turns on libtorch's deterministic algorithms (an error on an operation
 * without a deterministic implementation); on CUDA, cuBLAS also needs
 * `CUBLAS_WORKSPACE_CONFIG=:4096:8` in the environment before the process starts.
 */
export const FabricConfiguration = defineConfig(
  "xpm_torch.configuration.FabricConfiguration",
  {
    precision: param(literal(PRECISIONS)).default("32-true", { ignoreDefault: true }).help("32-true, 16-mixed, bf16-mixed, ... (Lightning's spellings)"),
    torch_fp32_precision: param(literal(["highest", "high", "medium"])).optional().help("Precision of float32 matrix products"),
    num_nodes: meta(int((s) => s.min(1))).default(1).help("Number of nodes"),
    devices: meta(str((s) => s.min(1))).default("auto").help("Devices per node"),
    strategy: meta(literal(STRATEGIES)).default("auto").help('"auto": ddp for several devices or nodes (as Lightning), else one process; "ddp"'),
    accelerator: meta(literal(["auto", "cpu", "cuda", "gpu"])).default("auto").help("Device kind (gpu: the same as cuda)"),
    num_threads: meta(int((s) => s.min(1))).optional().help("Intra-op CPU threads (default: OMP_NUM_THREADS, else half the CPUs)"),
    deterministic: meta(bool()).optional().help("Whether libtorch uses only deterministic algorithms"),
  },
  {
    extends: FabricConfigurationBase,
    validate(v) {
      const precision = v.precision;
      if (precision in LEGACY_PRECISIONS) {
        const current = LEGACY_PRECISIONS[precision as keyof typeof LEGACY_PRECISIONS];
        process.emitWarning(`precision "${precision}" is deprecated, write "${current}" (same meaning)`, {
          type: "DeprecationWarning",
          code: "XPM_TORCH_PRECISION",
        });
      }
    },
  },
);
