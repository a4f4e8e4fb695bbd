#!/usr/bin/env python3
"""The bundled Solo 12 quadruped standing on the ground, held up from Python: a REALTIME session
on `quadruped` at 1 kHz (four foot spheres on the ground, a crouched start), answered over UDP
with the torques of a PD stance law on its twelve joints (nothing on the floating base, which the
feet carry), as examples/quadruped_stance/stance_law.h. Halfway through it pushes the base
sideways (10 N for 0.1 s, the commands' base wrench) and the legs take it. It prints the base's
height, sideways offset, tilt and the feet's load once a second, then closes the session and
prints the server's figures of the run.

    PYTHONPATH=build/python python3 client/python/examples/quadruped_stance.py [--server H:P]
        [--duration S]
"""

import argparse
import math
import sys
import time

import numpy as np

import hilsim

# the standing posture: the model's start (config/models/quadruped.yaml), joints in model order
# FL, FR, HL, HR, each HAA, HFE, KFE [rad]
POSTURE = np.array([0.0, 0.8, -1.6, 0.0, 0.8, -1.6, 0.0, -0.8, 1.6, 0.0, -0.8, 1.6])
STIFFNESS = 3.0  # [N·m/rad]
DAMPING = 0.05   # [N·m·s/rad]


def stance_torques(q, v):
    """τ on the 18 dofs: zero on the base's six, a PD on the twelve joints."""
    tau = np.zeros(18)
    tau[6:] = STIFFNESS * (POSTURE - q[7:]) - DAMPING * v[6:]
    return tau


def tilt_degrees(q):
    """The base's tilt from upright, from its quaternion (w x y z at q[3:7])."""
    return math.degrees(math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (q[4] ** 2 + q[5] ** 2)))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=None, help="HOST:PORT (default $HILSIM_SERVER)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds, > 0")
    options = parser.parse_args()
    if not options.duration > 0.0:
        parser.error("--duration must be > 0")

    with hilsim.SimulationClient(options.server) as client:
        created = client.create_session("quadruped", mode="realtime", rate_hz=1000,
                                        name="py-stance-example", idle_timeout_s=10.0, start=True)
        print(f"session {created.session_id}: quadruped, realtime 1 kHz, "
              f"UDP port {created.udp_port}")
        host = client.target.rsplit(":", 1)[0]
        try:
            with hilsim.UdpController(host, created.udp_port, created.session_id,
                                      created.udp_token) as udp:
                state = None
                while state is None:  # the first sync makes this socket the session's peer
                    udp.sync()
                    state = udp.receive(0.1)
                end = time.monotonic() + options.duration
                push_start = state.time + options.duration / 2  # simulated time [s]
                push = [0.0, 10.0, 0.0, 0.0, 0.0, 0.0]  # force [N], torque [N·m], world frame
                y_start = state.q[1]
                next_print = time.monotonic()
                while time.monotonic() < end:
                    pushing = push_start <= state.time < push_start + 0.1
                    udp.send(stance_torques(state.q, state.v),
                             base_wrench=push if pushing else None)
                    received = udp.receive(0.02)
                    if received is None:
                        udp.sync()  # a lost State: ask for the newest one
                        continue
                    state = received
                    if time.monotonic() >= next_print:
                        next_print += 1.0
                        print(f"t = {state.time:5.2f} s   base height {state.q[2]:.4f} m, "
                              f"sideways {state.q[1] - y_start:+.4f} m, "
                              f"tilt {tilt_degrees(state.q):.3f} deg, "
                              f"feet carry {state.contact_force[:, 2].sum():.2f} N")
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
