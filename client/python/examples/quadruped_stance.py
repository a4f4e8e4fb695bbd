#!/usr/bin/env python3
"""A bundled legged robot standing on the ground, held up from Python: a REALTIME session on
`quadruped` (Solo 12, the default) or `humanoid` at 1 kHz (contact spheres on its feet, a standing
start), answered over UDP with the torques of a PD stance law on every joint around the session's
initial posture (nothing on the floating base, which the feet carry), as
examples/quadruped_stance/stance_law.h. Halfway through it pushes the base (the quadruped 10 N
sideways, the humanoid 600 N forward, for 0.1 s: the commands' base wrench) and the legs take it.
It prints the base's height, its offset from where it stood, its tilt and the feet's load once a
second, then closes the session and prints the server's figures of the run.

    PYTHONPATH=build/python python3 client/python/examples/quadruped_stance.py [--server H:P]
        [--duration S] [--model quadruped|humanoid]
"""

import argparse
import math
import sys
import time

import numpy as np

import hilsim

# per model: the law's stiffness [N·m/rad] and damping [N·m·s/rad], and the push [N] in the world
# frame (stance_law.h, kStanceSettings)
SETTINGS = {
    "quadruped": (3.0, 0.05, [0.0, 10.0, 0.0]),
    "humanoid": (5000.0, 700.0, [600.0, 0.0, 0.0]),
}


def stance_torques(posture, q, v, stiffness, damping):
    """τ on every dof: zero on the free joint's six (q[0:7], v[0:6]), a PD on the joints around
    the posture (their q, from q[7:])."""
    tau = np.zeros(len(v))
    tau[6:] = stiffness * (posture - q[7:]) - damping * v[6:]
    return tau


def tilt_degrees(q):
    """The base's tilt from upright, from its quaternion (w x y z at q[3:7])."""
    return math.degrees(math.acos(max(-1.0, min(1.0, 1.0 - 2.0 * (q[4] ** 2 + q[5] ** 2)))))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=None, help="HOST:PORT (default $HILSIM_SERVER)")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds, > 0")
    parser.add_argument("--model", choices=sorted(SETTINGS), default="quadruped")
    options = parser.parse_args()
    if not options.duration > 0.0:
        parser.error("--duration must be > 0")

    with hilsim.SimulationClient(options.server) as client:
        stiffness, damping, push_force = SETTINGS[options.model]
        created = client.create_session(options.model, mode="realtime", rate_hz=1000,
                                        name=f"py-{options.model}-stance", idle_timeout_s=10.0,
                                        start=True)
        # the posture to hold: the session's initial state, the model's standing start
        posture = np.array(created.info.latest_state.q[7:], dtype=float)
        print(f"session {created.session_id}: {options.model}, realtime 1 kHz, "
              f"UDP port {created.udp_port}")
        host = client.target.rsplit(":", 1)[0]
        try:
            with hilsim.UdpController.for_session(host, created) as udp:
                state = None
                while state is None:  # the first sync makes this socket the session's peer
                    udp.sync()
                    state = udp.receive(0.1)
                end = time.monotonic() + options.duration
                push_start = state.time + options.duration / 2  # simulated time [s]
                push = push_force + [0.0, 0.0, 0.0]  # force [N], torque [N·m], world frame
                start = state.q[:2].copy()
                next_print = time.monotonic()
                while time.monotonic() < end:
                    pushing = push_start <= state.time < push_start + 0.1
                    udp.send(stance_torques(posture, state.q, state.v, stiffness, damping),
                             base_wrench=push if pushing else None)
                    received = udp.receive(0.02)
                    if received is None:
                        udp.sync()  # a lost State: ask for the newest one
                        continue
                    state = received
                    if time.monotonic() >= next_print:
                        next_print += 1.0
                        print(f"t = {state.time:5.2f} s   base height {state.q[2]:.4f} m, "
                              f"moved {np.linalg.norm(state.q[:2] - start):.4f} m, "
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
