// A running job's progress where experimaestro's monitor reads it: level 0 the run (its epoch),
// level 1 the epoch (training or a validation listener), as its `progress(value, level, desc)`.
import { type ProgressLevel, type StatusTarget, recordProgress } from "./status.js";

/** A level is written again once it moved by more than this, or its description changed (experimaestro's rule). */
const STEP = 0.01;

export class JobProgress {
  private levels: ProgressLevel[] = [];

  constructor(
    private readonly target: StatusTarget,
    private readonly write: (target: StatusTarget, level: ProgressLevel, levels: readonly ProgressLevel[]) => void = recordProgress,
  ) {}

  /** Sets a level (`progress` in [0, 1]); the levels below it are dropped. */
  set(level: number, progress: number, desc: string | null): void {
    const value = Math.min(1, Math.max(0, progress));
    const current = this.levels[level];
    const reachedEnd = value === 1 && current?.progress !== 1;
    if (current && current.desc === desc && Math.abs(current.progress - value) <= STEP && !reachedEnd) return;
    const entry: ProgressLevel = { level, progress: value, desc };
    const above = this.levels.slice(0, level);
    while (above.length < level) above.push({ level: above.length, progress: 0, desc: null });
    this.levels = [...above, entry];
    this.write(this.target, entry, this.levels);
  }
}
