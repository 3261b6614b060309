// Generated from the API's OpenAPI document: do not edit. Regenerate with
//   npm run gen:api-types
// (a test fails while this file differs from what that command writes).
export interface paths {
    "/api/v1/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** the server answers */
        get: operations["getHealth"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** ready once the projection holds what the log held when the server started */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/declarations": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** declare tasks, workflows and connections, whole or not at all (dryRun: check only) */
        post: operations["declare"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/connections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** every declared connection */
        get: operations["listConnections"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workflows": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** every declared workflow */
        get: operations["listWorkflows"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workflows/{name}/retire": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** retire a workflow and every task of it in one atomic write (as `chronolog retire --workflow`) */
        post: operations["retireWorkflow"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** tasks in key order, a page at a time, with where each stands */
        get: operations["listTasks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** one task: its declaration, where it stands and why (decideTask's answer) */
        get: operations["getTask"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** pause a task */
        post: operations["pauseTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** resume a task */
        post: operations["resumeTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}/retire": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** retire a task */
        post: operations["retireTask"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}/retry": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** run a halted interval again (failed, abandoned, upstream_failed, cancelled): a new attempt, with a fresh retry budget */
        post: operations["retryInterval"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}/mark": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** mark an interval succeeded or skipped by hand, with a reason: it counts as done for its children */
        post: operations["markInterval"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}/intervals/{date}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** report an interval of an outside task (operator: { type: external }) succeeded, or failed with a reason */
        post: operations["reportInterval"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}/history": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** the task's events and its attempts', in log order, with positions and actors */
        get: operations["getTaskHistory"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/tasks/{key}/attempts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** every attempt of the task: token, worker, state, times, why it ended */
        get: operations["listTaskAttempts"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/attempts/{token}/output": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** an attempt's whole output (stdout and stderr as they came); follow=true streams it live */
        get: operations["getAttemptOutput"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/attempts/{token}/abandon": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** abandon an attempt in flight (its worker will not report); retry: a new attempt follows */
        post: operations["abandonAttempt"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** workflow runs, newest logical date first, each with its summary and why it waits */
        get: operations["listRuns"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** one run with its tries and instances; wait=30s holds the request until it finishes */
        get: operations["getRun"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/critical-path": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** the chain of last-parent-to-finish links of a try, with durations */
        get: operations["getCriticalPath"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workflows/{name}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** trigger exactly one run of a workflow outside its schedule, with params; logicalDate takes a day (the one interval that starts on it in the workflow's zone) or an instant; dryRun returns the plan and writes nothing */
        post: operations["triggerRun"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/runs/{id}/rerun": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** re-execute a finished run: all of it, or (failedOnly) what did not succeed and below; dryRun returns the plan and writes nothing */
        post: operations["rerun"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/backfills": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** re-run a range of a task's intervals (downstream: and its subtree), as `backfill`; its intervals wait after every scheduled one unless priority says otherwise; from and to take a day (2026-12-01: the intervals that start on it in each task's zone) or an instant; dryRun returns the plan and writes nothing */
        post: operations["backfill"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/backfills/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** cancel a pending backfill, as `backfill --cancel`: each task it walks returns to where it stood before it (one with an interval under way finishes that first), and its runs' intervals that will not run now are closed as cancelled; dryRun returns the same and writes nothing */
        post: operations["cancelBackfill"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/backfills/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** a backfill's ranges and how far each has come */
        get: operations["getBackfill"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** events from a position, a page at a time */
        get: operations["readLog"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/log/head": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** the log's head: the last event's position and hash */
        get: operations["getLogHead"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/log/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** walk the log and check its hash chain (writes nothing) */
        post: operations["verifyLog"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * live events as Server-Sent Events (id: log position; resume with Last-Event-ID)
         * @description A browser's EventSource sends no headers: this route alone also takes the token as `?access_token=`.
         */
        get: operations["streamEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** remote workers connected: queues, load, version, since when and what each runs */
        get: operations["listWorkers"];
        put?: never;
        /** a remote worker registers: its queues, capacity and the attempts it still runs */
        post: operations["registerWorker"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workers/{id}/commands": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * the worker's commands as Server-Sent Events (`commands`, `ping`, `closed`)
         * @description Each `commands` event's data is `{messages: [...], at}`: run, proceed, query, cancel and shutdown commands, in order, and the scheduler's clock (epoch ms) when the oldest of them was queued; an idempotent run that reaches the worker a quarter of its lease or more after that, by the scheduler's clock as its answers give it, runs only once its `started` report is accepted. `ping` comes every keepalive; `closed` says why the scheduler ended the stream.
         */
        get: operations["streamWorkerCommands"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workers/{id}/reports": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * a batch of the worker's reports (started, heartbeat, succeeded, failed, known)
         * @description A report whose attempt was not dispatched to this worker, or is no longer current, is refused (409, listed in `refused`) and recorded as WorkerReportRefused, never applied; the others in the batch are applied.
         */
        post: operations["postWorkerReports"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workers/{id}/attempts/{token}/output": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        /** a chunk of an attempt's output, at `offset` (where what the scheduler holds ends) */
        put: operations["putWorkerOutput"];
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/v1/workers/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** the worker says goodbye: it takes nothing more */
        delete: operations["unregisterWorker"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/ui/whoami": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** who the token is, and what the UI's live connection listens for */
        get: operations["uiWhoami"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/ui/grid": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** tasks by their recent logical dates, filtered, a page at a time */
        get: operations["uiGrid"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/ui/graph": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** the graph of declared tasks (of a project, a workflow or a run) and their parents */
        get: operations["uiGraph"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        DeclareOutcome: {
            dryRun: boolean;
            tasks: {
                task: string;
                outcome: string;
                changes: {
                    field: string;
                    from?: unknown;
                    to?: unknown;
                }[];
            }[];
            connections: {
                name: string;
                outcome: string;
            }[];
            workflows: {
                name: string;
                outcome: string;
            }[];
            warnings: unknown[];
        };
        /** @description RFC 9457 problem details, with the typed error's own fields */
        Problem: {
            type: string;
            title: string;
            status: number;
            detail: string;
        } & {
            [key: string]: unknown;
        };
        /** @description what was written, and the log position of its last event */
        Written: {
            /** @example 42 */
            position: string;
        } & {
            [key: string]: unknown;
        };
        /** @description a page of tasks; `next` is the cursor of the next page */
        TaskPage: {
            items: components["schemas"]["TaskRow"][];
            next: string | null;
        };
        TaskRow: {
            task: string;
            status: string;
            condition: string;
            logicalDate: string;
            prevIntervalStart: string | null;
            nextRunDate: string | null;
            reasons: string[];
            decision?: unknown;
            nextSteps: components["schemas"]["NextStep"][];
        };
        /** @description a way out for an operator, and the CLI command that does it */
        NextStep: {
            /** @enum {string} */
            action: "retry" | "mark_succeeded" | "mark_skipped" | "abandon" | "resume" | "report_succeeded" | "report_failed";
            task: string;
            interval: string | null;
            command: string;
        };
        TaskDetail: {
            task: {
                id: string;
                status: string;
                spec: {
                    key: {
                        project: string;
                        account: string;
                        name: string;
                        /** @default ALL */
                        partition: string;
                    };
                    workflow?: string;
                    cron: string;
                    /** @default UTC */
                    timezone: string;
                    /** Format: date-time */
                    startDate: string;
                    /** Format: date-time */
                    endDate?: string;
                    /** @default true */
                    catchup: boolean;
                    operator: {
                        /** @enum {string} */
                        type: "shell";
                        command: string;
                        cwd?: string;
                        /** @default {} */
                        env: {
                            [key: string]: string;
                        };
                        timeoutMs?: number;
                        publishTo?: string;
                    } | {
                        /** @enum {string} */
                        type: "http";
                        /**
                         * @default GET
                         * @enum {string}
                         */
                        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD";
                        url: string;
                        /** @default {} */
                        headers: {
                            [key: string]: string;
                        };
                        body?: string;
                        timeoutMs?: number;
                        expectStatus?: number[];
                    } | {
                        /** @enum {string} */
                        type: "node";
                        module: string;
                        /** @default default */
                        export: string;
                        /** @default {} */
                        args: {
                            [key: string]: unknown;
                        };
                        timeoutMs?: number;
                        publishTo?: string;
                    } | {
                        /** @enum {string} */
                        type: "python";
                        function: string;
                        /** @default {} */
                        args: {
                            [key: string]: unknown;
                        };
                        timeoutMs?: number;
                    } | {
                        /** @enum {string} */
                        type: "noop";
                    } | {
                        /** @enum {string} */
                        type: "external";
                    };
                    connection?: string;
                    queue?: string;
                    /** @default [] */
                    parents: {
                        project: string;
                        account: string;
                        name: string;
                        /** @default ALL */
                        partition: string;
                    }[];
                    /**
                     * @default {
                     *       "maxAttempts": 1,
                     *       "initialDelayMs": 1000,
                     *       "factor": 2,
                     *       "maxDelayMs": 300000,
                     *       "jitter": 0.1
                     *     }
                     */
                    retry: {
                        /** @default 1 */
                        maxAttempts: number;
                        /** @default 1000 */
                        initialDelayMs: number;
                        /** @default 2 */
                        factor: number;
                        /** @default 300000 */
                        maxDelayMs: number;
                        /** @default 0.1 */
                        jitter: number;
                    };
                    /** @default false */
                    idempotent: boolean;
                    /** @default {} */
                    config: {
                        [key: string]: unknown;
                    };
                    cacheKey?: string;
                    /** @default 30 */
                    leaseSeconds: number;
                    /** @default [] */
                    alerts: {
                        /**
                         * @default [
                         *       "task_failed",
                         *       "needs_operator",
                         *       "run_failed",
                         *       "deadline_at_risk",
                         *       "deadline_missed",
                         *       "deadline_met_late"
                         *     ]
                         */
                        on: ("task_failed" | "needs_operator" | "run_failed" | "deadline_at_risk" | "deadline_missed" | "deadline_met_late")[];
                        command?: string;
                        http?: {
                            url: string;
                            /**
                             * @default POST
                             * @enum {string}
                             */
                            method: "POST" | "PUT" | "GET";
                            /** @default {} */
                            headers: {
                                [key: string]: string;
                            };
                            body?: string;
                        };
                        /** @default 10000 */
                        timeoutMs: number;
                    }[];
                    secrets?: {
                        [key: string]: {
                            env?: string;
                            file?: string;
                            command?: string;
                        };
                    };
                    priority?: number;
                    /** @enum {string} */
                    priorityRule?: "absolute" | "downstream";
                    deadline?: {
                        within?: string;
                        at?: string;
                    };
                };
            } & {
                [key: string]: unknown;
            };
            priority: components["schemas"]["ShownPriority"];
            condition: string;
            reasons: string[];
            decision?: unknown;
            nextSteps: components["schemas"]["NextStep"][];
            instance?: unknown;
            /** @description an outside task's latest reported intervals, the latest first, and who reported them */
            reports: components["schemas"]["ReportRow"][];
            deadline: components["schemas"]["DeadlineStanding"];
        };
        /** @description the task's declared priority and rule, its weight (with downstream: its subtree's sum), and how its current interval competes for slots (claim.backfill: a backfill's interval, after every scheduled one) */
        ShownPriority: {
            priority: number;
            /** @enum {string} */
            rule: "absolute" | "downstream";
            weight: number;
            claim: {
                backfill: boolean;
                weight: number;
            };
        };
        ReportRow: {
            logicalDate: string;
            /** @enum {string} */
            outcome: "succeeded" | "failed";
            by: string;
            reason: string | null;
            at: string;
            /**
             * @description in: completed (or stopped at); awaited: the interval the task stands at; held: ahead of it
             * @enum {string}
             */
            standing: "in" | "awaited" | "held";
        };
        /** @description a task's deadline: when its current interval is due, the estimate and the root cause */
        DeadlineStanding: {
            deadline: {
                within?: string;
                at?: string;
            };
            /** @description the interval it is for: the first the task has not done */
            logicalDate: string;
            dueAt: string;
            /** @enum {string} */
            state: "on_track" | "at_risk" | "missed";
            estimate: {
                /** @description when it would be done at the recent pace; null: not without an operator */
                doneAt: string | null;
                path: {
                    task: string;
                    logicalDate: string;
                    ms: number;
                }[];
                /** @description tasks on the way with no recorded duration yet */
                unknown: string[];
            };
            /** @description what holds the interval, the waits followed to their end */
            cause: {
                task: string;
                logicalDate: string;
                state: string;
                detail: string | null;
                path: string[];
                text: string;
            } | null;
            /** @description the task's latest interval done after its deadline */
            metLate: {
                logicalDate: string;
                text: string;
                at: string;
            } | null;
        } | null;
        /** @description what a retry or a mark of an interval did */
        IntervalAction: {
            task: string;
            logicalDate: string;
            /** @description how the interval stood before: failed, upstream_failed, ... */
            was: string;
            /** @description descendants closed as upstream_failed, reopened */
            reopened: string[];
            /** @description the workflow run, reopened as a new try or going already */
            run: {
                runId: string;
                reopened: boolean;
                try: number;
            } | null;
            /** @description retry: the attempt to come */
            attempt: number | null;
            /** @description retry: its fresh retry budget */
            maxAttempts: number;
            message: string;
            /** @example 42 */
            position: string;
        };
        /** @description what a report of an outside task's interval did */
        IntervalReport: {
            task: string;
            logicalDate: string;
            /** @enum {string} */
            outcome: "succeeded" | "failed";
            /**
             * @description recorded: for the interval the task stands at; held: ahead of it (counts once the earlier intervals are in); unchanged: the same report was made before, nothing written
             * @enum {string}
             */
            status: "recorded" | "held" | "unchanged";
            /** @description the interval the task stands at: the first one not in */
            awaited: string;
            /** @description the report this one replaces (failed, then succeeded), or the same one made before */
            before: {
                outcome: string;
                by: string;
                at: string;
            } | null;
            /** @description descendants closed as upstream_failed, reopened */
            reopened: string[];
            message: string;
            /**
             * @description log position of the last event written (-1: nothing written)
             * @example 42
             */
            position: string;
        };
        RecordedEvent: {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "TaskDeclared";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                spec: {
                    key: {
                        project: string;
                        account: string;
                        name: string;
                        /** @default ALL */
                        partition: string;
                    };
                    workflow?: string;
                    cron: string;
                    /** @default UTC */
                    timezone: string;
                    /** Format: date-time */
                    startDate: string;
                    /** Format: date-time */
                    endDate?: string;
                    /** @default true */
                    catchup: boolean;
                    operator: {
                        /** @enum {string} */
                        type: "shell";
                        command: string;
                        cwd?: string;
                        /** @default {} */
                        env: {
                            [key: string]: string;
                        };
                        timeoutMs?: number;
                        publishTo?: string;
                    } | {
                        /** @enum {string} */
                        type: "http";
                        /**
                         * @default GET
                         * @enum {string}
                         */
                        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD";
                        url: string;
                        /** @default {} */
                        headers: {
                            [key: string]: string;
                        };
                        body?: string;
                        timeoutMs?: number;
                        expectStatus?: number[];
                    } | {
                        /** @enum {string} */
                        type: "node";
                        module: string;
                        /** @default default */
                        export: string;
                        /** @default {} */
                        args: {
                            [key: string]: unknown;
                        };
                        timeoutMs?: number;
                        publishTo?: string;
                    } | {
                        /** @enum {string} */
                        type: "python";
                        function: string;
                        /** @default {} */
                        args: {
                            [key: string]: unknown;
                        };
                        timeoutMs?: number;
                    } | {
                        /** @enum {string} */
                        type: "noop";
                    } | {
                        /** @enum {string} */
                        type: "external";
                    };
                    connection?: string;
                    queue?: string;
                    /** @default [] */
                    parents: {
                        project: string;
                        account: string;
                        name: string;
                        /** @default ALL */
                        partition: string;
                    }[];
                    /**
                     * @default {
                     *       "maxAttempts": 1,
                     *       "initialDelayMs": 1000,
                     *       "factor": 2,
                     *       "maxDelayMs": 300000,
                     *       "jitter": 0.1
                     *     }
                     */
                    retry: {
                        /** @default 1 */
                        maxAttempts: number;
                        /** @default 1000 */
                        initialDelayMs: number;
                        /** @default 2 */
                        factor: number;
                        /** @default 300000 */
                        maxDelayMs: number;
                        /** @default 0.1 */
                        jitter: number;
                    };
                    /** @default false */
                    idempotent: boolean;
                    /** @default {} */
                    config: {
                        [key: string]: unknown;
                    };
                    cacheKey?: string;
                    /** @default 30 */
                    leaseSeconds: number;
                    /** @default [] */
                    alerts: {
                        /**
                         * @default [
                         *       "task_failed",
                         *       "needs_operator",
                         *       "run_failed",
                         *       "deadline_at_risk",
                         *       "deadline_missed",
                         *       "deadline_met_late"
                         *     ]
                         */
                        on: ("task_failed" | "needs_operator" | "run_failed" | "deadline_at_risk" | "deadline_missed" | "deadline_met_late")[];
                        command?: string;
                        http?: {
                            url: string;
                            /**
                             * @default POST
                             * @enum {string}
                             */
                            method: "POST" | "PUT" | "GET";
                            /** @default {} */
                            headers: {
                                [key: string]: string;
                            };
                            body?: string;
                        };
                        /** @default 10000 */
                        timeoutMs: number;
                    }[];
                    secrets?: {
                        [key: string]: {
                            env?: string;
                            file?: string;
                            command?: string;
                        };
                    };
                    priority?: number;
                    /** @enum {string} */
                    priorityRule?: "absolute" | "downstream";
                    deadline?: {
                        within?: string;
                        at?: string;
                    };
                };
                /** Format: date-time */
                logicalDate: string;
                /** Format: date-time */
                nextRunDate: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "TaskDeclarationChanged";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                spec: {
                    key: {
                        project: string;
                        account: string;
                        name: string;
                        /** @default ALL */
                        partition: string;
                    };
                    workflow?: string;
                    cron: string;
                    /** @default UTC */
                    timezone: string;
                    /** Format: date-time */
                    startDate: string;
                    /** Format: date-time */
                    endDate?: string;
                    /** @default true */
                    catchup: boolean;
                    operator: {
                        /** @enum {string} */
                        type: "shell";
                        command: string;
                        cwd?: string;
                        /** @default {} */
                        env: {
                            [key: string]: string;
                        };
                        timeoutMs?: number;
                        publishTo?: string;
                    } | {
                        /** @enum {string} */
                        type: "http";
                        /**
                         * @default GET
                         * @enum {string}
                         */
                        method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD";
                        url: string;
                        /** @default {} */
                        headers: {
                            [key: string]: string;
                        };
                        body?: string;
                        timeoutMs?: number;
                        expectStatus?: number[];
                    } | {
                        /** @enum {string} */
                        type: "node";
                        module: string;
                        /** @default default */
                        export: string;
                        /** @default {} */
                        args: {
                            [key: string]: unknown;
                        };
                        timeoutMs?: number;
                        publishTo?: string;
                    } | {
                        /** @enum {string} */
                        type: "python";
                        function: string;
                        /** @default {} */
                        args: {
                            [key: string]: unknown;
                        };
                        timeoutMs?: number;
                    } | {
                        /** @enum {string} */
                        type: "noop";
                    } | {
                        /** @enum {string} */
                        type: "external";
                    };
                    connection?: string;
                    queue?: string;
                    /** @default [] */
                    parents: {
                        project: string;
                        account: string;
                        name: string;
                        /** @default ALL */
                        partition: string;
                    }[];
                    /**
                     * @default {
                     *       "maxAttempts": 1,
                     *       "initialDelayMs": 1000,
                     *       "factor": 2,
                     *       "maxDelayMs": 300000,
                     *       "jitter": 0.1
                     *     }
                     */
                    retry: {
                        /** @default 1 */
                        maxAttempts: number;
                        /** @default 1000 */
                        initialDelayMs: number;
                        /** @default 2 */
                        factor: number;
                        /** @default 300000 */
                        maxDelayMs: number;
                        /** @default 0.1 */
                        jitter: number;
                    };
                    /** @default false */
                    idempotent: boolean;
                    /** @default {} */
                    config: {
                        [key: string]: unknown;
                    };
                    cacheKey?: string;
                    /** @default 30 */
                    leaseSeconds: number;
                    /** @default [] */
                    alerts: {
                        /**
                         * @default [
                         *       "task_failed",
                         *       "needs_operator",
                         *       "run_failed",
                         *       "deadline_at_risk",
                         *       "deadline_missed",
                         *       "deadline_met_late"
                         *     ]
                         */
                        on: ("task_failed" | "needs_operator" | "run_failed" | "deadline_at_risk" | "deadline_missed" | "deadline_met_late")[];
                        command?: string;
                        http?: {
                            url: string;
                            /**
                             * @default POST
                             * @enum {string}
                             */
                            method: "POST" | "PUT" | "GET";
                            /** @default {} */
                            headers: {
                                [key: string]: string;
                            };
                            body?: string;
                        };
                        /** @default 10000 */
                        timeoutMs: number;
                    }[];
                    secrets?: {
                        [key: string]: {
                            env?: string;
                            file?: string;
                            command?: string;
                        };
                    };
                    priority?: number;
                    /** @enum {string} */
                    priorityRule?: "absolute" | "downstream";
                    deadline?: {
                        within?: string;
                        at?: string;
                    };
                };
                changes: {
                    field: string;
                    from?: unknown;
                    to?: unknown;
                }[];
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "TaskPaused";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                reason?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "TaskResumed";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "TaskRetired";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                reason?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "TaskRevived";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                reason?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "IntervalReset";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                /** Format: date-time */
                nextRunDate: string;
                /** Format: date-time */
                prevIntervalStart: string | null;
                /** @enum {string} */
                reason: "backfill" | "catchup_disabled" | "operator" | "schedule_changed" | "backfill_cancelled";
                note?: string;
                /** Format: date-time */
                until?: string;
                resume?: {
                    /** Format: date-time */
                    logicalDate: string;
                    /** Format: date-time */
                    nextRunDate: string;
                    /** Format: date-time */
                    prevIntervalStart: string | null;
                };
                backfillId?: string;
                /** Format: date-time */
                from?: string;
                priority?: number;
                continues?: boolean;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "IntervalCompleted";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                /** Format: date-time */
                nextLogicalDate: string;
                /** Format: date-time */
                nextRunDate: string;
                attempt?: number;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "IntervalFailed";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                /** @enum {string} */
                state: "failed" | "upstream_failed" | "abandoned" | "cancelled";
                reason: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "IntervalRetried";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                by: string;
                reason?: string;
                parent?: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "DispatchIntended";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                attempt: number;
                token: string;
                runId?: string;
                connection?: string;
                operator: {
                    [key: string]: unknown;
                };
                idempotent: boolean;
                leaseSeconds: number;
                /** Format: date-time */
                notBefore?: string;
                cacheKey?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AttemptStarted";
            data: {
                attempt: number;
                token: string;
                workerId: string;
                pid?: number;
                /** Format: date-time */
                leaseExpiresAt: string;
                outputPath?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AttemptLeaseExtended";
            data: {
                attempt: number;
                token: string;
                /** Format: date-time */
                leaseExpiresAt: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AttemptHeartbeatExpired";
            data: {
                attempt: number;
                token: string;
                /** Format: date-time */
                leaseExpiredAt: string;
                workerId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AttemptSucceeded";
            data: {
                attempt: number;
                token: string;
                durationMs: number;
                /** @default null */
                exitCode: number | null;
                output?: {
                    /** @default  */
                    stdoutTail: string;
                    /** @default  */
                    stderrTail: string;
                    file?: {
                        path: string;
                        bytes: number;
                        sha256: string;
                        /** @default 0 */
                        cutBytes: number;
                        error?: string;
                    };
                };
                /** @default false */
                cacheHit: boolean;
                cacheKey?: string;
                workerId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AttemptFailed";
            data: {
                attempt: number;
                token: string;
                error: {
                    /** @enum {string} */
                    kind: "exit_code" | "signal" | "timeout" | "exception" | "http_status" | "lost" | "interrupted" | "unknown";
                    message: string;
                };
                /** @default null */
                exitCode: number | null;
                durationMs?: number;
                output?: {
                    /** @default  */
                    stdoutTail: string;
                    /** @default  */
                    stderrTail: string;
                    file?: {
                        path: string;
                        bytes: number;
                        sha256: string;
                        /** @default 0 */
                        cutBytes: number;
                        error?: string;
                    };
                };
                /** Format: date-time */
                retryAt?: string;
                workerId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AttemptAbandoned";
            data: {
                attempt: number;
                token: string;
                reason: string;
                by: string;
                /** @default false */
                retry: boolean;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AttemptCancelled";
            data: {
                attempt: number;
                token: string;
                reason: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "InstanceSkipped";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                reason: string;
                runId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "InstanceUpstreamFailed";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                failedParent: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                reason: string;
                runId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "InstanceCancelled";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                reason: string;
                runId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "IntervalMarked";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                /** @enum {string} */
                outcome: "success" | "skipped";
                reason: string;
                by: string;
                runId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "IntervalReported";
            data: {
                key: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                /** Format: date-time */
                logicalDate: string;
                /** @enum {string} */
                outcome: "succeeded" | "failed";
                reason?: string;
                by: string;
                runId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "CompletionRejected";
            data: {
                token: string;
                attempt?: number;
                /** @enum {string} */
                report: "started" | "heartbeat" | "succeeded" | "failed";
                /** @enum {string} */
                reason: "unknown_token" | "stale_token" | "already_terminal";
                currentToken?: string;
                workerId?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "RunStarted";
            data: {
                runId: string;
                workflow: string;
                /** Format: date-time */
                logicalDate: string;
                tasks: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                }[];
                /**
                 * @default schedule
                 * @enum {string}
                 */
                trigger: "schedule" | "manual" | "rerun" | "backfill";
                /** @default {} */
                params: {
                    [key: string]: string;
                };
                try?: number;
                requestedBy?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "RunFinished";
            data: {
                runId: string;
                /** @enum {string} */
                state: "success" | "failed" | "partial";
                workflow: string;
                /** Format: date-time */
                logicalDate: string;
                /** @default [] */
                succeeded: string[];
                /** @default [] */
                failed: string[];
                /** @default [] */
                skipped: string[];
                /** @default [] */
                upstreamFailed: string[];
                /** @default [] */
                cancelled: string[];
                marked?: string[];
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AlertRaised";
            data: {
                alertId: string;
                /** @enum {string} */
                kind: "task_failed" | "needs_operator" | "run_failed" | "deadline_at_risk" | "deadline_missed" | "deadline_met_late";
                task?: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                };
                workflow?: string;
                runId?: string;
                /** Format: date-time */
                logicalDate?: string;
                reason: string;
                sinks: {
                    /**
                     * @default [
                     *       "task_failed",
                     *       "needs_operator",
                     *       "run_failed",
                     *       "deadline_at_risk",
                     *       "deadline_missed",
                     *       "deadline_met_late"
                     *     ]
                     */
                    on: ("task_failed" | "needs_operator" | "run_failed" | "deadline_at_risk" | "deadline_missed" | "deadline_met_late")[];
                    command?: string;
                    http?: {
                        url: string;
                        /**
                         * @default POST
                         * @enum {string}
                         */
                        method: "POST" | "PUT" | "GET";
                        /** @default {} */
                        headers: {
                            [key: string]: string;
                        };
                        body?: string;
                    };
                    /** @default 10000 */
                    timeoutMs: number;
                }[];
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AlertDelivered";
            data: {
                alertId: string;
                sink: number;
                attempt: number;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AlertDeliveryFailed";
            data: {
                alertId: string;
                sink: number;
                attempt: number;
                error: string;
                /** Format: date-time */
                retryAt?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "ConnectionDeclared";
            data: {
                spec: {
                    name: string;
                    /** @default [] */
                    operators: ("shell" | "http" | "node" | "python" | "noop")[];
                    /** @default 16 */
                    maxParallelism: number;
                    /** @default {} */
                    config: {
                        [key: string]: unknown;
                    };
                    secrets?: {
                        [key: string]: {
                            env?: string;
                            file?: string;
                            command?: string;
                        };
                    };
                };
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "ConnectionSlotsTaken";
            data: {
                connection: string;
                attempts: {
                    stream: string;
                    attempt: number;
                    token: string;
                }[];
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "WorkflowDeclared";
            data: {
                spec: {
                    name: string;
                    project: string;
                    account: string;
                    cron?: string;
                    timezone?: string;
                    /** @default 16 */
                    maxActiveRuns: number;
                    /** @default 16 */
                    maxActiveTasks: number;
                    /**
                     * @default skip_dependents
                     * @enum {string}
                     */
                    failurePolicy: "skip_dependents" | "fail_fast";
                    /** @default {} */
                    config: {
                        [key: string]: unknown;
                    };
                    /** @default {} */
                    params: {
                        [key: string]: string;
                    };
                    /** @default [] */
                    alerts: {
                        /**
                         * @default [
                         *       "task_failed",
                         *       "needs_operator",
                         *       "run_failed",
                         *       "deadline_at_risk",
                         *       "deadline_missed",
                         *       "deadline_met_late"
                         *     ]
                         */
                        on: ("task_failed" | "needs_operator" | "run_failed" | "deadline_at_risk" | "deadline_missed" | "deadline_met_late")[];
                        command?: string;
                        http?: {
                            url: string;
                            /**
                             * @default POST
                             * @enum {string}
                             */
                            method: "POST" | "PUT" | "GET";
                            /** @default {} */
                            headers: {
                                [key: string]: string;
                            };
                            body?: string;
                        };
                        /** @default 10000 */
                        timeoutMs: number;
                    }[];
                    secrets?: {
                        [key: string]: {
                            env?: string;
                            file?: string;
                            command?: string;
                        };
                    };
                };
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "WorkflowRetired";
            data: {
                name: string;
                tasks: {
                    project: string;
                    account: string;
                    name: string;
                    /** @default ALL */
                    partition: string;
                }[];
                reason?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "WorkerConnected";
            data: {
                worker: string;
                host: string;
                queues: string[];
                capacity: number;
                version: string;
                scheduler?: string;
                token?: string;
                /** @default [] */
                running: string[];
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "WorkerDisconnected";
            data: {
                worker: string;
                reason: string;
                scheduler?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "WorkerReportRefused";
            data: {
                worker: string;
                kind: string;
                token: string;
                instanceStream?: string;
                reason: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "WorkerReportRefusalsCounted";
            data: {
                worker: string;
                count: number;
                /** Format: date-time */
                from: string;
                /** Format: date-time */
                until: string;
                reason: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AccessTokenIssued";
            data: {
                name: string;
                /** @enum {string} */
                scope: "read" | "declare" | "operate" | "admin" | "work";
                projects: string[];
                readProjects?: string[];
                queues?: string[];
                sha256: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "AccessTokenRevoked";
            data: {
                name: string;
                reason?: string;
            };
            metadata: components["schemas"]["EventMetadata"];
        } | {
            /** @example 42 */
            position: string;
            streamId: string;
            /** @example 42 */
            revision: string;
            /** @enum {string} */
            type: "Note";
            data: {
                text: string;
            } & {
                [key: string]: unknown;
            };
            metadata: components["schemas"]["EventMetadata"];
        };
        EventMetadata: {
            eventId: string;
            actor: string;
            causationId: string | null;
            correlationId: string | null;
            schemaVersion: number;
            recordedAt: string;
            prevHash: string;
            hash: string;
        };
        Attempt: {
            logicalDate: string;
            stream: string;
            attempt: number;
            token: string;
            status: string;
            budget: {
                place: number | null;
                of: number;
            };
            budgetText: string;
        } & {
            [key: string]: unknown;
        };
        Run: {
            runId: string;
            workflow: string;
            logicalDate: string;
            status: string;
            try: number;
            tasks: string[];
            summary: components["schemas"]["RunSummary"];
            blockedBy: string[];
            /** @description the ways out of its halted tasks (retry, mark), each as the CLI command */
            nextSteps: components["schemas"]["NextStep"][];
        } & {
            [key: string]: unknown;
        };
        /** @description a run's state, each task's state in it (`pending`: nothing yet in its latest try), their counts, and why it waits; every surface shows these */
        RunSummary: {
            /** @enum {string} */
            state: "running" | "success" | "failed" | "partial";
            tasks: {
                [key: string]: "success" | "failed" | "abandoned" | "upstream_failed" | "cancelled" | "skipped" | "running" | "queued" | "retry_wait" | "pending";
            };
            counts: {
                success?: number;
                failed?: number;
                abandoned?: number;
                upstream_failed?: number;
                cancelled?: number;
                skipped?: number;
                running?: number;
                queued?: number;
                retry_wait?: number;
                pending?: number;
            };
            ended: number;
            total: number;
            waiting: string[];
            text: string;
        };
        RunDetail: {
            run: {
                runId: string;
                workflow: string;
                logicalDate: string;
                status: string;
                try: number;
                tasks: string[];
                /** @description the ways out of its halted tasks (retry, mark), each as the CLI command */
                nextSteps: components["schemas"]["NextStep"][];
            } & {
                [key: string]: unknown;
            };
            summary: components["schemas"]["RunSummary"];
            blockedBy: string[];
            try: number;
            tries: ({
                try: number;
                status: string;
            } & {
                [key: string]: unknown;
            })[];
            instances: {
                task: string;
                /** @enum {string} */
                state: "success" | "failed" | "abandoned" | "upstream_failed" | "cancelled" | "skipped" | "running" | "queued" | "retry_wait" | "pending";
                kept: boolean;
                instance?: unknown;
                attempts: components["schemas"]["RunAttempt"][];
            }[];
        };
        RunAttempt: {
            attempt: number;
            token: string;
            status: string;
            budget: components["schemas"]["BudgetPlace"];
            budgetText: string;
        } & {
            [key: string]: unknown;
        };
        /** @description an attempt's place in its interval's retry budget: every attempt of the interval counts (reruns' too) except interrupted ones (place null) */
        BudgetPlace: {
            place: number | null;
            of: number;
        };
        /** @description the last event's position and hash (position -1: the log is empty) */
        LogHead: {
            position: string;
            hash: string;
        };
        VerifyResult: {
            ok: boolean;
            checked: number;
            headPosition: string;
            headHash: string;
            break: {
                position: string;
                reason: string;
            } | null;
        };
        WorkerListing: {
            connected: components["schemas"]["Worker"][];
            /** @description with all=true: the workers gone recently, the latest first */
            disconnected?: components["schemas"]["DisconnectedWorker"][];
        };
        /** @description a remote worker connected to a scheduler */
        Worker: {
            id: string;
            host: string;
            queues: string[];
            capacity: number;
            version: string;
            /** @description the scheduler it connected to */
            scheduler: string | null;
            /** @description the name of the token it connected with */
            token: string | null;
            /** @description when it connected */
            since: string;
            /** @description attempts it runs now (started on it, not ended) */
            busy: number;
            /** @description when the log last heard of it: its connection, an attempt's start, heartbeat or report */
            lastHeard: string;
            /** @description what it runs, of the projects the token may read */
            running: components["schemas"]["WorkerAttempt"][];
            /** @description attempts it runs of projects the token may not read */
            hidden: number;
        };
        /** @description an attempt a remote worker runs now */
        WorkerAttempt: {
            task: string;
            logicalDate: string;
            attempt: number;
            queue: string | null;
            startedAt: string | null;
        };
        /** @description a remote worker gone recently, and why */
        DisconnectedWorker: {
            id: string;
            host: string;
            queues: string[];
            capacity: number;
            version: string;
            /** @description the scheduler it connected to */
            scheduler: string | null;
            /** @description the name of the token it connected with */
            token: string | null;
            /** @description when it connected */
            since: string;
            until: string;
            reason: string;
        };
        WorkerRegistered: {
            protocol: number;
            session: string;
            actor: string;
            adopted: string[];
            stop: string[];
            keepaliveMs: number;
            silenceMs: number;
            outputMaxBytes: number;
            maxOutputChunk: number;
            maxReportBatch: number;
            inlineOutputMax?: number;
            /** @description the scheduler's clock as it answered (epoch ms): with the `at` of each `commands` event, the worker tells a command that came late */
            now: number;
        };
        WorkerRegistration: {
            /**
             * @description the protocol version the worker speaks
             * @example 1
             */
            protocol: number;
            id: string;
            host: string;
            queues: string[];
            capacity: number;
            /** @example chronolog 0.1.0 */
            version: string;
            /** @default [] */
            running: string[];
        };
        WorkerReportsAccepted: {
            accepted: number;
            refused: {
                kind: string;
                token: string;
                reason: string;
            }[];
            /** @description the scheduler's clock as it answered (epoch ms) */
            now: number;
        };
        WorkerReports: {
            messages: components["schemas"]["WorkerReport"][];
        };
        WorkerReport: {
            /** @enum {string} */
            kind: "started";
            token: string;
            attempt: number;
            instanceStream: string;
            workerId: string;
            at: string;
            pid: number;
            outputPath?: string;
        } | {
            /** @enum {string} */
            kind: "heartbeat";
            token: string;
            attempt: number;
            instanceStream: string;
            workerId: string;
            at: string;
        } | {
            /** @enum {string} */
            kind: "succeeded";
            token: string;
            attempt: number;
            instanceStream: string;
            workerId: string;
            at: string;
            durationMs: number;
            exitCode: number | null;
            stdoutTail: string;
            stderrTail: string;
            outputFile?: {
                path: string;
                bytes: number;
                sha256: string;
                cutBytes: number;
                error?: string;
            };
            outputRest?: {
                offset: number;
                data: string;
            };
        } | {
            /** @enum {string} */
            kind: "failed";
            token: string;
            attempt: number;
            instanceStream: string;
            workerId: string;
            at: string;
            durationMs: number;
            exitCode: number | null;
            stdoutTail: string;
            stderrTail: string;
            outputFile?: {
                path: string;
                bytes: number;
                sha256: string;
                cutBytes: number;
                error?: string;
            };
            outputRest?: {
                offset: number;
                data: string;
            };
            error: {
                /** @enum {string} */
                kind: "exit_code" | "signal" | "timeout" | "exception" | "http_status" | "lost" | "interrupted" | "unknown";
                message: string;
            };
            /** @enum {boolean} */
            neverStarted?: true;
        } | {
            /** @enum {string} */
            kind: "known";
            requestId: string;
            workerId: string;
            running: string[];
        } | {
            /** @enum {string} */
            kind: "ready";
            workerId: string;
            pid: number;
            capacity: number;
        };
        UiWhoami: {
            /** @description the token's name; null: no token (public reads) */
            name: string | null;
            /** @enum {string|null} */
            scope: "read" | "declare" | "operate" | "admin" | "work" | null;
            projects: string[];
            actor: string;
            /** @description the log's head when asked: live events follow it */
            position: string;
            /** @description the event types a browser's EventSource listens for */
            eventTypes: string[];
        };
        UiGrid: {
            rows: components["schemas"]["UiGridRow"][];
            total: number;
            page: number;
            limit: number;
            pages: number;
            projects: string[];
            workflows: string[];
            /** @example 42 */
            position: string;
        };
        UiGridRow: {
            task: string;
            project: string;
            workflow: string | null;
            /** @enum {string} */
            status: "active" | "paused" | "retired";
            /** @enum {string} */
            condition: "retired" | "paused" | "failed" | "upstream_failed" | "skipped" | "running" | "queued" | "retry_wait" | "succeeded" | "not_due" | "ended" | "catching_up" | "blocked" | "held" | "ready" | "stuck" | "unknown";
            reasons: string[];
            /** @description the most recent logical dates, newest first */
            cells: components["schemas"]["UiGridCell"][];
        };
        UiGridCell: {
            logicalDate: string;
            /**
             * @description the instance's status, or for an interval not dispatched yet where its task stands
             * @enum {string}
             */
            state: "success" | "failed" | "upstream_failed" | "skipped" | "running" | "queued" | "retry_wait" | "abandoned" | "cancelled" | "not_due" | "blocked" | "waiting" | "paused" | "held" | "ended" | "retired";
        };
        UiGraph: {
            nodes: components["schemas"]["UiGraphNode"][];
            edges: {
                from: string;
                to: string;
            }[];
            /** @example 42 */
            position: string;
        };
        UiGraphNode: {
            id: string;
            project: string;
            workflow?: string | null;
            /** @enum {string} */
            status?: "active" | "paused" | "retired";
            condition: ("retired" | "paused" | "failed" | "upstream_failed" | "skipped" | "running" | "queued" | "retry_wait" | "succeeded" | "not_due" | "ended" | "catching_up" | "blocked" | "held" | "ready" | "stuck" | "unknown") | "outside" | "missing";
            reasons: string[];
            /**
             * @description with `run`: the task's state in that run, as the run's summary gives it
             * @enum {string}
             */
            state?: "success" | "failed" | "abandoned" | "upstream_failed" | "cancelled" | "skipped" | "running" | "queued" | "retry_wait" | "pending";
            /**
             * @description a parent outside the filter, shown dimmed
             * @enum {boolean}
             */
            outside?: true;
            /**
             * @description named as a parent, never declared
             * @enum {boolean}
             */
            missing?: true;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    getHealth: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description alive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {boolean} */
                        ok: true;
                    };
                };
            };
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description ready */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        ready: boolean;
                        position: string;
                    };
                };
            };
            /** @description still catching up */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        ready: boolean;
                        position: string;
                    };
                };
            };
        };
    };
    declare: {
        parameters: {
            query?: {
                dryRun?: "true" | "false";
                revive?: "true" | "false";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @enum {number} */
                    version?: 1;
                    connections?: unknown[];
                    workflows?: unknown[];
                    tasks?: unknown[];
                };
                "application/yaml": string;
            };
        };
        responses: {
            /** @description what changed (or would, with dryRun) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeclareOutcome"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (413) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (415) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listConnections: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description connections */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        /** @default [] */
                        operators: ("shell" | "http" | "node" | "python" | "noop")[];
                        /** @default 16 */
                        maxParallelism: number;
                        /** @default {} */
                        config: {
                            [key: string]: unknown;
                        };
                        secrets?: {
                            [key: string]: {
                                env?: string;
                                file?: string;
                                command?: string;
                            };
                        };
                    }[];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listWorkflows: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description workflows */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        name: string;
                        project: string;
                        account: string;
                        cron?: string;
                        timezone?: string;
                        /** @default 16 */
                        maxActiveRuns: number;
                        /** @default 16 */
                        maxActiveTasks: number;
                        /**
                         * @default skip_dependents
                         * @enum {string}
                         */
                        failurePolicy: "skip_dependents" | "fail_fast";
                        /** @default {} */
                        config: {
                            [key: string]: unknown;
                        };
                        /** @default {} */
                        params: {
                            [key: string]: string;
                        };
                        /** @default [] */
                        alerts: {
                            /**
                             * @default [
                             *       "task_failed",
                             *       "needs_operator",
                             *       "run_failed",
                             *       "deadline_at_risk",
                             *       "deadline_missed",
                             *       "deadline_met_late"
                             *     ]
                             */
                            on: ("task_failed" | "needs_operator" | "run_failed" | "deadline_at_risk" | "deadline_missed" | "deadline_met_late")[];
                            command?: string;
                            http?: {
                                url: string;
                                /**
                                 * @default POST
                                 * @enum {string}
                                 */
                                method: "POST" | "PUT" | "GET";
                                /** @default {} */
                                headers: {
                                    [key: string]: string;
                                };
                                body?: string;
                            };
                            /** @default 10000 */
                            timeoutMs: number;
                        }[];
                        secrets?: {
                            [key: string]: {
                                env?: string;
                                file?: string;
                                command?: string;
                            };
                        };
                    }[];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    retireWorkflow: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the workflow's name */
                name: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description the workflow and the tasks retired with it */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Written"] & ({
                        workflow: string;
                        tasks: string[];
                    } & {
                        [key: string]: unknown;
                    });
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listTasks: {
        parameters: {
            query?: {
                /** @description the state as of this log position */
                at?: string;
                project?: string;
                status?: "active" | "paused" | "retired";
                /** @description as `why` says it: running, blocked, ... */
                condition?: string;
                /** @description the `next` of the previous page */
                cursor?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description a page of tasks */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskPage"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getTask: {
        parameters: {
            query?: {
                /** @description the state as of this log position */
                at?: string;
            };
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the task */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TaskDetail"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    pauseTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description done */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Written"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    resumeTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description done */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Written"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    retireTask: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description done */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Written"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    retryInterval: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    /** @description the interval (default: the one the task stands at) */
                    interval?: string;
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description retried */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IntervalAction"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    markInterval: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @description the interval (default: the one the task stands at) */
                    interval?: string;
                    /** @enum {string} */
                    outcome: "success" | "skipped";
                    reason: string;
                };
            };
        };
        responses: {
            /** @description marked */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IntervalAction"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    reportInterval: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
                /** @description the interval: an instant, or a day (the interval that starts on it in the task's zone) */
                date: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /** @enum {string} */
                    outcome: "succeeded" | "failed";
                    /** @description why it failed (required for a failure), or a note on a success */
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description recorded, held, or already so (nothing written) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["IntervalReport"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getTaskHistory: {
        parameters: {
            query?: {
                /** @description the state as of this log position */
                at?: string;
            };
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecordedEvent"][];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listTaskAttempts: {
        parameters: {
            query?: {
                /** @description the state as of this log position */
                at?: string;
            };
            header?: never;
            path: {
                /** @description the task key `project/account/name[/partition]`, URL-encoded (slashes as %2F) */
                key: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description attempts */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Attempt"][];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getAttemptOutput: {
        parameters: {
            query?: {
                follow?: "true" | "false";
            };
            header?: never;
            path: {
                token: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the output */
            200: {
                headers: {
                    "Chronolog-Attempt-Status": string;
                    "Chronolog-Output-Check": "ok" | "changed" | "unchecked" | "running";
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (429) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    abandonAttempt: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                token: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    retry?: boolean;
                    reason?: string;
                };
            };
        };
        responses: {
            /** @description abandoned */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Written"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listRuns: {
        parameters: {
            query?: {
                /** @description the state as of this log position */
                at?: string;
                workflow?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description runs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Run"][];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getRun: {
        parameters: {
            query?: {
                /** @description the state as of this log position */
                at?: string;
                wait?: string;
                try?: number;
            };
            header?: never;
            path: {
                /** @description run id `WORKFLOW@LOGICAL_DATE`, URL-encoded */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the run */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunDetail"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getCriticalPath: {
        parameters: {
            query?: {
                /** @description the state as of this log position */
                at?: string;
                try?: number;
            };
            header?: never;
            path: {
                /** @description run id `WORKFLOW@LOGICAL_DATE`, URL-encoded */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the critical path */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    triggerRun: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                name: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    logicalDate?: string;
                    params?: {
                        [key: string]: string;
                    };
                    dryRun?: boolean;
                };
            };
        };
        responses: {
            /** @description the run started (or, dry, to start): its try, tasks and interval */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    rerun: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description run id `WORKFLOW@LOGICAL_DATE`, URL-encoded */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": {
                    failedOnly?: boolean;
                    dryRun?: boolean;
                };
            };
        };
        responses: {
            /** @description the run's new try: the tasks rerun and kept */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    backfill: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    task: string;
                    from: string;
                    to: string;
                    downstream?: boolean;
                    force?: boolean;
                    priority?: number;
                    dryRun?: boolean;
                };
            };
        };
        responses: {
            /** @description the plan: every task reset (its range, notes, the pending backfill it joins) or skipped */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (415) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    cancelBackfill: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    reason?: string;
                    dryRun?: boolean;
                };
            };
        };
        responses: {
            /** @description the cancel: every task with where it returns to, and the runs' intervals closed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (415) */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (422) */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getBackfill: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description progress */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": unknown;
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    readLog: {
        parameters: {
            query?: {
                from?: string;
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description a page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        events: components["schemas"]["RecordedEvent"][];
                        next: string | null;
                    };
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    getLogHead: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the head */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LogHead"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    verifyLog: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VerifyResult"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    streamEvents: {
        parameters: {
            query?: {
                /** @description first position (default: the head's next) */
                from?: string;
            };
            header?: {
                "last-event-id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (429) */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    listWorkers: {
        parameters: {
            query?: {
                /** @description the state as of this log position */
                at?: string;
                /** @description true: also the workers gone recently, with why */
                all?: "true" | "false";
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the workers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkerListing"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    registerWorker: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WorkerRegistration"];
            };
        };
        responses: {
            /** @description registered: the session, and which announced attempts are adopted or to stop */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkerRegistered"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (503) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    streamWorkerCommands: {
        parameters: {
            query?: never;
            header: {
                /** @description the session its registration gave */
                "chronolog-session": string;
            };
            path: {
                /** @description the worker's id (letters, digits, _, ., : and -) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (503) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    postWorkerReports: {
        parameters: {
            query?: never;
            header: {
                /** @description the session its registration gave */
                "chronolog-session": string;
            };
            path: {
                /** @description the worker's id (letters, digits, _, ., : and -) */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["WorkerReports"];
            };
        };
        responses: {
            /** @description every report accepted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["WorkerReportsAccepted"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (503) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    putWorkerOutput: {
        parameters: {
            query: {
                offset: string;
            };
            header: {
                /** @description the session its registration gave */
                "chronolog-session": string;
            };
            path: {
                /** @description the worker's id (letters, digits, _, ., : and -) */
                id: string;
                token: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/octet-stream": string;
            };
        };
        responses: {
            /** @description kept: the output's size here now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        bytes: number;
                    };
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (413) */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (503) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    unregisterWorker: {
        parameters: {
            query?: never;
            header: {
                /** @description the session its registration gave */
                "chronolog-session": string;
            };
            path: {
                /** @description the worker's id (letters, digits, _, ., : and -) */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description gone */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {boolean} */
                        ok: true;
                    };
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (409) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (503) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    uiWhoami: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description the token */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UiWhoami"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    uiGrid: {
        parameters: {
            query?: {
                project?: string;
                workflow?: string;
                /** @description only rows whose newest cell is in this state */
                state?: string;
                /** @description from 0 */
                page?: string;
                /** @description rows a page, at most 500 (default 100) */
                limit?: string;
                /** @description the state as of this log position */
                at?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description a page of the grid */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UiGrid"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
    uiGraph: {
        parameters: {
            query?: {
                project?: string;
                workflow?: string;
                /** @description the tasks of this run, coloured by their state in it */
                run?: string;
                /** @description the state as of this log position */
                at?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description nodes and edges */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UiGraph"];
                };
            };
            /** @description problem (400) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (401) */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (403) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description problem (404) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
        };
    };
}
