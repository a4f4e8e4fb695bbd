"""The Python examples (client/python/examples) run against a real server and do what they
say: the PD example (its gravity compensation from hilsim.engine) brings the arm to its target,
the logger writes the states it read, the stance example holds the quadruped and the humanoid up
on the ground."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "client", "python",
                        "examples")


def run(server, script, *args):
    return subprocess.run([sys.executable, os.path.join(EXAMPLES, script), "--server", server,
                           *args], capture_output=True, text=True, timeout=60, check=False)


def test_the_pd_example_holds_the_arm_at_its_target(server):
    pytest.importorskip("hilsim.engine", reason="its gravity compensation needs hilsim.engine")
    result = run(server, "pd_controller.py", "--duration", "3")
    assert result.returncode == 0, result.stderr
    errors = [float(e) for e in re.findall(r"max joint error ([0-9.]+) rad", result.stdout)]
    assert len(errors) >= 3, result.stdout
    assert errors[0] > 0.5  # from the initial posture
    assert errors[-1] < 0.02, result.stdout
    assert "commands applied" in result.stdout


def test_the_state_log_example_writes_the_states_it_read(server, tmp_path):
    output = tmp_path / "log.npz"
    result = run(server, "state_log.py", "--duration", "1", "--decimation", "10", "--output",
                 str(output))
    assert result.returncode == 0, result.stderr
    log = np.load(output)
    assert log["q"].ndim == 2 and log["q"].shape[1] == 1  # the pendulum
    assert 50 <= len(log["t"]) <= 110  # 1 s of a 1 kHz session, every 10th cycle
    assert np.all(np.diff(log["cycle"]) >= 10)
    assert f"wrote {len(log['t'])} states" in result.stdout


def test_the_stance_example_holds_the_quadruped_up(server):
    result = run(server, "quadruped_stance.py", "--duration", "3")
    assert result.returncode == 0, result.stderr
    heights = [float(h) for h in re.findall(r"base height ([0-9.]+) m", result.stdout)]
    tilts = [float(t) for t in re.findall(r"tilt ([0-9.]+) deg", result.stdout)]
    assert len(heights) >= 3, result.stdout
    # standing in its crouch (0.24 m at the start, 0.218 m settled), far above a fallen base's
    # 0.1 m, level before the push and upright through it (it rolls 2.7° as its legs take it)
    assert all(h > 0.19 for h in heights), result.stdout
    assert tilts[1] < 0.1 and max(tilts) < 5.0, result.stdout
    # the feet carry its weight (2.5 kg: 24.5 N) through the push halfway, within its sway
    loads = [float(f) for f in re.findall(r"feet carry ([0-9.]+) N", result.stdout)]
    assert len(loads) == len(heights), result.stdout
    assert all(0.8 * 24.5 < f < 1.2 * 24.5 for f in loads[1:]), result.stdout


def test_the_stance_example_holds_the_humanoid_up_through_its_push(server):
    result = run(server, "quadruped_stance.py", "--model", "humanoid", "--duration", "3")
    assert result.returncode == 0, result.stderr
    heights = [float(h) for h in re.findall(r"base height ([0-9.]+) m", result.stdout)]
    tilts = [float(t) for t in re.findall(r"tilt ([0-9.]+) deg", result.stdout)]
    loads = [float(f) for f in re.findall(r"feet carry ([0-9.]+) N", result.stdout)]
    assert len(heights) >= 3 and len(loads) == len(heights), result.stdout
    # it stands at 0.758 m on straight legs (a fallen one's base is below 0.3 m), upright through
    # the 600 N push halfway, its soles carrying its 130.8 kg
    assert all(h > 0.7 for h in heights), result.stdout
    assert max(tilts) < 5.0, result.stdout
    weight = 130.8 * 9.81
    assert all(0.8 * weight < f < 1.2 * weight for f in loads[1:]), result.stdout
