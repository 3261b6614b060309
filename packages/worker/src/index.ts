export { type BatchSender, TickBatcher } from "./batcher.js";
export {
  FAULT_ENV,
  FAULT_NAMES,
  FAULT_TARGET_ENV,
  type FaultName,
  faultsFromEnv,
  isFaultTarget,
  type WorkerFaults,
} from "./faults.js";
export { runHttp } from "./operators/http.js";
export { runOperator } from "./operators/index.js";
export { moduleUrl, type NodeTaskContext, runNode } from "./operators/node.js";
export { runNoop } from "./operators/noop.js";
export { runShell, setWarmShells, shellEnv, warmShellPids } from "./operators/shell.js";
export {
  type HttpOperator,
  type NodeOperator,
  type NoopOperator,
  parseOperator,
  type ShellOperator,
  type WorkerOperator,
} from "./operators/spec.js";
export { TailBuffer, tailOf } from "./operators/tail.js";
export { AttemptAbort, type OperatorContext, type OperatorOutcome } from "./operators/types.js";
export { cutMarker, DEFAULT_OUTPUT_MAX_BYTES, OutputFile, outputPathFor } from "./output-file.js";
export { WorkerPool, type WorkerPoolOptions, type WorkerStats } from "./pool.js";
export * from "./protocol.js";
export { capacityShares, FatalRefusal, RemoteWorker, type RemoteWorkerOptions } from "./remote/client.js";
export { checkSchedulerUrl, isLoopbackHost, Link, LinkDown, type LinkOptions } from "./remote/link.js";
export * from "./remote-protocol.js";
export { WorkerRuntime, type WorkerRuntimeOptions } from "./runtime.js";
export {
  configureTasks,
  isEnvName,
  removeWorkDirs,
  type TaskSandbox,
  taskBaseEnv,
  taskSandbox,
  workDirFor,
} from "./sandbox.js";
export {
  discardStaged,
  prepareStagingDir,
  publishStaged,
  removeEmptyStagingDirs,
  stagedWrite,
  stagingDirFor,
} from "./staging.js";
export { afterWait } from "./wait.js";
