"""A real hilsim-server on loopback for the Python client's tests: ephemeral gRPC and UDP ports,
no metrics, the bundled models. HILSIM_SERVER_EXE names the executable (tests/CMakeLists.txt)."""

import os
import re
import subprocess
import tempfile
import time

import pytest

CONFIG = """listen:
  address: 127.0.0.1
  grpc_port: 0
  udp: {{enabled: true, ports: [0, 0], authentication: {authentication}}}
  metrics: {{enabled: false}}
  viewer: {{enabled: false}}
session_defaults:
  thread: {{lock_memory: false}}
"""


@pytest.fixture(scope="session")
def server():
    """The server's gRPC target, "127.0.0.1:<port>"; its UDP ports speak MAC (the default)."""
    yield from _serve("mac")


@pytest.fixture(scope="session")
def token_server():
    """A server whose UDP ports speak TOKEN (listen.udp.authentication: token)."""
    yield from _serve("token")


def _serve(authentication):
    executable = os.environ["HILSIM_SERVER_EXE"]
    with tempfile.TemporaryDirectory() as directory:
        config = os.path.join(directory, "server.yaml")
        with open(config, "w") as f:
            f.write(CONFIG.format(authentication=authentication))
        log_path = os.path.join(directory, "server.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen([executable, "--config", config], stdout=log,
                                       stderr=subprocess.STDOUT)
        try:
            target = None
            deadline = time.monotonic() + 20.0
            while target is None and time.monotonic() < deadline:
                with open(log_path) as log:
                    found = re.search(r"listening: gRPC (127\.0\.0\.1:\d+)", log.read())
                if found:
                    target = found.group(1)
                elif process.poll() is not None:
                    break
                else:
                    time.sleep(0.05)
            if target is None:
                with open(log_path) as log:
                    pytest.fail("hilsim-server did not start:\n" + log.read())
            yield target
        finally:
            process.terminate()
            process.wait(timeout=10)
