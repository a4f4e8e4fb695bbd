"""hilsim.engine (client/python/engine_module.cc): its results are the C++ engine's to the bit, the
physics hangs together, and bad input is refused with a clear message.

The bit-for-bit checks run the engine's functions from C++ in tests/client/python/
engine_reference.cc (HILSIM_ENGINE_REFERENCE, set by ctest; else <build>/tests/engine_reference)
on the same inputs, passed and printed as hex floats."""

import math
import os
import pathlib
import subprocess

import numpy as np
import pytest

from model_texts import FINGER_URDF, PENDULUM_MJCF, PENDULUM_SDF

engine = pytest.importorskip("hilsim.engine", reason="hilsim.engine not built (pybind11-dev?)")

# Relative agreement of two exact formulations, or of forward and inverse dynamics: the engine's
# contract (tests/support/tolerances.h kFormulationRelTol: backward-stable recursions on trees of
# up to 200 bodies; these have at most 19 dofs).
FORMULATION_TOL = 1e-10
# Central differences of step h on poses that turn at ≤ ~3 rad/s per unit dof and sit ≤ 1.3 m from
# the joints: truncation h² / 6 |f'''| ≲ 1e-12 · 30, rounding ε / h ≈ 2e-10; a wrong Jacobian
# entry is O(0.1).
FD_STEP = 1e-6
FD_TOL = 1e-8

# A base, an arm on a revolute joint, a slider on it, a wrist, a welded tool: no limits, so every
# formulation takes it. ROOT: the base's joint, a revolute (nq = nv = 4) or a free one (11, 10).
CHAIN_YAML = """version: 1
name: chain
bodies:
  - name: base
    joint: {ROOT}
    inertia: {mass: 3, com: [0, 0, 0.1], inertia: [0.05, 0.06, 0.04, 0, 0, 0]}
  - name: upper
    parent: base
    placement: {xyz: [0, 0, 0.3], rpy: [0.3, 0, 0]}
    joint: {type: revolute, name: shoulder, axis: [0, 1, 0], damping: 0.2, armature: 0.01}
    inertia: {mass: 1.5, com: [0.2, 0, 0], inertia: [0.01, 0.03, 0.03, 0.001, 0, 0]}
  - name: slider
    parent: upper
    placement: {xyz: [0.4, 0, 0]}
    joint: {type: prismatic, name: extend, axis: [1, 0, 0]}
    inertia: {mass: 0.8, com: [0, 0.05, 0], inertia: [0.004, 0.002, 0.004, 0, 0, 0]}
  - name: wrist
    parent: slider
    placement: {xyz: [0, 0.1, 0], rpy: [0, 0.5, 0.2]}
    joint: {type: revolute, name: twist, axis: [0, 0, 1]}
    inertia: {mass: 0.4, com: [0, 0, 0.05], inertia: [0.001, 0.001, 0.0005, 0, 0, 0]}
  - name: tool
    parent: wrist
    placement: {xyz: [0.05, 0.02, 0.15], rpy: [0.1, 0.2, 0.3]}
    joint: {type: fixed}
"""


def chain(free_root=False):
    root = ("{type: free, name: root}" if free_root
            else "{type: revolute, name: yaw, axis: [0, 0, 1]}")
    return engine.load_model_string(CHAIN_YAML.replace("{ROOT}", root), format="yaml")


def reference_executable():
    path = os.environ.get("HILSIM_ENGINE_REFERENCE")
    if not path:
        import hilsim

        path = pathlib.Path(hilsim.__file__).resolve().parents[2] / "tests" / "engine_reference"
    if not os.path.exists(path):
        pytest.fail(f"{path} not found: build the engine_reference target")
    return str(path)


def hexes(values):
    return ",".join(float(x).hex() for x in np.ravel(values))


def reference(model_source, requests, floating=False):
    """The reference's answers: arrays, or the refusal's message."""
    arguments = [reference_executable(), model_source] + (["floating"] if floating else [])
    result = subprocess.run(arguments, input="\n".join(requests) + "\n", capture_output=True,
                            text=True, timeout=120, check=True)
    answers = []
    for line in result.stdout.splitlines():
        if line.startswith("error: "):
            answers.append(line[len("error: "):])
        else:
            answers.append(np.array([float.fromhex(x) for x in line.split()]))
    assert len(answers) == len(requests), result.stdout + result.stderr
    return answers


