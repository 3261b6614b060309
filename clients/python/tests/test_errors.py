"""The typed error chosen for each status, and the problem fields each one reads."""

from __future__ import annotations

import unittest

from chronolog import (
    AuthenticationError,
    ChronologError,
    ConflictError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    ServerError,
    StateError,
    TooManyRequestsError,
    UnavailableError,
    UnsupportedMediaTypeError,
    ValidationError,
)
from chronolog.errors import error_for


class ErrorForTest(unittest.TestCase):
    def test_each_status_has_its_class_and_every_one_is_a_chronolog_error(self) -> None:
        classes = {
            400: ValidationError,
            401: AuthenticationError,
            403: PermissionDeniedError,
            404: NotFoundError,
            409: ConflictError,
            413: PayloadTooLargeError,
            415: UnsupportedMediaTypeError,
            422: StateError,
            429: TooManyRequestsError,
            503: UnavailableError,
            500: ServerError,
            418: ServerError,
        }
        for status, cls in classes.items():
            e = error_for(status, {"type": "urn:chronolog:problem:x", "title": "T", "detail": f"d{status}"})
            self.assertIs(type(e), cls)
            self.assertIsInstance(e, ChronologError)
            self.assertEqual((e.status, e.kind, e.title, e.detail), (status, "x", "T", f"d{status}"))
            self.assertEqual(str(e), f"{status} x: d{status}")

    def test_a_conflict_reads_both_revisions_or_those_of_its_last_conflict(self) -> None:
        e = error_for(409, {"type": "t", "streamId": "task-p/a/t/ALL", "expected": "no_stream", "actual": "0"})
        assert isinstance(e, ConflictError)
        self.assertEqual((e.stream_id, e.expected, e.actual), ("task-p/a/t/ALL", "no_stream", "0"))
        exhausted = error_for(409, {"command": "pause", "tries": 5, "last": {"streamId": "s", "expected": "3", "actual": "4"}})
        assert isinstance(exhausted, ConflictError)
        self.assertEqual((exhausted.stream_id, exhausted.expected, exhausted.actual), ("s", "3", "4"))
        self.assertEqual(exhausted.fields["tries"], 5)

    def test_a_declarations_issues_keep_their_file_and_field_apart(self) -> None:
        e = error_for(
            400,
            {
                "issues": [
                    {"path": "<request>: tasks[0].cron", "message": "bad cron"},
                    {"path": "--logical-date", "message": "not a date"},
                ]
            },
        )
        assert isinstance(e, ValidationError)
        self.assertEqual(e.paths, ["tasks[0].cron", "--logical-date"])
        self.assertEqual(e.issues[0]["file"], "<request>")
        self.assertNotIn("file", e.issues[1])

    def test_retry_after_comes_from_the_header_when_the_document_has_none(self) -> None:
        e = error_for(429, {"detail": "too many streams"}, retry_after="5")
        assert isinstance(e, TooManyRequestsError)
        self.assertEqual(e.retry_after, 5.0)
        self.assertEqual(e.detail, "too many streams")


if __name__ == "__main__":
    unittest.main()
