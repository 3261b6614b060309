"""``python -m chronolog declare MODULE``, and a declaration built in Python equal to its YAML
twin: the same document, and the same declaration as the server records it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import unittest
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from chronolog import Client, ConflictError, Task, ValidationError, to_document
from tests import pipeline
from tests.server import NODE, ROOT, Chronolog

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent
#: Writers declaring one task at once, each round.
WRITERS = 6


def parse_like_the_server(text: str) -> object:
    """The YAML as the server reads a declaration (the core's own parser, run by node)."""
    script = (
        'import { parseDeclarationText } from "@chronolog/core";'
        'let text = ""; process.stdin.on("data", (c) => (text += c));'
        'process.stdin.on("end", () => { const s = parseDeclarationText(text, { filename: "twin.yaml", format: "yaml" });'
        "process.stdout.write(JSON.stringify(s.document)); });"
    )
    r = subprocess.run(
        [NODE, "--input-type=module", "-e", script], input=text, capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    if r.returncode != 0:
        raise AssertionError(r.stderr)
    return json.loads(r.stdout)


def declare_cli(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE / "src"), str(PACKAGE), *([path] if path else [])])
    env.pop("CHRONOLOG_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "chronolog", "declare", *args],
        capture_output=True,
        text=True,
        cwd=PACKAGE,
        env=env,
        timeout=120,
    )