def same_bits(a, b):
    a = np.ascontiguousarray(a, dtype=np.float64).ravel()
    b = np.ascontiguousarray(b, dtype=np.float64).ravel()
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def random_state(model, rng, free_root=False):
    """q inside the middle of the joint limits (so that no limit row acts), unit quaternion of a
    free root, small modal coordinates; v and a, tau of the model's size."""
    q = np.empty(model.nq)
    offset = 0  # q index minus v index: 1 after a free joint's quaternion
    if free_root:
        q[:3] = rng.normal(size=3)
        quaternion = rng.normal(size=4)
        q[3:7] = quaternion / np.linalg.norm(quaternion)
        offset = 1
    for d, name in enumerate(model.v_names):
        k = d + offset
        if free_root and d < 6:
            continue
        low, high = model.lower_limit[d], model.upper_limit[d]
        if "_mode_" in name:
            q[k] = 0.02 * rng.normal()
        elif math.isfinite(low) and math.isfinite(high):
            middle, half = 0.5 * (low + high), 0.3 * (high - low)
            q[k] = rng.uniform(middle - half, middle + half)
        else:
            q[k] = rng.uniform(-math.pi, math.pi)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


# --- the model ------------------------------------------------------------------------------------

def test_a_bundled_model_describes_itself():
    model = engine.load_model("iiwa14")
    assert model.name == "iiwa14"
    assert (model.nq, model.nv, model.nbodies) == (7, 7, 8)
    assert model.body_names[0] == "world" and len(model.body_names) == 8
    assert model.joint_names == [f"iiwa_joint_{k}" for k in range(1, 8)]
    assert model.v_names == model.joint_names and model.q_names == model.joint_names
    assert "iiwa_link_ee" in model.frame_names and "iiwa_link_7" in model.frame_names
    np.testing.assert_array_equal(model.gravity, [0.0, 0.0, -9.81])
    np.testing.assert_array_equal(model.neutral_configuration, np.zeros(7))
    assert model.initial_configuration.shape == (7,)
    assert np.all(model.lower_limit < 0.0) and np.all(model.upper_limit > 0.0)
    assert np.all(np.isfinite(model.effort_limit)) and np.all(np.isfinite(model.velocity_limit))
    assert model.total_mass > 20.0
    assert model.nconstraints == 0 and isinstance(model.load_warnings, list)
    assert "iiwa14" in repr(model)


def test_load_options_and_texts():
    floating = engine.load_model("iiwa14", floating_base=True)
    assert (floating.nq, floating.nv) == (14, 13)
    np.testing.assert_array_equal(floating.neutral_configuration[3:7], [1.0, 0.0, 0.0, 0.0])
    tree = chain()
    assert tree.joint_names == ["yaw", "shoulder", "extend", "twist"]
    assert "tool" in tree.frame_names and "tool" not in tree.body_names
    loop = engine.load_model(str(pathlib.Path(__file__).parents[3] / "config" / "models" /
                                 "four_bar.yaml"))
    assert loop.nconstraints == 5
    yaml = engine.load_model_string("version: 1\nname: one\nbodies:\n  - name: b\n"
                                    "    joint: {type: revolute, axis: [0, 0, 1]}\n"
                                    "    inertia: {mass: 1, com: [0.1, 0, 0], "
                                    "inertia: [0.01, 0.01, 0.01, 0, 0, 0]}\n", format="yaml")
    assert (yaml.name, yaml.nv) == ("one", 1)


def test_formulations_are_the_registrys():
    names = engine.formulations()
    assert names[0] == "aba"
    assert set(names) == {"aba", "crba", "rtmm", "sr1", "sr2", "hdca"}


# --- the same bits as the engine ------------------------------------------------------------------

# (model source, free root, frames to check)
BIT_CASES = [
    ("iiwa14", False, ["iiwa_link_ee", "iiwa_link_3"]),
    ("iiwa14", True, ["iiwa_link_ee"]),
    ("four_bar", False, ["rocker"]),
    ("flexible_arm", False, ["payload"]),
    ("quadruped", True, ["FL_FOOT"]),
]


@pytest.mark.parametrize("source,free_root,frames", BIT_CASES,
                         ids=["iiwa14", "iiwa14-floating", "four_bar", "flexible_arm",
                              "quadruped"])
