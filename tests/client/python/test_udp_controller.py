"""UdpController against a real server: the 1 kHz path under MAC (the default) and under TOKEN;
forged, replayed and re-ordered datagrams are rejected and counted by the server, forged and
replayed states by the controller; the frame's tag agrees with libsodium's (known answer)."""

import socket
import time

import numpy as np
import pytest

import hilsim
from hilsim import udp as hudp

# The known answer shared with tests/server/udp_screen_test.cc: key bytes 0, 1, …, 31, message
# "hilsim" — BLAKE2b-128 keyed (libsodium crypto_generichash, RFC 7693).
KAT_KEY = bytes(range(32))
KAT_MESSAGE = b"hilsim"
KAT_TAG = "2c990b41f1e7cdae8d63e7241d7b054f"


def _realtime_session(client):
    return client.create_session("pendulum", mode="realtime", rate_hz=1000, start=True,
                                 idle_timeout_s=10.0)


def _first_state(udp):
    for _ in range(50):  # the server answers a sync at once; 5 s at most
        udp.sync()
        state = udp.receive(0.1)
        if state is not None:
            return state
    raise AssertionError("no State over UDP")


def _answer_to(udp, sequence, timeout):
    """The state answering command `sequence`, skipping older ones: when a sync's answer took
    longer than _first_state waited, the answer to its repeated sync is still on its way."""
    end = time.monotonic() + timeout
    while (left := end - time.monotonic()) > 0:
        state = udp.receive(left)
        if state is None or state.command_sequence >= sequence:
            return state
    return None


def _pd_for(udp, seconds, target=0.3):
    state = _first_state(udp)
    answered = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        udp.send(40.0 * (target - state.q) - 8.0 * state.v)
        received = udp.receive(0.02)
        if received is not None:
            state = received
            answered += 1
    return state, answered


def test_a_pd_law_over_authenticated_udp_at_1_khz(server):
    with hilsim.SimulationClient(server) as client:
        created = _realtime_session(client)
        assert len(created.udp_key) == 32 and created.udp_token == b""
        with hilsim.UdpController.for_session("127.0.0.1", created) as udp:
            assert udp.authenticated
            assert udp.next_sequence > 1_600_000_000 * 10**6  # CLOCK_REALTIME [µs]
            state, answered = _pd_for(udp, 1.5)
            assert answered > 500  # States arrive every cycle; some cycles may pass unread
            assert abs(state.q[0] - 0.3) < 0.2
            assert udp.stats.parse_errors == 0
            assert udp.stats.unauthenticated == 0 and udp.stats.replayed == 0
        stats = client.close_session(created.session_id)
        assert stats.udp.accepted >= answered
        assert stats.udp.unauthenticated == 0 and stats.udp.replayed == 0


def test_position_set_points_over_udp_in_lockstep(server):
    # the pendulum's PD drive with the gravity torque as feed-forward settles on its set-point;
    # the answer to each command is the state after its steps
    with hilsim.SimulationClient(server) as client:
        created = client.create_session(
            "pendulum", mode="lockstep", start=True, idle_timeout_s=10.0,
            drives=[hilsim.drive("hinge", "position", kp=200.0, kd=20.0)])
        with hilsim.UdpController.for_session("127.0.0.1", created) as udp:
            _first_state(udp)
            sequence = udp.send(position=[0.5], tau=[9.81 * np.sin(0.5)], steps=3000)
            state = _answer_to(udp, sequence, 5.0)
            assert state is not None and state.command_sequence == sequence
            assert state.cycle == 3000
            assert state.q[0] == pytest.approx(0.5, abs=1e-9)
            with pytest.raises(ValueError):
                udp.send(steps=1)  # nothing to send: sync() is the empty command
        stats = client.close_session(created.session_id)
        assert stats.udp.wrong_size == 0


def _command_frame(key, session_id, sequence, tau):
    """A command frame as a controller makes it: counter = sequence."""
    payload = hudp.udp_pb2.UdpCommand(command=hilsim.v1.control_pb2.Command(
        session_id=session_id, sequence=sequence, tau=tau)).SerializeToString()
    return hudp.seal(key, hudp.COMMAND_MAGIC, sequence, payload)


def test_forged_replayed_and_reordered_commands_are_refused_and_counted(server):
    with hilsim.SimulationClient(server) as client:
        created = _realtime_session(client)
        key = created.udp_key
        with hilsim.UdpController.for_session("127.0.0.1", created) as udp:
            _first_state(udp)
            udp.send([0.1])
            captured = udp.last_datagram
            forged = bytearray(captured)
            forged[-1] ^= 1  # one bit of the tag
            n = udp.next_sequence
            wrong_key = hudp.seal(bytes(32), hudp.COMMAND_MAGIC, n, captured[12:-16])
            as_state = hudp.seal(key, hudp.STATE_MAGIC, n, captured[12:-16])
            for datagram in [bytes(forged), wrong_key, as_state, captured[:20], captured]:
                udp._socket.send(datagram)
            # the captured frame again from another source port: the key's window refuses it too
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
                other.sendto(captured, ("127.0.0.1", created.udp_port))
            # two commands of the controller's that arrive in the wrong order: the older is stale
            early, late = (_command_frame(key, created.session_id, n + k, [0.2]) for k in (0, 1))
            udp._sequence += 2  # the controller used those two sequences
            udp._socket.send(late)
            udp._socket.send(early)
            time.sleep(0.2)
            stats = client.get_stats(created.session_id)
            assert stats.udp.unauthenticated == 4  # bit flip, wrong key, state magic, truncated
            assert stats.udp.replayed == 2  # from this socket and from the other one
            assert stats.udp.stale == 1  # re-ordered: older than the newest accepted
            # the legitimate controller goes on, unaffected
            state, answered = _pd_for(udp, 0.5)
            assert answered > 100
            assert udp.stats.unauthenticated == 0 and udp.stats.replayed == 0
        stats = client.close_session(created.session_id)
        # the seven refused above, and nothing else but what a loaded machine's full command
        # channel dropped
        assert stats.udp.received == stats.udp.accepted + stats.udp.dropped + 7


