"""Every client call against a real Chronolog: ``chronolog up`` (its scheduler, a worker and
the HTTP API) on a loopback port, with a data directory of its own."""

from __future__ import annotations

import unittest
from datetime import datetime, timedelta, timezone

from chronolog import (
    AuthenticationError,
    Client,
    NotFoundError,
    PermissionDeniedError,
    RunFailedError,
    StateError,
    Task,
    ValidationError,
    Workflow,
    noop,
    python,
    run_status,
)
from tests.server import Chronolog


def day(offset: int) -> str:
    """A UTC day `offset` days from today, as YYYY-MM-DD."""
    return (datetime.now(timezone.utc) + timedelta(days=offset)).strftime("%Y-%m-%d")


def midnight(offset: int) -> datetime:
    d = datetime.now(timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    return d + timedelta(days=offset)


def etl_workflow(name: str) -> Workflow:
    """Two tasks, extract and load, starting in the future: only triggered runs run, so no
    scheduled one stands in a test's way (a run may be triggered before the start date)."""
    etl = Workflow(
        name,
        project="sales",
        account="acme",
        cron="0 2 * * *",
        start_date=midnight(20),
        params={"mode": "full"},
    )
    etl.shell(f"{name}_extract", "echo extract {{ params.mode }}")
    etl.noop(f"{name}_load", parents=[f"{name}_extract"])
    return etl


class ClientTest(unittest.TestCase):
    server: Chronolog
    admin: Client
    url: str
    tokens: dict[str, str]

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Chronolog("client")
        try:
            cls.tokens = {
                "admin": cls.server.token("admin", "admin"),
                "reader": cls.server.token("reader", "read"),
                "ci": cls.server.token("ci-sales", "declare", "sales"),
            }
            cls.url = cls.server.start()
        except BaseException:
            cls.server.stop()
            raise
        cls.admin = Client(cls.url, cls.tokens["admin"], timeout=60)
        cls.admin.declare([etl_workflow(n) for n in ("py_etl", "py_rerun", "py_backfill")])

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    # -- declaring ------------------------------------------------------------------------------

    def test_declare_dry_run_shows_what_would_change_and_writes_nothing(self) -> None:
        wf = Workflow("py_dry", project="sales", account="acme", cron="0 4 * * *", start_date=midnight(2))
        wf.noop("only")
        dry = self.admin.declare(wf, dry_run=True)
        self.assertTrue(dry["dryRun"])
        self.assertEqual([(t["task"], t["outcome"]) for t in dry["tasks"]], [("sales/acme/only/ALL", "declared")])
        with self.assertRaises(NotFoundError):
            self.admin.task("sales/acme/only/ALL")
        done = self.admin.declare([wf.to_document()])
        self.assertFalse(done["dryRun"])
        self.assertEqual([w["outcome"] for w in done["workflows"]], ["declared"])
        self.assertEqual(self.admin.task("sales/acme/only/ALL")["task"]["spec"]["workflow"], "py_dry")
        # JSON text is declared as it is; a change is shown field by field.
        wf.fields["cron"] = "0 5 * * *"
        import json

        again = self.admin.declare(json.dumps(wf.to_document()), dry_run=True)
        self.assertEqual(again["tasks"][0]["outcome"], "changed")
        self.assertIn({"field": "cron", "from": "0 4 * * *", "to": "0 5 * * *"}, again["tasks"][0]["changes"])

    def test_tasks_are_read_page_by_page_in_key_order(self) -> None:
        names = [f"page_{i:02d}" for i in range(7)]
        self.admin.declare(
            [
                Task(n, noop(), project="paged", account="acme", cron="0 0 * * *", start_date=midnight(30))
                for n in names
            ]
        )
        first = self.admin.tasks_page(project="paged", limit=3)
        self.assertEqual([t["task"] for t in first["items"]], [f"paged/acme/{n}/ALL" for n in names[:3]])
        self.assertTrue(first["next"])
        keys = [t["task"] for t in self.admin.tasks(project="paged", page_size=3)]
        self.assertEqual(keys, [f"paged/acme/{n}/ALL" for n in names])

    def test_task_why_and_history(self) -> None:
        key = "sales/acme/py_etl_extract/ALL"
        t = self.admin.task(key)
        self.assertEqual(t["task"]["spec"]["operator"], {"type": "shell", "command": "echo extract {{ params.mode }}", "env": {}})
        why = self.admin.why(key)
        self.assertEqual(set(why), {"task", "condition", "reasons", "decision", "nextSteps"})
        self.assertIsInstance(why["condition"], str)
        self.assertEqual(why["condition"], t["condition"])
        history = self.admin.history(key)
        self.assertEqual(history[0]["type"], "TaskDeclared")
        self.assertEqual(history[0]["metadata"]["actor"], "api:admin")
        self.assertEqual([int(e["position"]) for e in history], sorted(int(e["position"]) for e in history))

    # -- runs -----------------------------------------------------------------------------------

    def test_trigger_with_params_then_wait_for_the_run(self) -> None:
        started = self.admin.trigger("py_etl", logical_date=day(-3), params={"mode": "quick"})
        run_id = started["runId"]
        self.assertEqual(started["tasks"], ["sales/acme/py_etl_extract/ALL", "sales/acme/py_etl_load/ALL"])
        self.assertEqual(started["params"], {"mode": "quick"})
        view = self.admin.wait(run_id, timeout=120)
        self.assertEqual(run_status(view), "success")
        attempts = self.admin.attempts("sales/acme/py_etl_extract/ALL")
        mine = [a for a in attempts if a.get("logicalDate", "").startswith(day(-3))]
        self.assertTrue(mine, attempts)
        self.assertIn("extract quick", self.admin.output(mine[-1]["token"]))

    def test_a_failed_run_raises_when_waited_for(self) -> None:
        wf = Workflow("py_fails", project="sales", account="acme", cron="0 2 * * *", start_date=midnight(20))
        wf.shell("breaks", "echo broken; exit 3")
        self.admin.declare(wf)
        run_id = self.admin.trigger("py_fails", logical_date=day(-4))["runId"]
        with self.assertRaises(RunFailedError) as caught:
            self.admin.wait(run_id, timeout=120)
        self.assertEqual(run_status(caught.exception.run), "failed")
        self.assertEqual(run_status(self.admin.wait(run_id, timeout=60, check=False)), "failed")

    def test_rerun_a_finished_run_as_a_new_try(self) -> None:
        run_id = self.admin.trigger("py_rerun", logical_date=day(-5))["runId"]
        self.admin.wait(run_id, timeout=120)
        plan = self.admin.rerun(run_id, dry_run=True)
        self.assertEqual(len(self.admin.run(run_id)["tries"]), 1)
        again = self.admin.rerun(run_id)
        self.assertEqual(again["try"], plan["try"])
        self.assertEqual(again["try"], 2)
        view = self.admin.wait(run_id, timeout=120)
        self.assertEqual(run_status(view), "success")
        self.assertEqual(len(view["tries"]), 2)

    def test_backfill_and_its_progress(self) -> None:
        key = "sales/acme/py_backfill_extract/ALL"
        # Before the tasks' start date: refused, unless forced.
        with self.assertRaises(ValidationError) as early:
            self.admin.backfill(key, day(-6), day(-6), dry_run=True)
        self.assertIn("startDate", early.exception.detail)
        dry = self.admin.backfill(key, day(-6), day(-6), dry_run=True, force=True)
        self.assertEqual([t["task"] for t in dry["targets"]], [key])
        plan = self.admin.backfill(key, day(-6), day(-6), downstream=True, force=True)
        self.assertEqual({t["task"] for t in plan["targets"]}, {key, "sales/acme/py_backfill_load/ALL"})
        status = self.admin.backfill_status(plan["backfillId"])
        self.assertIn("progress", status)

    def test_a_python_task_is_refused_by_the_schedulers_own_workers(self) -> None:
        wf = Workflow("py_on_node", project="sales", account="acme", cron="0 2 * * *", start_date=midnight(20))
        wf.add(Task("pyfn", python("tests.pipeline:load", args={"region": "eu"})))
        declared = self.admin.declare(wf)
        # Declared without a queue, with a warning that none of the scheduler's workers runs it.
        (warning,) = declared["warnings"]
        self.assertIn("a python task runs on a Python worker serving its queue", str(warning))
        run_id = self.admin.trigger("py_on_node", logical_date=day(-2))["runId"]
        self.assertEqual(run_status(self.admin.wait(run_id, timeout=120, check=False)), "failed")
        (attempt,) = self.admin.attempts("sales/acme/pyfn/ALL")
        self.assertIn("python tasks run on a Python worker (queue none declared", str(attempt))
        self.assertIn("tests.pipeline:load", str(attempt))

    # -- typed errors ---------------------------------------------------------------------------

    def test_400_carries_each_issue_with_its_path(self) -> None:
        wf = Workflow("py_bad", project="sales", account="acme", cron="0 2 * * *", start_date=midnight(1))
        wf.add(Task("bad", python("not a function reference")))
        with self.assertRaises(ValidationError) as caught:
            self.admin.declare(wf)
        e = caught.exception
        self.assertEqual((e.status, e.type, e.kind), (400, "urn:chronolog:problem:validation", "validation"))
        self.assertIn("workflows[0].tasks[0].operator.function", e.paths)
        issue = next(i for i in e.issues if i["field"] == "workflows[0].tasks[0].operator.function")
        self.assertIn("module.path:qualname", issue["message"])
        self.assertEqual(issue["file"], "<request>")
        with self.assertRaises(NotFoundError):
            self.admin.task("sales/acme/bad/ALL")
        # A dry run is refused with the same issues.
        with self.assertRaises(ValidationError) as dry:
            self.admin.declare(wf, dry_run=True)
        self.assertEqual(dry.exception.issues, e.issues)
        with self.assertRaises(ValidationError) as undeclared:
            self.admin.trigger("py_etl", params={"nope": "x"})
        self.assertIn('no param "nope"', undeclared.exception.detail)

    def test_401_without_a_token_or_with_an_unknown_one(self) -> None:
        for token in (None, "chl.nobody.secret"):
            with self.assertRaises(AuthenticationError) as caught:
                Client(self.url, token).tasks_page()
            self.assertEqual(caught.exception.status, 401)
            self.assertTrue(caught.exception.detail)

    def test_403_names_the_scope_or_the_projects(self) -> None:
        with self.assertRaises(PermissionDeniedError) as caught:
            Client(self.url, self.tokens["reader"]).trigger("py_etl")
        self.assertEqual((caught.exception.scope, caught.exception.needs), ("read", "operate"))
        other = Task("elsewhere", noop(), project="other", account="acme", cron="0 0 * * *", start_date=midnight(3))
        with self.assertRaises(PermissionDeniedError) as limited:
            Client(self.url, self.tokens["ci"]).declare(other)
        self.assertEqual(limited.exception.outside, ["other"])

    def test_404_for_what_does_not_exist(self) -> None:
        with self.assertRaises(NotFoundError) as caught:
            self.admin.task("sales/acme/nope/ALL")
        self.assertEqual(caught.exception.kind, "not_found")
        with self.assertRaises(NotFoundError):
            self.admin.trigger("no_such_workflow")

    def test_422_for_where_its_subject_stands(self) -> None:
        key = "sales/acme/py_etl_load/ALL"
        self.admin.pause(key, "for the test")
        try:
            with self.assertRaises(StateError) as caught:
                self.admin.pause(key, "again")
            self.assertEqual(caught.exception.status, 422)
        finally:
            self.admin.resume(key)


if __name__ == "__main__":
    unittest.main()
