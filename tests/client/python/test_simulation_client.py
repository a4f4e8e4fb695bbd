"""SimulationClient against a real server: the session life cycle, lockstep steps, the Control
stream, state streams and the errors, with numpy arrays in and out."""

import os

import grpc
import numpy as np
import pytest

import hilsim
from hilsim.v1 import types_pb2
from model_texts import FINGER_URDF, PENDULUM_MJCF, PENDULUM_SDF


@pytest.fixture
def client(server):
    with hilsim.SimulationClient(server) as c:
        yield c
        for s in c.list_sessions():  # each test leaves the server empty
            c.close_session(s.session_id)


def test_models_and_a_lockstep_session(client):
    models = client.list_models()
    assert models[0] == "iiwa14"
    assert "pendulum" in models
    created = client.create_session("iiwa14", mode="lockstep", name="py", start=True)
    assert created.info.name == "py"
    assert len(created.udp_key) == 32  # MAC, the server's default
    assert created.udp_token == b""
    assert "udp_key" not in repr(created)
    state = client.step(created.session_id, np.zeros(7), steps=10)
    assert isinstance(state.q, np.ndarray) and state.q.shape == (7,)
    assert state.v.shape == (7,) and state.tau.shape == (7,)
    assert state.cycle == 10
    assert state.time == pytest.approx(0.010, abs=1e-12)
    assert state.running
    [listed] = client.list_sessions()
    assert listed.name == "py" and listed.owner.startswith("ipv")
    stats = client.close_session(created.session_id)
    assert stats.cycles == 10
    assert client.list_sessions() == []


