"""``python -m chronolog declare MODULE...``: publishes the workflows a module declares."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import sys
import traceback
from types import ModuleType
from typing import Any, Sequence

from .client import Client
from .declarations import Connection, Declarable, Task, Workflow, to_document
from .errors import ChronologError, ConflictError, NotFoundError, StateError, TransportError, ValidationError

#: Exit codes, as the chronolog CLI's: 2 invalid input, 3 a conflict, 4 not found, 8 refused.
EXIT = {ValidationError: 2, ConflictError: 3, NotFoundError: 4, StateError: 8}


def collect(modules: Sequence[ModuleType]) -> list[Declarable]:
    """The workflows, connections and standalone tasks the modules hold at their top level (a
    package's submodules included), each once, in the order found."""
    found: list[Declarable] = []
    seen: set[int] = set()
    for module in modules:
        for value in list(vars(module).values()):
            if isinstance(value, (Workflow, Connection)) or (isinstance(value, Task) and value.workflow is None):
                if id(value) not in seen:
                    seen.add(id(value))
                    found.append(value)
    return found


def load(names: Sequence[str]) -> list[ModuleType]:
    """Imports each module, and every submodule of a package."""
    modules: list[ModuleType] = []
    for name in names:
        module = importlib.import_module(name)
        modules.append(module)
        path = getattr(module, "__path__", None)
        if path is not None:
            for info in pkgutil.walk_packages(path, prefix=f"{name}."):
                modules.append(importlib.import_module(info.name))
    return modules


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m chronolog", description="Chronolog from Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("declare", help="publish the workflows, tasks and connections modules declare")
    d.add_argument("modules", nargs="+", metavar="MODULE", help="a module or package to import (mypipeline)")
    d.add_argument("--url", default=os.environ.get("CHRONOLOG_URL", "http://127.0.0.1:8080"))
    d.add_argument("--token", default=os.environ.get("CHRONOLOG_TOKEN"), help="default: $CHRONOLOG_TOKEN")
    # --ca as the workers take it; --ca-file, its first name, still works.
    d.add_argument(
        "--ca", "--ca-file", dest="ca_file", metavar="FILE", default=None,
        help="the CA that signed an https server's certificate",
    )
    d.add_argument("--dry-run", action="store_true", help="show what would change, write nothing")
    d.add_argument("--print", action="store_true", help="print the document instead of declaring it")
    d.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    args = parser.parse_args(argv)

    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        items = collect(load(args.modules))
    except ImportError as e:
        print(f"declare: cannot import {e.name or ''}: {e}", file=sys.stderr)
        return 2
    except ValueError as e:
        print(f"declare: {e}", file=sys.stderr)
        return 2
    except SyntaxError as e:
        print(f"declare: {e.filename}, line {e.lineno}: {e.msg}", file=sys.stderr)
        return 2
    except Exception as e:  # the module's own code failed as it was imported
        print(f"declare: importing {', '.join(args.modules)} failed{_where(e)}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if not items:
        print(f"declare: {', '.join(args.modules)} declares no workflow, task or connection", file=sys.stderr)
        return 2
    document = to_document(*items)
    try:
        json.dumps(document, allow_nan=False)
    except (TypeError, ValueError) as e:
        print(f"declare: the declarations hold a value JSON cannot carry: {e}", file=sys.stderr)
        return 2
    if args.print:
        print(json.dumps(document, indent=2))
        return 0
    client = Client(args.url, args.token, ca_file=args.ca_file)
    try:
        outcome = client.declare(document, dry_run=args.dry_run)
    except ChronologError as e:
        _print_error(e)
        return 1 if isinstance(e, TransportError) else next((c for k, c in EXIT.items() if isinstance(e, k)), 1)
    if args.json:
        print(json.dumps(outcome, indent=2))
    else:
        _print_outcome(outcome)
    return 0


def _print_outcome(outcome: dict[str, Any]) -> None:
    verb = "would be " if outcome.get("dryRun") else ""
    for part, name in (("connections", "name"), ("workflows", "name"), ("tasks", "task")):
        for item in outcome.get(part) or []:
            print(f"{part[:-1]} {item.get(name)}: {verb}{item.get('outcome')}")
            for change in item.get("changes") or []:
                print(f"  {change.get('field')}: {json.dumps(change.get('from'))} -> {json.dumps(change.get('to'))}")
    for warning in outcome.get("warnings") or []:
        print(f"warning: {warning.get('message', warning) if isinstance(warning, dict) else warning}", file=sys.stderr)


def _print_error(e: ChronologError) -> None:
    print(f"declare: {e.kind}: {e.detail}", file=sys.stderr)
    if isinstance(e, ValidationError):
        for issue in e.issues:
            where = ": ".join(str(issue[k]) for k in ("file", "path") if issue.get(k))
            print(f"  {where}: {issue.get('message')}", file=sys.stderr)


def _where(error: BaseException) -> str:
    """`` at FILE, line N``: the innermost frame of the failure outside this package."""
    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(error.__traceback__) if not os.path.abspath(f.filename).startswith(here)]
    return f" at {frames[-1].filename}, line {frames[-1].lineno}" if frames else ""
