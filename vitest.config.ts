import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Never write jobs into the repository's default workspace.
    env: { XPM_TORCH_WORKSPACE: mkdtempSync(join(tmpdir(), "xpm-test-workspace-")) },
  },
});
