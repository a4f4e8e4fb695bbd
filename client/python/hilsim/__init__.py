"""Python client of hilsim-server: sessions, lockstep steps, the Control stream and state
streams over gRPC, and a UDP controller for the 1 kHz path, with numpy arrays in and out.

    import hilsim
    client = hilsim.SimulationClient("127.0.0.1:50051")
    created = client.create_session("iiwa14", mode="lockstep", start=True)
    state = client.step(created.session_id, tau=[0.0] * 7, steps=10)
    print(state.time, state.q)

The generated protobuf modules are `hilsim.v1.*_pb2` (built from proto/ with protoc; see
docs/PYTHON.md). The wire contract is docs/PROTOCOL.md.
"""

from hilsim.client import (
    ActiveFault,
    ControlStream,
    CreatedSession,
    Imu,
    RpcError,
    SimulationClient,
    State,
    StateStream,
    actuator,
    drive,
    fault,
)
from hilsim.udp import UdpController

__all__ = [
    "ActiveFault",
    "ControlStream",
    "CreatedSession",
    "Imu",
    "RpcError",
    "SimulationClient",
    "State",
    "StateStream",
    "UdpController",
    "actuator",
    "drive",
    "fault",
]