def test_results_are_the_engines_to_the_bit(source, free_root, frames):
    floating = free_root and source == "iiwa14"
    model = engine.load_model(source, floating_base=floating)
    for frame in frames:
        assert frame in model.frame_names
    rng = np.random.default_rng(48)
    requests, expected = [], []
    for _ in range(3):
        q, v, x = random_state(model, rng, free_root)
        Q, V, X = hexes(q), hexes(v), hexes(x)
        requests += [f"rnea {Q} {V} {X}", f"gravity {Q}", f"crba {Q}"]
        expected += [lambda q=q, v=v, x=x: engine.rnea(model, q, v, x),
                     lambda q=q: engine.gravity(model, q), lambda q=q: engine.crba(model, q)]
        for name in engine.formulations():
            requests.append(f"fd {name} {Q} {V} {X}")
            expected.append(lambda q=q, v=v, x=x, name=name:
                            engine.forward_dynamics(model, q, v, x, formulation=name))
        for frame in frames:
            requests.append(f"placement {frame} {Q}")
            expected.append(lambda q=q, frame=frame: engine.frame_placement(model, q, frame))
            for ref in ("world", "local", "local_world_aligned"):
                requests.append(f"jacobian {frame} {ref} {Q}")
                expected.append(lambda q=q, frame=frame, ref=ref:
                                engine.frame_jacobian(model, q, frame, reference=ref))
    answers = reference(source, requests, floating)
    computed = 0
    for request, answer, call in zip(requests, answers, expected):
        if isinstance(answer, str):  # refused by the registry: the same reason from Python
            with pytest.raises(ValueError) as refused:
                call()
            assert str(refused.value) == answer, request
        else:
            assert same_bits(call(), answer), request
            computed += 1
    assert computed >= len(requests) // 2


def test_a_constrained_evaluation_does_not_depend_on_the_ones_before():
    # the quadruped's feet in the ground: contact and friction rows, whose solver warm-starts
    model = engine.load_model("quadruped")
    q = model.initial_configuration.copy()
    q[2] -= 0.01
    v, tau = np.zeros(model.nv), np.zeros(model.nv)
    first = engine.forward_dynamics(model, q, v, tau)
    other = engine.forward_dynamics(model, q, v + 0.5, tau + 3.0)
    again = engine.forward_dynamics(model, q, v, tau)
    assert same_bits(first, again)
    assert not np.allclose(first, other)
    tree = engine.forward_dynamics(model, q, v, tau, constraints=False)
    assert np.max(np.abs(tree - first)) > 1.0  # the ground holds it up


@pytest.mark.parametrize("source,integrator", [("iiwa14", "rk4"), ("four_bar", "rk4"),
                                               ("quadruped", "euler")])
def test_the_simulator_steps_as_the_engines(source, integrator):
    model = engine.load_model(source)
    rng = np.random.default_rng(5)
    q = model.initial_configuration
    v = 0.1 * rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    simulator = engine.Simulator(model, formulation="aba", integrator=integrator, dt=1e-3)
    simulator.set_state(q, v)
    simulator.step(tau, steps=50)
    assert simulator.time == pytest.approx(0.05, rel=1e-12)
    answer, = reference(source, [f"simulate aba {integrator} {1e-3!r} 50 {hexes(q)} {hexes(v)} "
                                 f"{hexes(tau)}"])
    assert same_bits(np.r_[simulator.q, simulator.v], answer)
    assert not np.array_equal(simulator.q, q)


def test_a_simulator_refuses_what_it_cannot_run():
    model = engine.load_model("iiwa14")
    with pytest.raises(ValueError, match=r"unknown integrator 'leapfrog'"):
        engine.Simulator(model, integrator="leapfrog")
    with pytest.raises(ValueError, match=r"dt must be a finite number > 0"):
        engine.Simulator(model, dt=0.0)
    simulator = engine.Simulator(model)
    with pytest.raises(ValueError, match=r"tau: expected a 1-D array of 7 values"):
        simulator.step(np.zeros(6))
    with pytest.raises(ValueError, match=r"steps must be >= 0"):
        simulator.step(np.zeros(7), steps=-1)


# --- physics --------------------------------------------------------------------------------------

@pytest.fixture(params=[(False, "iiwa14"), (False, "chain"), (True, "chain")],
                ids=["iiwa14", "chain", "chain-floating"])
def tree(request):
    free_root, name = request.param
    if name == "iiwa14":
        return engine.load_model("iiwa14"), free_root
    return chain(free_root), free_root


def test_the_mass_matrix_is_symmetric_positive_definite(tree):
    model, free_root = tree
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, _, _ = random_state(model, rng, free_root)
        M = engine.crba(model, q)
        assert M.shape == (model.nv, model.nv)
        # crba mirrors the blocks between joints exactly; a joint's own block Sᵀ (P S) is a product
        # of its own, symmetric to a few roundings (a free joint's 6 x 6: 3e-16 of 5.7 seen)
        assert np.max(np.abs(M - M.T)) <= 1e-14 * np.max(np.abs(M))
        assert np.min(np.linalg.eigvalsh(M)) > 0.0


