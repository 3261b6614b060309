"""Following live events across cut links: a real ``chronolog serve`` behind a TCP proxy whose
connections the test closes; the follower resumes exactly after the last event it gave."""

from __future__ import annotations

import threading
import unittest
from datetime import datetime, timedelta, timezone
from urllib.parse import urlsplit

from chronolog import Client, Event, Task, TooManyRequestsError, noop
from tests.server import Chronolog, Proxy, wait_for

KEY = "follow/acme/ticker/ALL"


class FollowTest(unittest.TestCase):
    server: Chronolog
    proxy: Proxy
    admin: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.server = Chronolog("follow")
        cls.proxy = Proxy()
        try:
            token = cls.server.token("admin", "admin")
            # The proxy's address is one the server answers to (it checks every Host).
            url = cls.server.start(("serve", "--writable", "--allow-host", f"127.0.0.1:{cls.proxy.port}"))
        except BaseException:
            cls.proxy.close()
            cls.server.stop()
            raise
        parts = urlsplit(url)
        cls.proxy.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        cls.admin = Client(url, token)
        cls.through_proxy = Client(f"http://127.0.0.1:{cls.proxy.port}", token)
        start = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)
        cls.admin.declare(Task("ticker", noop(), project="follow", account="acme", cron="0 0 * * *", start_date=start))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.proxy.close()
        cls.server.stop()

    def write_events(self, n: int) -> list[int]:
        """n events: the task paused and resumed in turn; answers their positions."""
        out: list[int] = []
        for i in range(n):
            r = self.admin.pause(KEY, f"tick {i}") if i % 2 == 0 else self.admin.resume(KEY)
            out.append(int(r["position"]))
        if n % 2 == 1:
            out.append(int(self.admin.resume(KEY)["position"]))
        return out

    def test_follow_resumes_after_the_last_event_seen_when_the_link_is_cut(self) -> None:
        start = int(self.admin.head()["position"])
        follower = self.through_proxy.follow(after=start, idle_timeout=30)
        seen: list[Event] = []
        errors: list[BaseException] = []

        def consume() -> None:
            try:
                for event in follower:
                    seen.append(event)
            except BaseException as e:  # noqa: BLE001 - reported by the test
                errors.append(e)

        reader = threading.Thread(target=consume, daemon=True)
        reader.start()
        try:
            first = self.write_events(4)
            wait_for("the first events", lambda: len(seen) >= 4 and seen[-1].position >= first[-1])
            self.assertEqual(follower.reconnects, 0)
            # The link is cut, and stays down while more is written.
            self.proxy.cut()
            second = self.write_events(6)
            self.proxy.restore()
            wait_for("the events written while cut", lambda: seen and seen[-1].position >= second[-1])
            self.assertGreaterEqual(follower.reconnects, 1)
            # Once more, while events are being written.
            third: list[int] = []
            writer = threading.Thread(target=lambda: third.extend(self.write_events(20)))
            writer.start()
            wait_for("a third of them", lambda: len(seen) >= 10 + 4)
            self.proxy.cut()
            self.proxy.restore()
            writer.join()
            wait_for("the last event", lambda: seen[-1].position >= third[-1])
            # The second cut may come after the last event reached it: its reconnection follows.
            wait_for("the second reconnection", lambda: follower.reconnects >= 2)
        finally:
            follower.close()
            reader.join(30)
        self.assertEqual(errors, [])
        positions = [e.position for e in seen]
        # Nothing twice, nothing lost: exactly the log's events after `start`, in order.
        logged = [int(e["position"]) for e in self.admin.log(start + 1) if int(e["position"]) <= positions[-1]]
        self.assertEqual(positions, logged)
        self.assertTrue(set(first + second + third) <= set(positions))
        self.assertEqual(follower.position, positions[-1])
        self.assertEqual({e.type for e in seen}, {"TaskPaused", "TaskResumed"})
        self.assertTrue(all(e.stream_id == f"task-{KEY}" for e in seen))
        self.assertGreaterEqual(follower.reconnects, 2)
        self.assertGreaterEqual(self.proxy.accepted, 3)




class StreamCapTest(unittest.TestCase):
    def test_a_stream_over_the_tokens_cap_is_429_with_retry_after(self) -> None:
        server = Chronolog("caps")
        try:
            token = server.token("admin", "admin")
            client = Client(server.start(("serve", "--max-streams-per-token", "1")), token)
            with client.follow() as first:
                opened = threading.Thread(target=lambda: next(iter(first), None), daemon=True)
                opened.start()
                wait_for("the first stream to open", lambda: first.connected)
                second = client.follow(reconnect=False)
                with self.assertRaises(TooManyRequestsError) as refused:
                    next(iter(second))
                self.assertEqual(refused.exception.status, 429)
                self.assertEqual(refused.exception.retry_after, 5.0)
                self.assertTrue(refused.exception.detail)
        finally:
            server.stop()


if __name__ == "__main__":
    unittest.main()