class DeclareTest(unittest.TestCase):
    server: Chronolog
    url: str
    admin: Client
    token: str
    reader: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Chronolog("declare")
        try:
            cls.token = cls.server.token("admin", "admin")
            cls.reader = cls.server.token("reader", "read")
            cls.url = cls.server.start(("serve", "--writable"))
        except BaseException:
            cls.server.stop()
            raise
        cls.admin = Client(cls.url, cls.token)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.server.stop()

    def test_a_declaration_built_in_python_equals_its_yaml_twin(self) -> None:
        yaml = (HERE / "pipeline.yaml").read_text()
        document = to_document(pipeline.warehouse, pipeline.orders, pipeline.orders_raw)
        self.assertEqual(document, parse_like_the_server(yaml))
        declared = self.admin.declare(document)
        self.assertEqual(
            sorted((t["task"], t["outcome"]) for t in declared["tasks"]),
            [
                ("pyingest/acme/orders_raw/ALL", "declared"),
                ("pysales/acme/load/ALL", "declared"),
                ("pysales/acme/report/ALL", "declared"),
            ],
        )
        # The YAML declared over what Python declared changes nothing the server records.
        twin = self.admin.declare(yaml, format="yaml", dry_run=True)
        outcomes = {x["outcome"] for part in ("tasks", "workflows", "connections") for x in twin[part]}
        self.assertEqual(outcomes, {"unchanged"}, twin)
        spec = self.admin.task("pysales/acme/load/ALL")["task"]["spec"]
        self.assertEqual(spec["operator"]["function"], "tests.pipeline:load")
        self.assertEqual(spec["queue"], "py")
        self.assertEqual(spec["parents"], [{"project": "pyingest", "account": "acme", "name": "orders_raw", "partition": "ALL"}])

    def test_python_m_chronolog_declare_a_module(self) -> None:
        dry = declare_cli("tests.pipeline", "--url", self.url, "--token", self.token, "--dry-run")
        self.assertEqual(dry.returncode, 0, dry.stderr)
        self.assertIn("workflow py_orders_daily: would be", dry.stdout)
        self.assertIn("task pysales/acme/load/ALL: would be", dry.stdout)
        printed = declare_cli("tests.pipeline", "--print")
        self.assertEqual(json.loads(printed.stdout), to_document(pipeline.warehouse, pipeline.orders, pipeline.orders_raw))
        done = declare_cli("tests.pipeline", "--url", self.url, "--token", self.token, "--json")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertFalse(json.loads(done.stdout)["dryRun"])
        self.assertEqual(self.admin.task("pyingest/acme/orders_raw/ALL")["task"]["spec"]["cron"], "0 * * * *")

    def test_declare_says_what_went_wrong_with_the_clis_exit_codes(self) -> None:
        missing = declare_cli("tests.no_such_pipeline", "--url", self.url, "--token", self.token)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("cannot import", missing.stderr)
        empty = declare_cli("tests.server", "--url", self.url, "--token", self.token)
        self.assertEqual(empty.returncode, 2)
        self.assertIn("declares no workflow", empty.stderr)
        invalid = declare_cli("tests.bad_pipeline", "--url", self.url, "--token", self.token, "--dry-run")
        self.assertEqual(invalid.returncode, 2)
        self.assertIn("<request>: workflows[0].tasks[0].operator.function:", invalid.stderr)
        self.assertIn("module.path:qualname", invalid.stderr)
        refused = declare_cli("tests.pipeline", "--url", self.url, "--token", self.reader)
        self.assertEqual(refused.returncode, 1)
        self.assertIn("forbidden", refused.stderr)

    def test_a_module_that_fails_or_holds_what_json_cannot_carry_is_said_in_a_line(self) -> None:
        modules = tempfile.mkdtemp(prefix="chronolog-cli-modules-")
        self.addCleanup(shutil.rmtree, modules, True)
        Path(modules, "typo_pipeline.py").write_text("def broken(:\n    pass\n")
        Path(modules, "raising_pipeline.py").write_text("x = 1\nraise RuntimeError('no credentials here')\n")
        Path(modules, "set_pipeline.py").write_text(
            "from chronolog import Workflow\n"
            "wf = Workflow('sets', project='p', account='a', cron='0 2 * * *', start_date='2026-12-01T00:00:00Z', config={'x': {1}})\n"
            "wf.noop('t')\n"
        )
        for module, said in (
            ("typo_pipeline", "typo_pipeline.py, line 1: "),
            ("raising_pipeline", "raising_pipeline.py, line 2: RuntimeError: no credentials here"),
            ("set_pipeline", "the declarations hold a value JSON cannot carry: Object of type set is not JSON serializable"),
        ):
            r = declare_cli(module, "--url", self.url, "--token", self.token, "--dry-run", path=modules)
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(said, r.stderr)
            self.assertNotIn("Traceback", r.stderr)
        with self.assertRaises(ValidationError) as caught:
            self.admin.declare({"tasks": [{"project": "p", "account": "a", "name": "n", "config": {"v": float("nan")}}]})
        self.assertIn("JSON cannot carry", str(caught.exception))


    def test_409_when_writers_declare_one_task_at_once(self) -> None:
        """Declarations of one task decided on the same version: a loser is refused,
        naming the stream, and writes nothing (a `serve --writable` decides requests at once)."""
        def contested(command: str) -> dict[str, Any]:
            t = Task("contested", {"type": "shell", "command": command}, project="sales", account="acme", cron="0 0 * * *", start_date=datetime.now(timezone.utc) + timedelta(days=3))
            return t.to_document()

        self.admin.declare(contested("echo start"))
        conflicts: list[ConflictError] = []
        for round in range(40):
            barrier = threading.Barrier(WRITERS)

            def declare(doc: dict[str, Any]) -> None:
                barrier.wait()
                try:
                    self.admin.declare(doc)
                except ConflictError as e:
                    conflicts.append(e)

            docs = [contested(f"echo {round} {n}") for n in range(WRITERS)]
            threads = [threading.Thread(target=declare, args=(d,)) for d in docs]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if conflicts:
                break
        self.assertTrue(conflicts, "no round of 40 had two declarations race")
        e = conflicts[0]
        self.assertEqual((e.status, e.kind), (409, "wrong_expected_revision"))
        self.assertEqual(e.stream_id, "task-sales/acme/contested/ALL")
        self.assertIn("declared by another writer", e.detail)
        # Both revisions: the one it was decided on, and the one another writer left.
        self.assertIsNotNone(e.expected)
        self.assertIsNotNone(e.actual)
        self.assertNotEqual(e.expected, e.actual)
        self.assertTrue(str(e.actual).isdigit(), e.problem)


if __name__ == "__main__":
    unittest.main()
