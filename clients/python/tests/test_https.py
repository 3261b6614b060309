"""An https:// server, its certificate checked against ``ca_file``: a real ``chronolog serve``
with ``--tls-cert`` and ``--tls-key`` (a self-signed certificate made by openssl)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import unittest

from chronolog import Client, TransportError
from tests.server import Chronolog


@unittest.skipIf(shutil.which("openssl") is None, "openssl is not installed: no certificate to serve")
class HttpsTest(unittest.TestCase):
    def test_the_client_checks_the_servers_certificate_against_ca_file(self) -> None:
        server = Chronolog("https")
        try:
            cert = os.path.join(server.dir, "cert.pem")
            key = os.path.join(server.dir, "key.pem")
            made = subprocess.run(
                ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                 "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out", cert],
                capture_output=True,
                text=True,
                timeout=60,
            )
            self.assertEqual(made.returncode, 0, made.stderr)
            token = server.token("reader", "read")
            url = server.start(("serve", "--tls-cert", cert, "--tls-key", key))
            self.assertTrue(url.startswith("https://127.0.0.1:"), url)
            self.assertEqual(Client(url, token, ca_file=cert).tasks_page()["items"], [])
            # Without the CA that signed it, the certificate is refused.
            with self.assertRaises(TransportError) as refused:
                Client(url, token).tasks_page()
            self.assertIn("CERTIFICATE_VERIFY_FAILED", refused.exception.detail)
            with self.assertRaisesRegex(ValueError, "ca_file is for an https"):
                Client(url.replace("https:", "http:"), token, ca_file=cert)
            # `python -m chronolog declare` takes the CA as the workers do (--ca), and by its
            # first name (--ca-file); without it, the certificate is refused there too.
            writer = server.token("writer", "declare")
            tests = os.path.dirname(os.path.abspath(__file__))
            for flag in ("--ca", "--ca-file"):
                ran = self._declare(tests, url, writer, flag, cert)
                self.assertEqual(ran.returncode, 0, ran.stderr)
                self.assertIn("task ", ran.stdout)
            refused_cli = self._declare(tests, url, writer)
            self.assertEqual(refused_cli.returncode, 1, refused_cli.stdout)
            self.assertIn("CERTIFICATE_VERIFY_FAILED", refused_cli.stderr)
        finally:
            server.stop()

    @staticmethod
    def _declare(tests: str, url: str, token: str, *ca: str) -> subprocess.CompletedProcess[str]:
        src = os.path.join(os.path.dirname(tests), "src")
        return subprocess.run(
            [sys.executable, "-m", "chronolog", "declare", "pipeline", "--url", url, "--dry-run", *ca],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tests,
            env={**os.environ, "PYTHONPATH": src, "CHRONOLOG_TOKEN": token},
        )


if __name__ == "__main__":
    unittest.main()
