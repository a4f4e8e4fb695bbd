#!/usr/bin/env python3
"""Reads a session's state stream into numpy arrays and saves them: t, q, v and tau of every
n-th cycle of a running session (StreamStates), for as long as asked, into one .npz file.

    PYTHONPATH=build/python python3 client/python/examples/state_log.py --session 3
        [--server H:P] [--duration S] [--decimation N] [--output log.npz]

Without --session it creates a REALTIME pendulum session, logs it and closes it.
"""

import argparse
import sys
import threading

import numpy as np

import hilsim


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", default=None, help="HOST:PORT (default $HILSIM_SERVER)")
    parser.add_argument("--session", type=int, default=0, help="a running session's id")
    parser.add_argument("--duration", type=float, default=2.0, help="seconds, > 0")
    parser.add_argument("--decimation", type=int, default=10, help="every n-th cycle, ≥ 1")
    parser.add_argument("--output", default="states.npz")
    options = parser.parse_args()
    if not options.duration > 0.0 or options.decimation < 1:
        parser.error("--duration must be > 0 and --decimation ≥ 1")

    with hilsim.SimulationClient(options.server) as client:
        session_id = options.session
        created = session_id == 0
        if created:
            session_id = client.create_session("pendulum", mode="realtime", start=True,
                                               idle_timeout_s=10.0).session_id
        try:
            stream = client.stream_states(session_id, decimation=options.decimation)
            timer = threading.Timer(options.duration, stream.cancel)  # ends the iteration
            timer.start()
            rows = [(s.cycle, s.time, s.q, s.v, s.tau) for s in stream]
            timer.cancel()
        finally:
            if created:
                client.close_session(session_id)
    if not rows:
        print("no states arrived", file=sys.stderr)
        return 1
    cycle, t, q, v, tau = (np.array(column) for column in zip(*rows))
    np.savez(options.output, cycle=cycle, t=t, q=q, v=v, tau=tau)
    print(f"wrote {len(rows)} states (cycles {cycle[0]} … {cycle[-1]}, q {q.shape[1]} values "
          f"each) to {options.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
