"""Declarations built in Python: the document they make (no server; see test_client for what
the server records of them)."""

from __future__ import annotations

import unittest
from datetime import datetime, timedelta, timezone

from chronolog import Connection, Retry, Task, Workflow, function_ref, http, noop, python, shell, to_document
from tests import pipeline


def top_level(ctx: object) -> None:
    """A function a worker can import."""


class Holder:
    @staticmethod
    def method(ctx: object) -> None:
        """A function in a class: its qualname is dotted."""


class FunctionRefTest(unittest.TestCase):
    def test_a_top_level_function_is_its_module_and_qualname(self) -> None:
        self.assertEqual(function_ref(top_level), "tests.test_declarations:top_level")
        self.assertEqual(function_ref(Holder.method), "tests.test_declarations:Holder.method")

    def test_a_nested_function_or_lambda_is_refused_naming_why(self) -> None:
        def inner(ctx: object) -> None:
            pass

        with self.assertRaisesRegex(ValueError, "defined inside a function"):
            function_ref(inner)
        with self.assertRaisesRegex(ValueError, "lambda"):
            function_ref(lambda ctx: None)

    def test_the_task_decorator_returns_the_function_as_it_is(self) -> None:
        self.assertTrue(callable(pipeline.load))
        self.assertEqual(pipeline.load.__name__, "load")
        task = pipeline.load.chronolog_task  # type: ignore[attr-defined]
        self.assertIsInstance(task, Task)
        self.assertEqual(task.key, "pysales/acme/load/ALL")


class DocumentTest(unittest.TestCase):
    def test_a_workflow_with_python_shell_http_and_noop_tasks(self) -> None:
        wf = Workflow("etl", project="p", account="a", cron="0 3 * * *", start_date=datetime(2026, 1, 2, 3, tzinfo=timezone.utc))

        wf.task("extract", queue="py", args={"n": 1}, timeout_ms=5000, retry=Retry(2))(top_level)
        wf.shell("transform", "run {{ ds }}", parents=["extract"], env={"A": "1"})
        wf.http("notify", "https://example.test/{{ ds }}", method="POST", parents=["transform"])
        wf.noop("done", parents=["notify"])
        doc = wf.to_document()
        self.assertEqual(list(doc), ["workflows"])
        (w,) = doc["workflows"]
        self.assertEqual(
            {k: v for k, v in w.items() if k != "tasks"},
            {"name": "etl", "project": "p", "account": "a", "cron": "0 3 * * *", "startDate": "2026-01-02T03:00:00Z"},
        )
        self.assertEqual(
            w["tasks"],
            [
                {
                    "name": "extract",
                    "queue": "py",
                    "retry": {"maxAttempts": 2},
                    "operator": {
                        "type": "python",
                        "function": "tests.test_declarations:top_level",
                        "args": {"n": 1},
                        "timeoutMs": 5000,
                    },
                },
                {"name": "transform", "parents": ["extract"], "operator": {"type": "shell", "command": "run {{ ds }}", "env": {"A": "1"}}},
                {"name": "notify", "parents": ["transform"], "operator": {"type": "http", "url": "https://example.test/{{ ds }}", "method": "POST"}},
                {"name": "done", "parents": ["notify"], "operator": {"type": "noop"}},
            ],
        )

    def test_operators_are_the_documents_operators(self) -> None:
        self.assertEqual(shell("x", timeout_ms=5, publish_to="/out"), {"type": "shell", "command": "x", "timeoutMs": 5, "publishTo": "/out"})
        self.assertEqual(http("u", expect_status=[202]), {"type": "http", "url": "u", "expectStatus": [202]})
        self.assertEqual(python("m.n:f", args={"a": [1]}), {"type": "python", "function": "m.n:f", "args": {"a": [1]}})
        self.assertEqual(python(top_level), {"type": "python", "function": "tests.test_declarations:top_level"})
        self.assertEqual(
            python("m:f", timeout_ms=60_000), {"type": "python", "function": "m:f", "timeoutMs": 60_000}
        )
        self.assertEqual(noop(), {"type": "noop"})

    def test_instants_need_a_zone_and_are_written_in_utc_with_z_or_their_offset(self) -> None:
        t = Task("t", noop(), project="p", account="a", cron="0 0 * * *", start_date=datetime(2026, 1, 1))
        with self.assertRaisesRegex(ValueError, "no time zone"):
            t.to_dict()
        plus2 = timezone(timedelta(hours=2))
        t = Task("t", noop(), project="p", account="a", cron="0 0 * * *", start_date=datetime(2026, 1, 1, tzinfo=plus2))
        self.assertEqual(t.to_dict()["startDate"], "2026-01-01T00:00:00+02:00")

    def test_a_sibling_parent_by_name_a_task_elsewhere_by_its_key(self) -> None:
        raw = Task("raw", noop(), project="ingest", account="acme", cron="0 * * * *", start_date="2026-01-01T00:00:00Z")
        wf = Workflow("w", project="p", account="a", cron="0 0 * * *", start_date="2026-01-01T00:00:00Z")
        first = wf.noop("first", parents=[raw])
        second = wf.noop("second", parents=[first])
        self.assertEqual(first.to_dict()["parents"], ["ingest/acme/raw/ALL"])
        self.assertEqual(second.to_dict()["parents"], ["first"])

    def test_one_document_of_many_items_in_order(self) -> None:
        c = Connection("db", max_parallelism=2)
        doc = to_document(pipeline.orders, c, pipeline.orders_raw, {"tasks": [{"name": "x"}]})
        self.assertEqual(list(doc), ["connections", "workflows", "tasks"])
        self.assertEqual(doc["connections"], [{"name": "db", "maxParallelism": 2}])
        self.assertEqual([t["name"] for t in doc["tasks"]], ["orders_raw", "x"])
        with self.assertRaisesRegex(ValueError, "belongs to workflow"):
            to_document(pipeline.load.chronolog_task)  # type: ignore[attr-defined]
        with self.assertRaisesRegex(TypeError, "cannot declare a int"):
            to_document(3)  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