def test_the_controller_drops_forged_and_replayed_states():
    key = bytes(range(32))
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as fake:
        fake.bind(("127.0.0.1", 0))
        with hilsim.UdpController("127.0.0.1", fake.getsockname()[1], 7, key=key,
                                  first_sequence=10) as udp:
            assert udp.sync() == 10
            datagram, peer = fake.recvfrom(2048)
            opened = hudp.open_frame(key, hudp.COMMAND_MAGIC, datagram)
            assert opened is not None and opened[0] == 10
            command = hudp.udp_pb2.UdpCommand.FromString(opened[1])
            assert command.token == b"" and command.command.sequence == 10

            def state(cycle):
                return hudp.udp_pb2.UdpState(
                    state=hilsim.v1.control_pb2.State(cycle=cycle, q=[0.5], v=[0.0])
                ).SerializeToString()

            good = hudp.seal(key, hudp.STATE_MAGIC, 5, state(1))
            forged = bytearray(hudp.seal(key, hudp.STATE_MAGIC, 6, state(2)))
            forged[14] ^= 0x40  # a payload byte
            reflected = hudp.seal(key, hudp.COMMAND_MAGIC, 7, state(3))  # a command's magic
            for d in [bytes(forged), reflected, good, good,
                      hudp.seal(key, hudp.STATE_MAGIC, 4, state(4)),
                      hudp.seal(key, hudp.STATE_MAGIC, 8, state(5))]:
                fake.sendto(d, peer)
            first = udp.receive(1.0)
            second = udp.receive(1.0)
            assert first is not None and first.cycle == 1
            assert second is not None and second.cycle == 5
            assert udp.receive(0.05) is None
            assert udp.stats.unauthenticated == 2
            assert udp.stats.replayed == 2  # the repeat, and the older counter 4


def test_the_tag_is_keyed_blake2b_128():
    tag = hudp.frame_tag(KAT_KEY, KAT_MESSAGE)
    assert len(tag) == 16
    assert tag.hex() == KAT_TAG


def test_token_mode_still_works_and_a_wrong_token_is_rejected(token_server):
    with hilsim.SimulationClient(token_server) as client:
        created = _realtime_session(client)
        assert len(created.udp_token) == 16 and created.udp_key == b""
        with hilsim.UdpController.for_session("127.0.0.1", created) as udp:
            assert not udp.authenticated and udp.next_sequence == 1
            state, answered = _pd_for(udp, 0.5)
            assert answered > 100
        wrong = bytes(16)
        with hilsim.UdpController("127.0.0.1", created.udp_port, created.session_id,
                                  wrong) as udp:
            udp.sync()
            assert udp.receive(0.3) is None  # no answer to an unauthenticated datagram
        time.sleep(0.1)
        stats = client.get_stats(created.session_id)
        assert stats.udp.unauthenticated >= 1
        client.close_session(created.session_id)


def test_credentials_are_checked():
    with pytest.raises(ValueError):
        hilsim.UdpController("127.0.0.1", 9, 1)  # neither
    with pytest.raises(ValueError):
        hilsim.UdpController("127.0.0.1", 9, 1, bytes(16), key=bytes(32))  # both
    with pytest.raises(ValueError):
        hilsim.UdpController("127.0.0.1", 9, 1, key=bytes(31))


def test_a_stall_silences_the_link_and_trips_the_watchdog(server):
    # a PD controller over UDP at 1 kHz meets a 300 ms stall: no state reaches it for that long,
    # the watchdog (20 missed cycles) trips, and afterwards the loop runs on
    config = hilsim.v1.session_pb2.SessionConfig()
    config.watchdog.policy = hilsim.v1.types_pb2.WATCHDOG_POLICY_ZERO
    config.watchdog.missed_cycles_limit = 20
    with hilsim.SimulationClient(server) as client:
        created = client.create_session("pendulum", mode="realtime", rate_hz=1000, start=True,
                                        idle_timeout_s=10.0, config=config)
        with hilsim.UdpController.for_session("127.0.0.1", created) as udp:
            state, _ = _pd_for(udp, 0.2)  # the first command arms the watchdog
            injected = client.inject_fault(created.session_id,
                                           hilsim.fault("stall", duration_s=0.3))
            last_seen, longest_gap = time.monotonic(), 0.0
            end = time.monotonic() + 1.5
            while time.monotonic() < end:
                udp.send(40.0 * (0.3 - state.q) - 8.0 * state.v)
                received = udp.receive(0.02)
                now = time.monotonic()
                if received is not None:
                    longest_gap = max(longest_gap, now - last_seen)
                    last_seen, state = now, received
            assert longest_gap > 0.25  # the 300 ms of simulated time run at the wall clock
            assert state.running and not state.watchdog_tripped
        stats = client.close_session(created.session_id)
        assert stats.watchdog.trips >= 1
        assert stats.faults.states_withheld >= 290
        assert stats.faults.commands_lost >= 5  # one every 20 ms of silence at least
        assert stats.faults.started == 1 and stats.faults.ended == 1
        assert injected.id == 1