def test_steps_are_deterministic_however_they_are_split(client):
    # one Step of 200 cycles and 200 Steps of one give the same motion, to the last bit
    tau = np.array([0.5])
    finals = []
    for split in (1, 200):
        created = client.create_session("pendulum", mode="lockstep", start=True)
        client.reset_session(created.session_id, q=[0.7])
        client.start_session(created.session_id)
        for _ in range(split):
            state = client.step(created.session_id, tau, steps=200 // split)
        assert state.cycle == 200
        finals.append(state)
        client.close_session(created.session_id)
    np.testing.assert_array_equal(finals[0].q, finals[1].q)
    np.testing.assert_array_equal(finals[0].v, finals[1].v)
    assert finals[0].q[0] != 0.7  # it moved


def test_a_pd_law_over_the_control_stream_holds_the_pendulum(client):
    created = client.create_session("pendulum", mode="lockstep", start=True)
    target = 0.4  # [rad]
    with client.control(created.session_id) as stream:
        state = stream.receive(timeout=5.0)  # the answer to the binding sync
        assert state is not None
        for _ in range(3000):  # 3 s at 1 kHz
            tau = 40.0 * (target - state.q) - 8.0 * state.v
            sequence = stream.send(tau, steps=1)
            state = stream.receive(timeout=5.0)
            assert state is not None and state.command_sequence == sequence
    # PD without gravity compensation: a small offset remains, no motion
    assert abs(state.q[0] - target) < 0.2
    assert abs(state.v[0]) < 1e-3


def test_a_state_stream_delivers_decimated_states(client):
    created = client.create_session("pendulum", mode="realtime", start=True)
    stream = client.stream_states(created.session_id, decimation=10)
    cycles = []
    for state in stream:
        cycles.append(state.cycle)
        if len(cycles) == 20:
            stream.cancel()
    assert len(cycles) == 20
    gaps = np.diff(cycles)
    assert np.all(gaps >= 10) and np.median(gaps) == 10


def test_position_interface_with_feed_forward_settles_on_its_set_point(client):
    # the pendulum (I = 1 kg·m², gravity torque 9.81 sin q): a PD drive with the gravity torque as
    # feed-forward settles exactly on its set-point; without it, where kp (q_ref − q) = 9.81 sin q
    created = client.create_session(
        "pendulum", mode="lockstep", start=True,
        drives=[hilsim.drive("*", "position", kp=200.0, kd=20.0)])
    [drive] = created.info.config.drives
    assert drive.joint == "*" and drive.kp == 200.0
    target = 0.5
    state = client.step(created.session_id, position=[target], steps=3000)
    assert 200.0 * (target - state.q[0]) == pytest.approx(9.81 * np.sin(state.q[0]), abs=1e-6)
    state = client.step(created.session_id, position=[target], tau=[9.81 * np.sin(target)],
                        steps=3000)
    assert state.q[0] == pytest.approx(target, abs=1e-9)
    assert state.v[0] == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(hilsim.RpcError) as missing:
        client.step(created.session_id, tau=[0.0])
    assert missing.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "positions" in missing.value.message


def test_velocity_interface_with_integral_stops_the_pendulum_against_gravity(client):
    created = client.create_session(
        "pendulum", mode="lockstep",
        drives=[hilsim.drive("hinge", "velocity", kd=20.0, ki=100.0)])
    client.reset_session(created.session_id, q=[0.3])
    client.start_session(created.session_id)
    stream = client.control(created.session_id)
    with stream:
        stream.receive()  # the sync's answer
        stream.send(velocity=[0.0], steps=5000)
        state = stream.receive(timeout=10.0)
        while state is not None and state.cycle < 5000:
            state = stream.receive(timeout=10.0)
    assert state.v[0] == pytest.approx(0.0, abs=1e-9)
    assert abs(state.q[0] - 0.3) < 0.05  # it sagged a little before the integral took the load
    assert state.tau[0] == pytest.approx(9.81 * np.sin(state.q[0]), abs=1e-6)


def test_an_actuator_delay_holds_the_torque_back_by_whole_steps(client):
    # 5 ms of transport delay at 1 ms steps: the first five cycles deliver nothing, the sixth
    # the command; the state says both what was asked and what the joint got
    created = client.create_session(
        "pendulum", mode="lockstep", start=True,
        actuators=[hilsim.actuator("hinge", delay_s=5e-3)])
    assert created.info.config.actuators[0].delay_s == 5e-3
    state = client.step(created.session_id, tau=[1.0], steps=5)
    assert state.tau[0] == 0.0 and state.tau_commanded[0] == 1.0
    state = client.step(created.session_id, tau=[1.0], steps=1)
    assert state.tau[0] == 1.0
    with pytest.raises(hilsim.RpcError) as refused:
        client.create_session("pendulum", actuators=[hilsim.actuator("hinge", delay_s=1.0)])
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "delay 1 s is outside 0" in refused.value.message


def test_errors_are_rpc_errors_with_the_servers_code(client):
    with pytest.raises(hilsim.RpcError) as unknown:
        client.create_session("no_such_robot")
    assert unknown.value.code == grpc.StatusCode.NOT_FOUND
    assert "no_such_robot" in unknown.value.message
    created = client.create_session("pendulum", mode="realtime", start=True)
    with pytest.raises(hilsim.RpcError) as not_lockstep:
        client.step(created.session_id, [0.0])
    assert not_lockstep.value.code == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(ValueError):
        client.step(created.session_id, [float("nan")])  # refused before it is sent
    with pytest.raises(hilsim.RpcError) as gone:
        client.get_session(999)
    assert gone.value.code == grpc.StatusCode.NOT_FOUND


def test_only_the_owner_drives_its_session(client, server):
    created = client.create_session("pendulum", mode="lockstep", start=True)
    assert len(created.owner_secret) == 32
    assert created.owner_secret not in repr(created)
    with hilsim.SimulationClient(server) as stranger:
        assert stranger.get_session(created.session_id).session_id == created.session_id
        for call in (lambda: stranger.step(created.session_id, [0.0]),
                     lambda: stranger.pause_session(created.session_id),
                     lambda: stranger.close_session(created.session_id)):
            with pytest.raises(hilsim.RpcError) as denied:
                call()
            assert denied.value.code == grpc.StatusCode.PERMISSION_DENIED
            assert "owner secret" in denied.value.message
        stranger.set_owner_secret(created.session_id, created.owner_secret)
        assert stranger.step(created.session_id, [0.0], steps=3).cycle == 3
    with hilsim.SimulationClient(server, owner_secret=created.owner_secret) as given:
        assert given.pause_session(created.session_id).state == types_pb2.SESSION_STATE_PAUSED


def test_a_model_text_is_sent_as_text(client):
    with open(os.path.join(os.environ["HILSIM_MODEL_DIR"], "ur5.urdf")) as f:
        urdf = f.read()
    created = client.create_session("mybot.urdf", urdf=urdf, mode="lockstep", start=True)
    assert created.info.model.nv == 6
    with pytest.raises(hilsim.RpcError) as broken:
        client.create_session("broken.urdf", urdf="<robot name='x'><link name='a'/>\n<bad/>")
    assert broken.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "broken.urdf" in broken.value.message


def test_the_urdf_options_reach_texts_and_models_by_name(client):
    for floating_base, nv in ((False, 12), (True, 18)):
        created = client.create_session("solo12", floating_base=floating_base)
        assert created.info.model.nv == nv
        client.close_session(created.session_id)
    with pytest.raises(hilsim.RpcError) as refused:
        client.create_session("finger.urdf", urdf=FINGER_URDF)
    assert "massless: weld" in refused.value.message
    welded = client.create_session("finger.urdf", urdf=FINGER_URDF, massless="weld")
    assert welded.info.model.nv == 1
    assert "welded" in welded.info.model.warnings[0]
    client.close_session(welded.session_id)
    geared = client.create_session("finger.urdf", urdf=FINGER_URDF, massless="armature=0.01",
                                   mode="lockstep", start=True)
    assert geared.info.model.nv == 2
    # the finger's only inertia is the armature: 1 N·m for one 1 ms step gives 0.1 rad/s
    state = client.step(geared.session_id, [0.0, 1.0])
    assert state.v[1] == pytest.approx(0.1, rel=1e-12)
    client.close_session(geared.session_id)
    for bad in ("armature=0", "armature=x", "glue"):
        with pytest.raises(ValueError):
            client.create_session("finger.urdf", urdf=FINGER_URDF, massless=bad)
    with pytest.raises(hilsim.RpcError) as yaml_model:
        client.create_session("pendulum", inertia="balance")
    assert "YAML model" in yaml_model.value.message

def test_sdformat_and_mjcf_texts_run_alike(client):
    config = hilsim.v1.session_pb2.SessionConfig(initial_q=[0.5])
    finals = []
    for keyword, text in (("sdf", PENDULUM_SDF), ("mjcf", PENDULUM_MJCF)):
        created = client.create_session(f"pendulum.{keyword}", mode="lockstep", start=True,
                                        config=config, **{keyword: text})
        assert created.info.model.nv == 1
        finals.append(client.step(created.session_id, [0.0], steps=100).q[0])
        client.close_session(created.session_id)
    assert finals[0] < 0.5
    assert finals[0] == pytest.approx(finals[1], abs=1e-12)


def _run_with_drops(client, seed):
    """200 lockstep steps of the pendulum under a seeded drop_commands; the final q and stats."""
    created = client.create_session(
        "pendulum", mode="lockstep", start=True,
        faults=[hilsim.fault("drop_commands", rate=0.3, burst=2, start_s=0.02)] if seed else [],
        fault_seed=seed)
    for k in range(200):
        state = client.step(created.session_id, [2.0 * np.sin(0.05 * k)])
    return state, client.get_stats(created.session_id)


def test_scheduled_drops_follow_their_seed_and_lose_set_points_not_cycles(client):
    first, first_stats = _run_with_drops(client, 7)
    again, again_stats = _run_with_drops(client, 7)
    clean, _ = _run_with_drops(client, None)
    assert first.cycle == again.cycle == clean.cycle == 200  # lockstep: every command answered
    assert np.array_equal(first.q, again.q) and np.array_equal(first.v, again.v)
    assert first_stats.faults.commands_lost == again_stats.faults.commands_lost > 20
    assert not np.array_equal(first.q, clean.q)  # the lost set-points changed the motion


def test_an_injected_fault_shows_in_the_ground_truth_until_cleared(client):
    created = client.create_session("pendulum", mode="lockstep", start=True)
    sid = created.session_id
    injected = client.inject_fault(sid, hilsim.fault("cut_drive", joint="hinge", value=0.5))
    assert injected.id == 1
    truth = client.stream_states(sid, ground_truth=True)
    states = iter(truth)
    state = client.step(sid, [2.0], steps=3)
    assert state.tau[0] == 1.0 and state.faults == []  # the controller is not told
    actual = next(s for s in states if s.cycle == 3)
    assert actual.faults == [hilsim.ActiveFault(1, "cut_drive", "hinge")]
    client.clear_faults(sid, injected.id)
    state = client.step(sid, [2.0])
    assert state.tau[0] == 2.0
    truth.cancel()
    stats = client.get_stats(sid)
    assert stats.faults.started == 1 and stats.faults.ended == 1
    with pytest.raises(hilsim.RpcError) as refused:
        client.inject_fault(sid, hilsim.fault("lock_joint", joint="elbow"))
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "no joint 'elbow'" in refused.value.message
    with pytest.raises(ValueError):
        hilsim.fault("explode")


def test_sensor_command_and_joint_faults_over_the_wire(client):
    # a swinging pendulum in lockstep, one fault after another; each Step's answer (what the
    # controller gets) against the ground-truth stream's state of the same cycle
    config = hilsim.v1.session_pb2.SessionConfig(initial_q=[0.5])
    faults = [hilsim.fault("freeze_sensor", joint="hinge", start_s=0.020, duration_s=0.010),
              hilsim.fault("offset_sensor", joint="hinge", start_s=0.040, duration_s=0.010,
                           value=0.125),
              hilsim.fault("delay_states", start_s=0.060, duration_s=0.010, cycles=4),
              hilsim.fault("delay_commands", start_s=0.080, duration_s=0.010, cycles=3),
              hilsim.fault("free_joint", joint="hinge", start_s=0.100, duration_s=0.010)]
    created = client.create_session("pendulum", mode="lockstep", start=True, config=config,
                                    faults=faults)
    sid = created.session_id
    truth_stream = client.stream_states(sid, ground_truth=True)
    truths = iter(truth_stream)
    seen, truth = {}, {}
    for k in range(1, 121):
        seen[k] = client.step(sid, [0.01 * k])
        truth[k] = next(s for s in truths if s.cycle == k)
    truth_stream.cancel()
    for k in range(1, 121):
        index, state = k - 1, seen[k]  # the state of cycle k ends cycle index k − 1
        if 20 <= index < 30:
            assert state.measured and state.q[0] == truth[21].q[0], k  # frozen at onset
            assert truth[k].faults[0].type == "freeze_sensor"
        elif 40 <= index < 50:
            assert state.measured and state.q[0] == truth[k].q[0] + 0.125, k
        elif 60 <= index < 70:
            assert state.measured and state.q[0] == truth[k - 4].q[0], k
        else:
            assert not state.measured and state.q[0] == truth[k].q[0], k
        if 80 <= index < 83:  # nothing due yet: the last command before the delay holds
            assert truth[k].tau[0] == pytest.approx(0.80), k
        elif 83 <= index < 90:
            assert truth[k].tau[0] == pytest.approx(0.01 * (k - 3)), k
        elif 100 <= index < 110:
            assert truth[k].tau[0] == 0.0 and truth[k].tau_commanded[0] == pytest.approx(0.01 * k)
        else:
            assert truth[k].tau[0] == pytest.approx(0.01 * k), k
    stats = client.get_stats(sid)
    assert stats.faults.started == 5 and stats.faults.ended == 5
    assert stats.faults.commands_delayed == 10
