"""UdpController against a real server: the 1 kHz path with the session's token; a wrong token
is rejected and counted by the server."""

import time

import numpy as np

import hilsim


def test_a_pd_law_over_udp_at_1_khz(server):
    with hilsim.SimulationClient(server) as client:
        created = client.create_session("pendulum", mode="realtime", rate_hz=1000, start=True,
                                        idle_timeout_s=10.0)
        with hilsim.UdpController("127.0.0.1", created.udp_port, created.session_id,
                                  created.udp_token) as udp:
            state = None
            for _ in range(50):  # the server answers a sync at once; 5 s at most
                udp.sync()
                state = udp.receive(0.1)
                if state is not None:
                    break
            assert state is not None, "no State over UDP"
            target = 0.3
            answered = 0
            end = time.monotonic() + 1.5
            while time.monotonic() < end:
                udp.send(40.0 * (target - state.q) - 8.0 * state.v)
                received = udp.receive(0.02)
                if received is not None:
                    state = received
                    answered += 1
            assert answered > 500  # States arrive every cycle; some cycles may pass unread
            assert abs(state.q[0] - target) < 0.2
            assert udp.stats.parse_errors == 0
        stats = client.close_session(created.session_id)
        assert stats.udp.accepted >= answered
        assert stats.udp.unauthenticated == 0


def test_a_wrong_token_is_rejected_and_counted(server):
    with hilsim.SimulationClient(server) as client:
        created = client.create_session("pendulum", mode="realtime", start=True)
        wrong = bytes(16)
        with hilsim.UdpController("127.0.0.1", created.udp_port, created.session_id, wrong) as udp:
            udp.sync()
            assert udp.receive(0.3) is None  # no answer to an unauthenticated datagram
        time.sleep(0.1)
        stats = client.get_stats(created.session_id)
        assert stats.udp.unauthenticated >= 1
        assert stats.udp.accepted == 0
        client.close_session(created.session_id)
