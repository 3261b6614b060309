/*
 * When `chronolog up` writes its checkpoint. A checkpoint serialises the whole projection on the
 * event loop, so while the scheduler is busy it is spaced to take at most a twentieth of its
 * time. Once the projection has stopped moving (the scheduler has nothing to do), one is written
 * at once: it takes nothing from the scheduler then, and every read command that starts from it
 * (`tasks`, `why`, ...) folds no tail of the log.
 */

/** What the pace looks at, at one tick of the checkpoint timer. */
export interface CheckpointPace {
  /** The projection's position now. */
  readonly position: bigint;
  /** The position of the last checkpoint written (null: none yet). */
  readonly savedPosition: bigint | null;
  /** The projection's position at the tick before (null: this is the first). */
  readonly positionAtTickBefore: bigint | null;
  /** Since the last checkpoint ended, and how long it took to write. */
  readonly msSinceLastSave: number;
  readonly lastSaveTookMs: number;
}

/** A checkpoint takes at most this share of the scheduler's time while it is busy. */
export const CHECKPOINT_SHARE = 1 / 20;

/** Whether a checkpoint is written at this tick. */
export function checkpointDue(p: CheckpointPace): boolean {
  if (p.position === p.savedPosition) return false;
  if (p.msSinceLastSave * CHECKPOINT_SHARE >= p.lastSaveTookMs) return true;
  return p.position === p.positionAtTickBefore;
}
