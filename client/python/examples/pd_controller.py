#!/usr/bin/env python3
"""A controller for hilsim-server in Python: a REALTIME session on the 7-DoF arm iiwa14 at
1 kHz, held at a target posture over UDP by a PD law with gravity compensation on every State
the server sends: tau = KP e - KD v + g(q), with g(q) from the same model loaded in process
(hilsim.engine). It prints the largest joint error once a second, then closes the session and
prints the server's figures of the run. Ctrl-C stops it early; the session is closed in every
case. --integral adds an integral term, for a model that differs from the server's.

    PYTHONPATH=build/python python3 client/python/examples/pd_controller.py [--server H:P]
        [--duration S] [--integral]
"""

import argparse
import sys
import time

import numpy as np

import hilsim
from hilsim import engine

TARGET = np.array([0.0, 0.6, 0.0, -1.2, 0.0, 0.9, 0.0])  # [rad] elbow bent, flange down
# gains per joint [N·m/rad, N·m·s/rad, N·m/(rad·s)]: the base joints carry the whole arm
KP = np.array([600.0, 600.0, 300.0, 300.0, 60.0, 60.0, 20.0])
KD = np.array([40.0, 40.0, 20.0, 20.0, 4.0, 4.0, 1.0])
KI = 2.0 * KP  # integral action (--integral): removes what the model's g(q) leaves


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=None, help="HOST:PORT (default $HILSIM_SERVER)")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds, > 0")
    parser.add_argument("--integral", action="store_true", help="add the integral term KI")
    options = parser.parse_args()
    if not options.duration > 0.0:
        parser.error("--duration must be > 0")

    model = engine.load_model("iiwa14")  # the server's bundled model, here for g(q)
    ki = KI if options.integral else np.zeros(model.nv)
    with hilsim.SimulationClient(options.server) as client:
        created = client.create_session("iiwa14", mode="realtime", rate_hz=1000,
                                        name="py-pd-example", idle_timeout_s=10.0, start=True)
        print(f"session {created.session_id}: iiwa14, realtime 1 kHz, UDP port {created.udp_port}")
        host = client.target.rsplit(":", 1)[0]
        try:
            with hilsim.UdpController.for_session(host, created) as udp:
                state = None
                while state is None:  # the first sync makes this socket the session's peer
                    udp.sync()
                    state = udp.receive(0.1)
                integral = np.zeros(model.nv)
                end = time.monotonic() + options.duration
                next_print = time.monotonic()
                while time.monotonic() < end:
                    error = TARGET - state.q
                    integral += error * 1e-3
                    gravity = engine.gravity(model, state.q)  # holds the arm still at q
                    udp.send(KP * error + ki * integral - KD * state.v + gravity)
                    received = udp.receive(0.02)
                    if received is None:
                        udp.sync()  # a lost State: ask for the newest one
                        continue
                    state = received
                    if time.monotonic() >= next_print:
                        next_print += 1.0
                        print(f"t = {state.time:5.2f} s   max joint error "
                              f"{np.max(np.abs(TARGET - state.q)):.5f} rad")
                print(f"controller: {udp.stats.sent} datagrams sent, {udp.stats.received} "
                      f"States received, {udp.stats.timeouts} timeouts")
        except KeyboardInterrupt:
            print("interrupted")
        finally:
            stats = client.close_session(created.session_id)
        print(f"server: {stats.cycles} cycles, {stats.commands.applied} commands applied, "
              f"{stats.timing.deadline_misses} deadline misses, real-time factor "
              f"{stats.real_time_factor:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
