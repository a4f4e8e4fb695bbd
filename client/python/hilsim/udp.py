"""The 1 kHz path: one session's UDP port (udp.proto), as the C++ hilsim::client::UdpController.
Under MAC (the server's default) each datagram, both ways, is a frame tagged with the session's
32-byte key (docs/PROTOCOL.md, "Authentication"); under TOKEN (a compatibility option of the
server) a plain UdpCommand carrying the session's 16-byte token. The server answers with UdpState
datagrams from the same port."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import select
import socket
import struct
import time
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np

from hilsim.client import State, _set_points, _wrench
from hilsim.v1 import control_pb2, udp_pb2

if TYPE_CHECKING:
    from hilsim.client import CreatedSession

_MAX_DATAGRAM = 65_536

# The frame (proto/udp_frame.h): magic[4] | counter u64 little-endian | payload | tag[16], the tag
# BLAKE2b-128 keyed with the session key over everything before it.
COMMAND_MAGIC = b"HSC1"
STATE_MAGIC = b"HSS1"
KEY_BYTES = 32
TAG_BYTES = 16
_HEADER = struct.Struct("<4sQ")


def frame_tag(key: bytes, data: bytes) -> bytes:
    """BLAKE2b-128 of `data` keyed with `key`: libsodium's crypto_generichash(16, data, key)."""
    return hashlib.blake2b(data, key=key, digest_size=TAG_BYTES).digest()


def seal(key: bytes, magic: bytes, counter: int, payload: bytes) -> bytes:
    """A frame around `payload` (magic COMMAND_MAGIC or STATE_MAGIC)."""
    head = _HEADER.pack(magic, counter) + payload
    return head + frame_tag(key, head)


def open_frame(key: bytes, magic: bytes, frame: bytes) -> Optional[tuple[int, bytes]]:
    """(counter, payload) of an authentic frame of that magic; None for anything else. The tag is
    compared in constant time before anything else is read."""
    if len(frame) < _HEADER.size + TAG_BYTES or frame[:4] != magic:
        return None
    if not hmac.compare_digest(frame_tag(key, frame[:-TAG_BYTES]), frame[-TAG_BYTES:]):
        return None
    _, counter = _HEADER.unpack_from(frame)
    return counter, frame[_HEADER.size:-TAG_BYTES]


@dataclasses.dataclass
class UdpStats:
    sent: int = 0            # datagrams handed to the kernel (commands and syncs)
    send_errors: int = 0     # datagrams the kernel refused
    received: int = 0        # States returned by receive()
    parse_errors: int = 0    # datagrams that were not a UdpState carrying a State
    unauthenticated: int = 0  # MAC: not a state frame with the session key's tag
    replayed: int = 0        # MAC: authentic states whose counter was not above the newest taken
    receive_errors: int = 0  # socket errors while receiving (e.g. ICMP port unreachable)
    timeouts: int = 0        # receive() calls that returned None


class UdpController:
    """A UDP socket connected to a session's port: only that port's datagrams are read.
    Give `key` (CreateSessionResponse.udp_key, 32 bytes: MAC) or `token` (udp_token, 16 bytes:
    TOKEN); `for_session` picks the one CreateSession returned. Sequence numbers start at
    `first_sequence` and grow by one per datagram; by default 1 under TOKEN, and under MAC
    CLOCK_REALTIME in microseconds, so that a controller restarted with the same key continues
    above the counters it used before (the server accepts only counters above the newest)."""

    def __init__(self, host: str, port: int, session_id: int, token: bytes = b"", *,
                 key: bytes = b"", first_sequence: Optional[int] = None):
        if bool(token) == bool(key):
            raise ValueError("give the session's key (MAC) or its token (TOKEN), one of them")
        if key and len(key) != KEY_BYTES:
            raise ValueError(f"key: {len(key)} bytes, expected {KEY_BYTES}")
        if token and len(token) != 16:
            raise ValueError(f"token: {len(token)} bytes, expected 16")
        if first_sequence is None:
            first_sequence = time.time_ns() // 1000 if key else 1
        if not 1 <= first_sequence < 2**64:
            raise ValueError(f"first_sequence: {first_sequence}, expected 1 … 2^64 − 1")
        family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_DGRAM)[0]
        self._socket = socket.socket(family, socket.SOCK_DGRAM)
        self._socket.connect(address)
        self._session_id = session_id
        self._token = bytes(token)
        self._key = bytes(key)
        self._sequence = first_sequence - 1
        self._newest_state = 0  # MAC: the counter of the newest state taken
        self.last_datagram = b""
        self.stats = UdpStats()

    @classmethod
    def for_session(cls, host: str, created: "CreatedSession",
                    first_sequence: Optional[int] = None) -> "UdpController":
        """A controller for a session SimulationClient.create_session made: its port, and its key
        or token, whichever the server handed out."""
        return cls(host, created.udp_port, created.session_id, created.udp_token,
                   key=created.udp_key, first_sequence=first_sequence)

    @property
    def authenticated(self) -> bool:
        """Whether datagrams are MAC frames (else TOKEN)."""
        return bool(self._key)

    @property
    def next_sequence(self) -> int:
        return self._sequence + 1

    def close(self) -> None:
        self._socket.close()

    def __enter__(self) -> "UdpController":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _send(self, steps: int, tau=None, position=None, velocity=None,
              base_wrench: list[float] = []) -> int:
        self._sequence += 1
        command = control_pb2.Command(
            session_id=self._session_id,
            sequence=self._sequence,
            client_send_time_ns=time.monotonic_ns(),  # CLOCK_MONOTONIC, as the server's
            steps=steps,
            base_wrench=base_wrench,
        )
        _set_points(command, tau, position, velocity)
        datagram = udp_pb2.UdpCommand(
            token=self._token,  # empty under MAC: not sent
            command=command,
        ).SerializeToString()
        if self._key:
            datagram = seal(self._key, COMMAND_MAGIC, self._sequence, datagram)
        self.last_datagram = datagram
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
        return self._send(steps)

    def send(self, tau: Optional[Sequence[float] | np.ndarray] = None, steps: int = 0,
             base_wrench: Optional[Sequence[float] | np.ndarray] = None, *,
             position: Optional[Sequence[float] | np.ndarray] = None,
             velocity: Optional[Sequence[float] | np.ndarray] = None) -> int:
        """Set-points for the next cycle (LOCKSTEP: `steps` cycles), nv values each in v order:
        joint forces `tau` [N·m, N] (efforts; feed-forward on position and velocity joints),
        `position` and `velocity` for joints with those command interfaces (docs/REALISM.md);
        and optionally a push on a floating base while they apply (force in the world frame [N],
        then torque [N·m]). Returns the sequence the answering State echoes, or 0 as for
        sync()."""
        if tau is None and position is None and velocity is None:
            raise ValueError("send: give tau, position or velocity (sync() sends none)")
        return self._send(steps, tau, position, velocity, _wrench(base_wrench))

    def receive(self, timeout: float = 0.02) -> Optional[State]:
        """The next State from the session, or None when none arrived within `timeout` seconds.
        A datagram that is not a UdpState, and under MAC one whose tag fails or whose counter is
        not above the newest taken, is counted and skipped."""
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
            if self._key:
                opened = open_frame(self._key, STATE_MAGIC, datagram)
                if opened is None:
                    self.stats.unauthenticated += 1
                    continue
                counter, datagram = opened
                if counter <= self._newest_state:  # a replay, or older than a state taken
                    self.stats.replayed += 1
                    continue
                self._newest_state = counter
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
