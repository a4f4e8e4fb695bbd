#!/usr/bin/env python3
"""The Python UDP controller's round trip and miss rate at 1 kHz: a REALTIME session of its own,
one command per period on absolute deadlines, each answered by the State of the cycle that
applied it. Prints the round trip's percentiles and the commands no State of their own answered
(docs/PYTHON.md compares it with `hilsim latency`, the C++ controller, in the same run).

    PYTHONPATH=build/python python3 client/python/examples/udp_round_trip.py [--server H:P]
        [--duration S] [--rate HZ] [--model NAME]
"""

import argparse
import sys
import time

import numpy as np

import hilsim


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=None)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=1000.0)
    parser.add_argument("--model", default="iiwa14")
    options = parser.parse_args()
    period = 1.0 / options.rate
    with hilsim.SimulationClient(options.server) as client:
        created = client.create_session(options.model, mode="realtime", rate_hz=options.rate,
                                        name="py-round-trip", idle_timeout_s=10.0, start=True)
        try:
            host = client.target.rsplit(":", 1)[0]
            with hilsim.UdpController.for_session(host, created) as udp:
                state = None
                while state is None:
                    udp.sync()
                    state = udp.receive(0.1)
                # zero torques: what is measured is the path, not a control law
                tau = np.zeros(len(state.v))
                # States come every cycle: send half a period after one is published, as
                # `hilsim latency` does, so that each command reaches the next cycle with margin.
                # On the server's host its publish time is on this clock (CLOCK_MONOTONIC);
                # elsewhere the arrival time stands in for it.
                latest = udp.receive(0.1)
                loopback = host in ("127.0.0.1", "::1", "localhost")
                phase = (latest.publish_time_ns * 1e-9
                         if loopback and latest is not None and latest.publish_time_ns > 0
                         else time.monotonic())
                sent = {}  # sequence → send time [ns]
                round_trips = []
                late_periods = 0
                next_send = phase + period / 2
                while next_send < time.monotonic():
                    next_send += period
                end = next_send + options.duration
                while next_send < end:
                    now = time.monotonic()
                    if now < next_send:
                        time.sleep(next_send - now)
                    elif now > next_send + period:
                        late_periods += 1
                    sequence = udp.send(tau)
                    sent[sequence] = time.monotonic_ns()
                    next_send += period
                    # the States until the next period
                    while True:
                        received = udp.receive(max(0.0, next_send - time.monotonic()))
                        if received is None:
                            break
                        arrival = time.monotonic_ns()
                        if received.command_sequence in sent:
                            round_trips.append(arrival - sent.pop(received.command_sequence))
        finally:
            stats = client.close_session(created.session_id)
    commands = len(round_trips) + len(sent)
    rt = np.array(round_trips) * 1e-3  # [µs]
    print(f"python UDP controller, {options.model} at {options.rate:g} Hz for "
          f"{options.duration:g} s: {commands} commands, {len(round_trips)} answered by their own "
          f"State, {len(sent)} not ({100.0 * len(sent) / max(commands, 1):.2f} %), "
          f"{late_periods} late periods")
    if len(rt):
        print(f"round trip [µs]: p50 {np.percentile(rt, 50):.1f}, p90 {np.percentile(rt, 90):.1f}, "
              f"p99 {np.percentile(rt, 99):.1f}, max {rt.max():.1f}")
    if stats.HasField("fault"):
        print(f"server: the session faulted: {stats.fault.reason}")
    print(f"server: {stats.cycles} cycles, {stats.timing.deadline_misses} deadline misses, "
          f"{stats.commands.superseded} superseded, real-time factor {stats.real_time_factor:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
