import { formatTaskKey, type InstanceState, type SchedulerProjection } from "@chronolog/core";
import type { RunCommand } from "@chronolog/worker";
import { type Membership, shardKeyOf, shardOf } from "./membership.js";

/**
 * Which tasks this scheduler decides for: all of them alone, the tasks of the shards it holds
 * in a group (none while it is fenced). A workflow's tasks share its shard.
 */
export class Ownership {
  /** Shard of each workflow and of each task without one (a pure function of the name). */
  private readonly workflowShards = new Map<string, number>();
  private readonly taskShards = new Map<string, number>();

  constructor(
    private readonly projection: SchedulerProjection,
    readonly membership: Membership | undefined,
  ) {}

  /** Whether this scheduler shares the tasks with others. */
  get sharded(): boolean {
    return this.membership !== undefined;
  }

  /** Whether the group's membership could not be renewed in time: nothing may run from here. */
  get fenced(): boolean {
    return this.membership?.fenced?.() ?? false;
  }

  /** Whether this scheduler decides for the task (always, without a membership). */
  owns(task: { readonly id: string; readonly spec: { readonly workflow?: string } }): boolean {
    const m = this.membership;
    if (!m) return true;
    const workflow = task.spec.workflow;
    const cache = workflow ? this.workflowShards : this.taskShards;
    const name = workflow ?? task.id;
    let shard = cache.get(name);
    if (shard === undefined) {
      shard = shardOf(shardKeyOf(task), m.shards);
      cache.set(name, shard);
    }
    return m.holds(shard);
  }

  /** Whether the command's task is of a shard held here (and this scheduler not fenced). */
  ownsCommand(c: RunCommand): boolean {
    if (this.fenced) return false;
    return this.owns(this.projection.tasks.get(c.taskKey) ?? { id: c.taskKey, spec: {} });
  }

  /** Whether this scheduler looks after the instance (its task's shard is held here). */
  ownsInstance(inst: InstanceState): boolean {
    const id = formatTaskKey(inst.key);
    return this.owns(this.projection.tasks.get(id) ?? { id, spec: {} });
  }
}
