import { defineConfig } from "../class.js";
import { meta, param } from "../declare.js";
import { int, literal, str } from "../types.js";

/** `xpm_torch.configuration.Strategy`. */
export const ConfigurationStrategy = defineConfig("xpm_torch.configuration.Strategy", {}, { abstract: true });

/** `xpm_torch.configuration.FabricConfigurationBase`. */
export const FabricConfigurationBase = defineConfig("xpm_torch.configuration.FabricConfigurationBase", {}, { abstract: true });

export const PRECISIONS = ["32-true", "32", "16-mixed", "bf16-mixed", "16-true", "bf16-true", "64-true"] as const;

/** `xpm_torch.configuration.FabricConfiguration`: precision and devices of a run. */
export const FabricConfiguration = defineConfig(
  "xpm_torch.configuration.FabricConfiguration",
  {
    precision: param(literal(PRECISIONS)).default("32-true", { ignoreDefault: true }),
    torch_fp32_precision: param(literal(["highest", "high", "medium"])).optional(),
    num_nodes: meta(int((s) => s.min(1))).default(1),
    devices: meta(str((s) => s.min(1))).default("auto"),
    strategy: meta(str((s) => s.min(1))).default("auto"),
    accelerator: meta(literal(["auto", "cpu", "cuda", "gpu"])).default("auto"),
  },
  { extends: FabricConfigurationBase },
);
