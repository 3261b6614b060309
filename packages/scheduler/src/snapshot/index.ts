// What the package exports of its snapshots: the checkpoint in the data directory, the ladder
// and the state as of a position, and the file's text and lines (for tests and benchmarks).
// The column codec stays inside.
export { type ProjectionAsOf, projectionAsOf } from "./as-of.js";
export { type SnapshotFile, snapshotPieces } from "./file.js";
export { LADDER_DIR, LADDER_MAX_RUNGS, LADDER_SPACING, type LadderOptions, ladderRungs } from "./ladder.js";
export { removeSnapshotLeftovers } from "./leftovers.js";
export { linesOf } from "./lines-of.js";
export { type CheckpointPace, checkpointDue } from "./pace.js";
export { dropSnapshot, SNAPSHOT_FILE, saveSnapshot } from "./store.js";
