"""The hilsim dynamics engine in process, with numpy arrays in and out (docs/PYTHON.md, "Engine").

    from hilsim import engine
    model = engine.load_model("iiwa14")
    q = model.neutral_configuration
    tau = engine.gravity(model, q)                    # holds the arm still at q [N·m]
    M = engine.crba(model, q)                         # joint-space inertia (nv x nv)
    qdd = engine.forward_dynamics(model, q, np.zeros(model.nv), tau, formulation="aba")
    J = engine.frame_jacobian(model, q, "iiwa_link_7", reference="local_world_aligned")

Units are SI; q, v and tau follow docs/NOTATION.md (a free joint's q is position then quaternion
w, x, y, z; its v the linear velocity in the world, then the angular velocity in the body). The
results are those of the C++ engine, bit for bit. A Model keeps the engine's workspaces and
reuses them from call to call; calls hold the interpreter lock, so threads take turns on it.
"""

from hilsim._engine import (
    Model,
    ModelError,
    Simulator,
    crba,
    formulations,
    forward_dynamics,
    forward_kinematics,
    frame_jacobian,
    frame_placement,
    gravity,
    load_model,
    load_model_string,
    rnea,
)

__all__ = [
    "Model",
    "ModelError",
    "Simulator",
    "crba",
    "formulations",
    "forward_dynamics",
    "forward_kinematics",
    "frame_jacobian",
    "frame_placement",
    "gravity",
    "load_model",
    "load_model_string",
    "rnea",
]
