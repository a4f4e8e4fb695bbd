"""The 1 kHz path: one session's UDP port (udp.proto), as the C++ hilsim::client::UdpController.
Each datagram is a UdpCommand (the session's 16-byte token and a Command); the server answers
with UdpState datagrams from the same port."""

from __future__ import annotations

import dataclasses
import select
import socket
import time
from typing import Optional, Sequence

import numpy as np

from hilsim.client import State, _wrench
from hilsim.v1 import control_pb2, udp_pb2

_MAX_DATAGRAM = 65_536


@dataclasses.dataclass
class UdpStats:
    sent: int = 0            # datagrams handed to the kernel (commands and syncs)
    send_errors: int = 0     # datagrams the kernel refused
    received: int = 0        # States returned by receive()
    parse_errors: int = 0    # datagrams that were not a UdpState carrying a State
    receive_errors: int = 0  # socket errors while receiving (e.g. ICMP port unreachable)
    timeouts: int = 0        # receive() calls that returned None


class UdpController:
    """A UDP socket connected to a session's port: only that port's datagrams are read.
    `token`: CreateSessionResponse.udp_token (16 bytes). Sequence numbers start at 1 and grow by
    one per datagram, as the server requires of one source address and port."""

    def __init__(self, host: str, port: int, session_id: int, token: bytes):
        if len(token) != 16:
            raise ValueError(f"token: {len(token)} bytes, expected 16")
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._socket.connect(address)
        self._session_id = session_id
        self._token = bytes(token)
        self._sequence = 0
        self.stats = UdpStats()

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> "UdpController":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, tau: list[float], steps: int, base_wrench: list[float] = []) -> int:
        self._sequence += 1
        datagram = udp_pb2.UdpCommand(
            token=self._token,
            command=control_pb2.Command(
                session_id=self._session_id,
                sequence=self._sequence,
                client_send_time_ns=time.monotonic_ns(),  # CLOCK_MONOTONIC, as the server's
                tau=tau,
                steps=steps,
                base_wrench=base_wrench,
            ),
        ).SerializeToString()
        try:
            self._socket.send(datagram)
        except OSError:
            self.stats.send_errors += 1
            return 0
        self.stats.sent += 1
        return self._sequence

    def sync(self, steps: int = 0) -> int:
        """A command without torques: the server answers at once with its newest State and
        makes this socket its peer (LOCKSTEP: after `steps` cycles). Returns the sequence, or 0
        when the kernel refused the datagram."""
        return self._send([], steps)

    def send(self, tau: Sequence[float] | np.ndarray, steps: int = 0,
             base_wrench: Optional[Sequence[float] | np.ndarray] = None) -> int:
        """Joint forces (nv values, v order [N·m, N]) for the next cycle (LOCKSTEP: `steps`
        cycles), and optionally a push on a floating base while they apply (force in the world
        frame [N], then torque [N·m]). Returns the sequence the answering State echoes, or 0 as
        for sync()."""
        values = np.asarray(tau, dtype=float).ravel()
        if not np.all(np.isfinite(values)):
            raise ValueError("tau: every value must be finite")
        return self._send(values.tolist(), steps, _wrench(base_wrench))

    def receive(self, timeout: float = 0.02) -> Optional[State]:
        """The next State from the session, or None when none arrived within `timeout` seconds.
        A datagram that is not a UdpState is counted and skipped."""
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0.0:
                self.stats.timeouts += 1
                return None
            # select() waits to the microsecond; a socket timeout (poll) rounds up to the next
            # millisecond, a whole control period at 1 kHz
            try:
                readable, _, _ = select.select([self._socket], [], [], remaining)
            except OSError:
                self.stats.receive_errors += 1
                return None
            if not readable:
                self.stats.timeouts += 1
                return None
            try:
                datagram = self._socket.recv(_MAX_DATAGRAM)
            except OSError:  # e.g. ICMP port unreachable reported on the next read
                self.stats.receive_errors += 1
                continue
            message = udp_pb2.UdpState()
            try:
                message.ParseFromString(datagram)
            except Exception:  # protobuf's DecodeError: any malformed datagram
                self.stats.parse_errors += 1
                continue
            if not message.HasField("state"):
                self.stats.parse_errors += 1
                continue
            self.stats.received += 1
            return State.from_proto(message.state)