def test_forward_and_inverse_dynamics_invert_each_other(tree):
    model, free_root = tree
    rng = np.random.default_rng(2)
    for _ in range(5):
        q, v, tau = random_state(model, rng, free_root)
        for name in engine.formulations():
            try:
                qdd = engine.forward_dynamics(model, q, v, tau, formulation=name)
            except ValueError:
                assert model.name == "iiwa14"  # limits: the formulations without the stage
                continue
            back = engine.rnea(model, q, v, qdd)
            assert np.max(np.abs(back - tau)) <= FORMULATION_TOL * max(1.0, np.max(np.abs(tau)))
        # M q̈ + bias = τ with the bias rnea(q, v, 0) and gravity = rnea(q, 0, 0)
        qdd = engine.forward_dynamics(model, q, v, tau)
        bias = engine.rnea(model, q, v, np.zeros(model.nv))
        lhs = engine.crba(model, q) @ qdd + bias
        assert np.max(np.abs(lhs - tau)) <= FORMULATION_TOL * max(1.0, np.max(np.abs(tau)))
        assert same_bits(engine.gravity(model, q),
                         engine.rnea(model, q, np.zeros(model.nv), np.zeros(model.nv)))


def test_every_formulation_gives_the_same_accelerations():
    model = chain(free_root=True)
    rng = np.random.default_rng(3)
    q, v, tau = random_state(model, rng, free_root=True)
    results = {name: engine.forward_dynamics(model, q, v, tau, formulation=name)
               for name in engine.formulations()}
    aba = results["aba"]
    for name, qdd in results.items():
        assert np.max(np.abs(qdd - aba)) <= FORMULATION_TOL * max(1.0, np.max(np.abs(aba))), name


def placement_derivative(model, q, frame, d):
    """d/dt of the frame's pose along q + e_d t (a model without quaternions), centrally."""
    step = np.zeros(model.nq)
    step[d] = FD_STEP
    plus = engine.frame_placement(model, q + step, frame)
    minus = engine.frame_placement(model, q - step, frame)
    return (plus - minus) / (2.0 * FD_STEP)


@pytest.mark.parametrize("name,frame", [("iiwa14", "iiwa_link_ee"), ("chain", "tool"),
                                         ("flexible_arm", "payload")])
def test_the_jacobian_is_the_derivative_of_the_placement(name, frame):
    model = chain() if name == "chain" else engine.load_model(name)
    rng = np.random.default_rng(4)
    q, _, _ = random_state(model, rng)
    T = engine.frame_placement(model, q, frame)
    R, p = T[:3, :3], T[:3, 3]
    J_world = engine.frame_jacobian(model, q, frame, reference="world")
    J_local = engine.frame_jacobian(model, q, frame, reference="local")
    J_aligned = engine.frame_jacobian(model, q, frame)  # local_world_aligned by default
    for d in range(model.nv):
        T_dot = placement_derivative(model, q, frame, d)
        W = T_dot[:3, :3] @ R.T  # [ω]× in the world
        omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
        p_dot = T_dot[:3, 3]
        scale = max(1.0, np.max(np.abs(J_aligned[:, d])))
        assert np.max(np.abs(J_aligned[:, d] - np.r_[omega, p_dot])) <= FD_TOL * scale, d
        assert np.max(np.abs(J_local[:, d] - np.r_[R.T @ omega, R.T @ p_dot])) <= FD_TOL * scale
        # in W about W's origin: the velocity of the body's point at the origin
        assert np.max(np.abs(J_world[:, d] - np.r_[omega, p_dot - np.cross(omega, p)])) \
            <= FD_TOL * max(scale, np.max(np.abs(J_world[:, d])))


def test_forward_kinematics_gives_every_frame():
    model = engine.load_model("iiwa14")
    q = np.linspace(-0.5, 0.5, 7)
    poses = engine.forward_kinematics(model, q)
    assert set(poses) == set(model.frame_names)
    np.testing.assert_array_equal(poses["world"], np.eye(4))
    for name, T in poses.items():
        assert same_bits(T, engine.frame_placement(model, q, name)), name
        np.testing.assert_allclose(T[:3, :3] @ T[:3, :3].T, np.eye(3), atol=1e-14)
        np.testing.assert_array_equal(T[3], [0.0, 0.0, 0.0, 1.0])


# --- refusals -------------------------------------------------------------------------------------

