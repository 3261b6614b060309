"""The scheduler's clock as the Python worker knows it, and when a run came too late to start."""

from __future__ import annotations

import unittest

from chronolog.worker.clock import SchedulerClock, late_run


class SchedulerClockTest(unittest.TestCase):
    def test_the_latest_answer_advanced_by_the_workers_clock_nothing_before_one(self) -> None:
        local = [1_000.0]
        clock = SchedulerClock(lambda: local[0])
        self.assertEqual(clock.since(5_000_000), 0.0)
        clock.heard(5_000_000)
        local[0] += 700
        self.assertEqual(clock.since(5_000_000), 700.0)
        self.assertEqual(clock.since(4_999_000), 1_700.0)
        self.assertEqual(clock.since(5_000_900), 0.0, "queued after the answer: not late")
        self.assertEqual(clock.since(None), 0.0)
        clock.heard(None)
        clock.heard("5000000")
        clock.heard(True)
        self.assertEqual(clock.since(5_000_000), 700.0)

    def test_keeps_the_fastest_reading_for_a_minute_then_the_latest(self) -> None:
        local = [0.0]
        clock = SchedulerClock(lambda: local[0])
        clock.heard(10_000)
        local[0] = 1_000.0
        clock.heard(10_700)  # read 300 ms after it was stamped: the reading before stays
        self.assertEqual(clock.since(10_000), 1_000.0)
        local[0] = 61_001.0
        clock.heard(70_700)  # a minute on, taken all the same
        self.assertEqual(clock.since(70_700), 0.0)

    def test_a_registrations_reading_replaces_a_higher_one_the_scheduler_may_have_restarted(self) -> None:
        local = [0.0]
        clock = SchedulerClock(lambda: local[0])
        clock.heard(10_000)
        local[0] = 1_000.0
        clock.registered(-49_000)  # restarted with its wall clock set back a minute
        self.assertEqual(clock.since(-49_000), 0.0)
        local[0] = 2_000.0
        self.assertEqual(clock.since(-49_000), 1_000.0)

    def test_a_reading_or_a_stamp_that_is_not_a_finite_number_says_nothing(self) -> None:
        local = [0.0]
        clock = SchedulerClock(lambda: local[0])
        clock.heard(10_000)
        clock.heard(float("inf"))
        clock.heard(float("nan"))
        self.assertEqual(clock.since(10_000), 0.0)
        self.assertEqual(clock.since(float("-inf")), 0.0)
        self.assertEqual(clock.since(float("nan")), 0.0)


class LateRunTest(unittest.TestCase):
    def test_late_from_a_quarter_of_its_lease_unless_it_waits_for_its_start_permission(self) -> None:
        run = {"kind": "run", "token": "t", "leaseSeconds": 6, "awaitProceed": False}
        self.assertFalse(late_run(run, 1_499))
        self.assertTrue(late_run(run, 1_500))
        self.assertFalse(late_run({**run, "awaitProceed": True}, 60_000))

    def test_a_run_without_a_usable_lease_is_judged_by_the_default_of_30_s(self) -> None:
        for lease in (None, "6", float("nan"), 0, -1, True):
            run = {"kind": "run", "token": "t", "leaseSeconds": lease}
            self.assertFalse(late_run(run, 7_499), lease)
            self.assertTrue(late_run(run, 7_500), lease)


if __name__ == "__main__":
    unittest.main()