def test_bad_inputs_are_refused_with_what_was_expected():
    model = engine.load_model("iiwa14")
    q, v = np.zeros(7), np.zeros(7)
    with pytest.raises(ValueError, match=r"q: expected a 1-D array of 7 values \(nq\), got "
                                         r"shape \(6,\)"):
        engine.gravity(model, np.zeros(6))
    with pytest.raises(ValueError, match=r"v: expected a 1-D array of 7 values \(nv\), got "
                                         r"shape \(7, 1\)"):
        engine.rnea(model, q, np.zeros((7, 1)), v)
    with pytest.raises(ValueError, match=r"tau\[3\] is not finite"):
        engine.forward_dynamics(model, q, v, np.array([0, 0, 0, np.nan, 0, 0, 0]))
    with pytest.raises(ValueError, match=r"a\[0\] is not finite"):
        engine.rnea(model, q, v, np.array([np.inf, 0, 0, 0, 0, 0, 0]))
    with pytest.raises(ValueError, match=r"unknown formulation 'featherstone' \(expected aba, "):
        engine.forward_dynamics(model, q, v, v, formulation="featherstone")
    with pytest.raises(ValueError, match=r"unknown frame 'flange' in model 'iiwa14' \(frames: "):
        engine.frame_jacobian(model, q, "flange")
    with pytest.raises(ValueError, match=r"unknown frame 'flange'"):
        engine.frame_placement(model, q, "flange")
    with pytest.raises(ValueError, match=r"unknown reference 'body' \(expected world, local"):
        engine.frame_jacobian(model, q, "iiwa_link_ee", reference="body")
    floating = engine.load_model("iiwa14", floating_base=True)
    q_bad = floating.neutral_configuration.copy()
    q_bad[3] = 2.0
    with pytest.raises(ValueError, match=r"q\[3:7\]: the quaternion of joint '.*' has norm 2"):
        engine.gravity(floating, q_bad)
    # a list is an array like any other
    assert same_bits(engine.gravity(model, [0.0] * 7), engine.gravity(model, q))


def test_a_formulation_is_refused_with_the_registrys_reason():
    flexible = engine.load_model("flexible_arm")
    q = flexible.neutral_configuration
    z = np.zeros(flexible.nv)
    with pytest.raises(ValueError, match="rtmm") as refused:
        engine.forward_dynamics(flexible, q, z, z, formulation="rtmm")
    assert "aba" in str(refused.value)  # it names the formulations that can


def test_model_errors_carry_the_loaders_message():
    with pytest.raises(engine.ModelError, match=r"unknown model 'no_such_robot'"):
        engine.load_model("no_such_robot")
    assert issubclass(engine.ModelError, ValueError)
    with pytest.raises(engine.ModelError):
        engine.load_model_string("<robot name='r'><link name='a'/><joint name='j' "
                                 "type='revolute'><parent link='a'/><child link='b'/></joint>"
                                 "</robot>")
    with pytest.raises(ValueError, match="inertia: 'exact': as_given, balance or strict"):
        engine.load_model("iiwa14", inertia="exact")
    with pytest.raises(ValueError, match="massless: 'glue': refuse, weld, or armature="):
        engine.load_model("iiwa14", massless="glue")
    with pytest.raises(ValueError, match="unknown format 'json'"):
        engine.load_model_string("{}", format="json")
    with pytest.raises(engine.ModelError):
        engine.load_model_string("<sdf/>", format="sdf")
    with pytest.raises(ValueError, match="floating_base, inertia and massless apply to URDF"):
        engine.load_model_string("version: 1", format="yaml", floating_base=True)


def test_sdformat_and_mjcf_texts_give_the_same_pendulum():
    sdf = engine.load_model_string(PENDULUM_SDF, format="sdf")
    mjcf = engine.load_model_string(PENDULUM_MJCF, format="mjcf")
    q = np.array([0.5])
    # I about the pivot = 0.01 + 1 · 0.5² kg·m²; gravity's torque −m g l sin q
    for model in (sdf, mjcf):
        assert engine.crba(model, q)[0, 0] == pytest.approx(0.26, rel=1e-14)
        assert engine.gravity(model, q)[0] == pytest.approx(9.81 * 0.5 * np.sin(0.5), rel=1e-14)
    with pytest.raises(engine.ModelError, match="massless: weld"):
        engine.load_model_string(FINGER_URDF)
    assert engine.load_model_string(FINGER_URDF, massless="weld").nv == 1
    assert engine.load_model_string(FINGER_URDF, massless="armature=0.5").nv == 2
