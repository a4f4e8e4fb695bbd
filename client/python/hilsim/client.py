"""gRPC side of the Python client: SimulationClient mirrors the C++ hilsim::client one
(client/simulation_client.h). Every call has a deadline; a failed call raises RpcError with the
server's status code and message."""

from __future__ import annotations

import dataclasses
import os
import queue
import threading
import time
from typing import Iterator, Optional, Sequence

import grpc
import numpy as np

from hilsim.v1 import control_pb2, service_pb2, service_pb2_grpc, session_pb2, types_pb2

_MODES = {
    "realtime": types_pb2.SESSION_MODE_REALTIME,
    "lockstep": types_pb2.SESSION_MODE_LOCKSTEP,
    "free": types_pb2.SESSION_MODE_FREE,
}


class RpcError(RuntimeError):
    """A gRPC call that failed: `code` (grpc.StatusCode) and the server's message."""

    def __init__(self, method: str, code: grpc.StatusCode, message: str):
        super().__init__(f"{method}: {code.name}: {message}")
        self.method = method
        self.code = code
        self.message = message


@dataclasses.dataclass
class Imu:
    """A floating base's IMU reading (control.proto Imu), in its base frame: orientation
    (w, x, y, z of the base in the world), angular_velocity [rad/s], linear_acceleration (the
    specific force, (0, 0, 9.81) at rest on level ground) [m/s²]."""

    orientation: np.ndarray
    angular_velocity: np.ndarray
    linear_acceleration: np.ndarray


@dataclasses.dataclass
class ActiveFault:
    """An injected fault acting in a state's cycle (ground-truth states only): its id, its type
    ("drop_commands", …, "stall") and its joint ("" for faults of no joint, "*" for every
    joint)."""

    id: int
    type: str
    joint: str


def _fault_type_name(value: int) -> str:
    return types_pb2.FaultType.Name(value).removeprefix("FAULT_TYPE_").lower()


@dataclasses.dataclass
class State:
    """One control cycle's state (control.proto State) with numpy arrays: q (nq), v and tau (nv)
    in the model's coordinate order [rad, m, rad/s, m/s, N·m, N]; times in ns on the clocks the
    proto names. tau is what the drives applied, tau_commanded what they were asked (equal to
    tau unless an actuator limit cut it); limit_force the joint stops' forces (nv, zeros when
    none pushes); contact_force the ground's force on each contact sphere in the world frame
    (n × 3) [N] and contact_depth how deep each sits (n) [m]. With sensor models
    (create_session(sensors=...)) `measured` is True and q, v, tau, contact_force and `imu`
    (orientation w x y z, angular_velocity, linear_acceleration in the base frame) are what the
    sensors read; stream_states(ground_truth=True) gives the truth, and there `faults` lists the
    injected faults acting in the cycle (ActiveFault; a controller is not told)."""

    session_id: int
    cycle: int
    time: float
    state: int
    q: np.ndarray
    v: np.ndarray
    tau: np.ndarray
    command_sequence: int
    command_client_send_time_ns: int
    command_receive_time_ns: int
    publish_time_ns: int
    send_time_ns: int
    watchdog_tripped: bool
    tau_commanded: np.ndarray
    limit_force: np.ndarray
    contact_force: np.ndarray
    contact_depth: np.ndarray
    measured: bool = False
    imu: Optional[Imu] = None
    faults: list[ActiveFault] = dataclasses.field(default_factory=list)

    @staticmethod
    def from_proto(message: control_pb2.State) -> "State":
        return State(
            session_id=message.session_id,
            cycle=message.cycle,
            time=message.time,
            state=message.state,
            q=np.array(message.q, dtype=float),
            v=np.array(message.v, dtype=float),
            tau=np.array(message.tau, dtype=float),
            command_sequence=message.command_sequence,
            command_client_send_time_ns=message.command_client_send_time_ns,
            command_receive_time_ns=message.command_receive_time_ns,
            publish_time_ns=message.publish_time_ns,
            send_time_ns=message.send_time_ns,
            watchdog_tripped=message.watchdog_tripped,
            # sparse on the wire: sent only when they differ from tau, from zero
            tau_commanded=np.array(message.tau_commanded or message.tau, dtype=float),
            limit_force=(np.array(message.limit_force, dtype=float) if message.limit_force
                         else np.zeros(len(message.v))),
            contact_force=np.array(message.contact_force, dtype=float).reshape(-1, 3),
            contact_depth=np.array(message.contact_depth, dtype=float),
            measured=message.measured,
            imu=(Imu(np.array(message.imu.orientation, dtype=float),
                     np.array(message.imu.angular_velocity, dtype=float),
                     np.array(message.imu.linear_acceleration, dtype=float))
                 if message.HasField("imu") else None),
            faults=[ActiveFault(f.id, _fault_type_name(f.type), f.joint) for f in message.faults],
        )

    @property
    def running(self) -> bool:
        return self.state == types_pb2.SESSION_STATE_RUNNING


@dataclasses.dataclass
class CreatedSession:
    """What CreateSession answers: the id, the UDP port and the UDP credentials (shown only here:
    the 32-byte key on a server that speaks MAC, the default, else the 16-byte token), and the
    full SessionInfo. hilsim.UdpController.for_session takes it."""

    session_id: int
    udp_port: int
    udp_token: bytes
    info: session_pb2.SessionInfo
    udp_key: bytes = b""
    # the owner secret: the calls that change the session carry it (the client that created the
    # session sends it by itself; another process passes it to set_owner_secret)
    owner_secret: str = ""

    def __repr__(self) -> str:  # never the secrets
        return (f"CreatedSession(session_id={self.session_id}, udp_port={self.udp_port}, "
                f"udp_authentication={session_pb2.UdpAuthentication.Name(self.info.udp_authentication)})")


def _finite(values: Sequence[float] | np.ndarray, name: str = "tau") -> list[float]:
    array = np.asarray(values, dtype=float).ravel()
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name}: every value must be finite")
    return array.tolist()


_INTERFACES = {
    "effort": session_pb2.COMMAND_INTERFACE_EFFORT,
    "position": session_pb2.COMMAND_INTERFACE_POSITION,
    "velocity": session_pb2.COMMAND_INTERFACE_VELOCITY,
}


def drive(joint: str, interface: str, *, kp: float = 0.0, kd: float = 0.0,
          ki: float = 0.0) -> session_pb2.JointDrive:
    """A joint's command interface for create_session(drives=...): "effort", "position" (a PD
    loop: kp > 0, kd > 0) or "velocity" (a PI loop: kd > 0, ki ≥ 0), run by the session every
    physics step (docs/REALISM.md). `joint` "*": every revolute, prismatic and planar joint no
    other entry names."""
    if interface not in _INTERFACES:
        raise ValueError(f"interface: {interface!r}, expected one of {sorted(_INTERFACES)}")
    return session_pb2.JointDrive(joint=joint, interface=_INTERFACES[interface], kp=kp, kd=kd,
                                  ki=ki)


def actuator(joint: str, *, time_constant_s: float = 0.0, delay_s: float = 0.0,
             resolution: float = 0.0, ripple: float = 0.0,
             ripple_period: float = 0.0) -> session_pb2.ActuatorModel:
    """A joint's actuator model for create_session(actuators=...): transport delay [s], torque
    quantum [N·m or N], first-order lag [s] and ripple (relative amplitude, period in the joint's
    coordinate [rad or m]) between its drive and the joint, every physics step
    (docs/REALISM.md). `joint` "*": every joint no other entry names."""
    return session_pb2.ActuatorModel(joint=joint, time_constant_s=time_constant_s,
                                     delay_s=delay_s, resolution=resolution, ripple=ripple,
                                     ripple_period=ripple_period)


_FAULT_TYPES = {_fault_type_name(value): value for value in types_pb2.FaultType.values()
                if value != types_pb2.FAULT_TYPE_UNSPECIFIED}


def fault(type: str, *, joint: str = "", start_s: Optional[float] = None,
          duration_s: float = 0.0, rate: Optional[float] = None, burst: int = 0, cycles: int = 0,
          value: float = 0.0) -> types_pb2.InjectedFault:
    """A fault for create_session(faults=...) or inject_fault (docs/REALISM.md, "Fault
    injection"): `type` one of drop_commands, delay_commands, drop_states, delay_states,
    freeze_sensor, offset_sensor, lock_joint, free_joint, cut_drive, stall; `joint` a joint's name
    or "*" for the sensor and joint faults; `start_s` in simulation time (None: at 0 when
    scheduled, at the next cycle when injected) and `duration_s` (0: until cleared); drops lose a
    burst of `burst` (default 1) with probability `rate` (default 1); delays are `cycles` control
    cycles; `value` the offset [rad or m] or the torque's fraction a cut drive keeps."""
    if type not in _FAULT_TYPES:
        raise ValueError(f"type: {type!r}, expected one of {sorted(_FAULT_TYPES)}")
    message = types_pb2.InjectedFault(type=_FAULT_TYPES[type], joint=joint,
                                      duration_s=duration_s, burst=burst, cycles=cycles,
                                      value=value)
    if start_s is not None:
        message.start_s = start_s
    if rate is not None:
        message.rate = rate
    return message


def _set_points(command: control_pb2.Command, tau, position, velocity) -> None:
    """Fills a command's set-point arrays (each nv finite values, or None: not sent)."""
    for name, values in (("tau", tau), ("position", position), ("velocity", velocity)):
        if values is not None:
            getattr(command, name).extend(_finite(values, name))


def _wrench(values: Optional[Sequence[float] | np.ndarray]) -> list[float]:
    """A base wrench (force in the world frame [N], then torque [N·m]): six finite values, or
    none."""
    if values is None:
        return []
    wrench = _finite(values, "base_wrench")
    if len(wrench) != 6:
        raise ValueError("base_wrench: six values (force x y z [N], torque x y z [N·m])")
    return wrench


class ControlStream:
    """The Control stream of one session (service.proto Control): commands in, States out.
    Reading runs on a thread of its own into a queue, so receive() takes a timeout. Close it (or
    use it as a context manager) to end the stream."""

    def __init__(self, stub: service_pb2_grpc.SimulationStub, session_id: int, metadata):
        self._session_id = session_id
        self._outgoing: "queue.Queue[Optional[control_pb2.Command]]" = queue.Queue()
        self._incoming: "queue.Queue[object]" = queue.Queue()
        self._sequence = 0
        self._call = stub.Control(self._requests(), metadata=metadata)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _requests(self) -> Iterator[control_pb2.Command]:
        while True:
            command = self._outgoing.get()
            if command is None:
                return
            yield command

    def _read(self) -> None:
        try:
            for message in self._call:
                self._incoming.put(State.from_proto(message))
        except grpc.RpcError as error:  # the stream's end or failure, for receive() to report
            self._incoming.put(error)
        self._incoming.put(None)

    def _send(self, steps: int, tau=None, position=None, velocity=None,
              base_wrench: list[float] = []) -> int:
        command = control_pb2.Command(
            session_id=self._session_id,
            sequence=self._sequence + 1,
            client_send_time_ns=time.monotonic_ns(),
            steps=steps,
            base_wrench=base_wrench,
        )
        _set_points(command, tau, position, velocity)
        self._sequence += 1
        self._outgoing.put(command)
        return self._sequence

    def sync(self, steps: int = 0) -> int:
        """A command without set-points: answered at once with the newest State (LOCKSTEP:
        after `steps` cycles with the set-points last applied). Returns its sequence number."""
        return self._send(steps)

    def send(self, tau: Optional[Sequence[float] | np.ndarray] = None, steps: int = 0,
             base_wrench: Optional[Sequence[float] | np.ndarray] = None, *,
             position: Optional[Sequence[float] | np.ndarray] = None,
             velocity: Optional[Sequence[float] | np.ndarray] = None) -> int:
        """Set-points for the next cycle (LOCKSTEP: for `steps` cycles), nv values each in v
        order: joint forces `tau` (efforts; feed-forward on position and velocity joints),
        `position` and `velocity` for the joints with those command interfaces; optionally a
        push on a floating base while they apply (force in the world frame [N], then torque
        [N·m]). Returns the sequence number the answering State echoes."""
        if tau is None and position is None and velocity is None:
            raise ValueError("send: give tau, position or velocity (sync() sends none)")
        return self._send(steps, tau, position, velocity, _wrench(base_wrench))

    def receive(self, timeout: float = 1.0) -> Optional[State]:
        """The next State, or None after `timeout` seconds. Raises RpcError when the stream
        failed, EOFError when it ended."""
        try:
            item = self._incoming.get(timeout=timeout)
        except queue.Empty:
            return None
        if item is None:
            self._incoming.put(None)
            raise EOFError("the Control stream has ended")
        if isinstance(item, grpc.RpcError):
            raise RpcError("Control", item.code(), item.details())
        return item

    def close(self) -> None:
        """Ends the stream from this side and waits for the reader."""
        self._outgoing.put(None)
        self._call.cancel()
        self._reader.join(timeout=5.0)

    def __enter__(self) -> "ControlStream":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class StateStream:
    """A StreamStates feed: iterate it for States; cancel() ends it from any thread."""

    def __init__(self, call):
        self._call = call

    def __iter__(self) -> Iterator[State]:
        try:
            for message in self._call:
                yield State.from_proto(message)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.CANCELLED:
                raise RpcError("StreamStates", error.code(), error.details()) from None

    def cancel(self) -> None:
        self._call.cancel()


_INERTIA_POLICIES = {"as_given": session_pb2.INERTIA_POLICY_AS_GIVEN,
                     "balance": session_pb2.INERTIA_POLICY_BALANCE,
                     "strict": session_pb2.INERTIA_POLICY_STRICT}


def _set_urdf_options(source: session_pb2.ModelSource, floating_base: bool,
                      inertia: Optional[str], massless: Optional[str]) -> None:
    """ModelSource's URDF options from their text forms (those of the CLI and the YAML wrapper)."""
    source.floating_base = floating_base
    if inertia is not None:
        if inertia not in _INERTIA_POLICIES:
            raise ValueError(f"inertia: {inertia!r}, expected one of {sorted(_INERTIA_POLICIES)}")
        source.inertia = _INERTIA_POLICIES[inertia]
    if massless is None or massless == "refuse":
        return
    if massless == "weld":
        source.massless = session_pb2.MASSLESS_POLICY_WELD
        return
    armature = massless.removeprefix("armature=")
    try:
        value = float(armature) if armature != massless else float("nan")
    except ValueError:
        value = float("nan")
    if not 0.0 < value <= 1e6:
        raise ValueError(f"massless: {massless!r}, expected 'refuse', 'weld' or "
                         "'armature=<value>' with 0 < value <= 1e6 [kg·m² or kg]")
    source.massless = session_pb2.MASSLESS_POLICY_ARMATURE
    source.massless_armature = value


class SimulationClient:
    """The Simulation service of one server (service.proto), as the C++ SimulationClient.

    `target`: "host:port" (default $HILSIM_SERVER or 127.0.0.1:50051); `token`: the access
    token (default $HILSIM_ACCESS_TOKEN), sent as `authorization: Bearer …`; `timeout`: the
    deadline of each unary call [s]; `owner_secret`: sent as `hilsim-owner` on the calls that
    change a session this client did not create (another process's owner secret, or the
    server's operator secret; default $HILSIM_OWNER_SECRET)."""

    def __init__(self, target: Optional[str] = None, token: Optional[str] = None,
                 timeout: float = 5.0, owner_secret: Optional[str] = None):
        self.target = target or os.environ.get("HILSIM_SERVER", "127.0.0.1:50051")
        token = token if token is not None else os.environ.get("HILSIM_ACCESS_TOKEN", "")
        self._metadata = [("authorization", f"Bearer {token}")] if token else []
        self._owner_secret = (owner_secret if owner_secret is not None
                              else os.environ.get("HILSIM_OWNER_SECRET", ""))
        self._owner_secrets: dict[int, str] = {}  # of the sessions this client created
        self._timeout = timeout
        self._channel = grpc.insecure_channel(self.target)
        self._stub = service_pb2_grpc.SimulationStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "SimulationClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def set_owner_secret(self, session_id: int, secret: str) -> None:
        """Drives `session_id` with `secret` from now on (a session another process created)."""
        self._owner_secrets[session_id] = secret

    def _metadata_for(self, session_id: int) -> list:
        secret = self._owner_secrets.get(session_id, self._owner_secret)
        return self._metadata + ([("hilsim-owner", secret)] if secret else [])

    def _call(self, name: str, request, owned_session: int = 0):
        """One unary call; `owned_session`: the session it changes (its owner secret is sent)."""
        metadata = self._metadata_for(owned_session) if owned_session else self._metadata
        try:
            return getattr(self._stub, name)(request, timeout=self._timeout, metadata=metadata)
        except grpc.RpcError as error:
            raise RpcError(name, error.code(), error.details()) from None

    # --- models and sessions ---------------------------------------------------------------

    def list_models(self) -> list[str]:
        """The names of the models the server offers, the default first."""
        return [m.name for m in self._call("ListModels", service_pb2.ListModelsRequest()).models]

    def create_session(self, model: str, *, mode: Optional[str] = None, rate_hz: float = 0.0,
                       substeps: int = 0, name: str = "",
                       idle_timeout_s: Optional[float] = None,
                       start: bool = False, urdf: Optional[str] = None,
                       yaml: Optional[str] = None, sdf: Optional[str] = None,
                       mjcf: Optional[str] = None,
                       config: Optional[session_pb2.SessionConfig] = None,
                       drives: Sequence[session_pb2.JointDrive] = (),
                       actuators: Sequence[session_pb2.ActuatorModel] = (),
                       sensors: Optional[session_pb2.SensorsConfig] = None,
                       faults: Sequence[types_pb2.InjectedFault] = (),
                       fault_seed: Optional[int] = None,
                       max_fault_delay: Optional[int] = None,
                       floating_base: bool = False, inertia: Optional[str] = None,
                       massless: Optional[str] = None) -> CreatedSession:
        """Creates a session on a model the server offers by name, or on a model text (`urdf`,
        `yaml`, `sdf` or `mjcf`, with `model` naming it in errors). `mode`: "realtime", "lockstep" or "free"
        (None: the server's default). Fields left 0 or None take the server's defaults;
        `config` gives any other SessionConfig field. `idle_timeout_s`: a lease (0: never).
        `drives`: the joints' command interfaces (hilsim.drive(...); none: efforts everywhere).
        `actuators`: their actuator models (hilsim.actuator(...); none: ideal actuators).
        `sensors`: what controllers read instead of the truth (a session_pb2.SensorsConfig:
        encoder resolution, noise, bias, delay, an IMU; docs/REALISM.md).
        `faults`: faults at set times (hilsim.fault(...)), drawing from `fault_seed`;
        `max_fault_delay`: the longest delay inject_fault may ask for [control cycles].
        `floating_base`, `inertia` ("as_given", "balance", "strict") and `massless` ("refuse",
        "weld", "armature=<kg·m²>"): how a URDF or SDFormat model is read, a text or one the
        server has by name (docs/MODEL_FORMAT.md, "URDF subset").
        `start`: start it at once (a session that cannot start is closed again)."""
        request = service_pb2.CreateSessionRequest()
        # a model text (the first given), named by `model` in errors; else a name
        texts = {"urdf": urdf, "yaml": yaml, "sdf": sdf, "mjcf": mjcf}
        given = next((field for field, text in texts.items() if text is not None), None)
        if given is not None:
            setattr(request.model, given, texts[given])
            request.model.source_name = model
        else:
            request.model.bundled_name = model
        _set_urdf_options(request.model, floating_base, inertia, massless)
        if config is not None:
            request.config.CopyFrom(config)
        if mode is not None:
            if mode not in _MODES:
                raise ValueError(f"mode: {mode!r}, expected one of {sorted(_MODES)}")
            request.config.mode = _MODES[mode]
        if rate_hz:
            request.config.control_rate_hz = rate_hz
        if substeps:
            request.config.substeps = substeps
        if name:
            request.config.name = name
        if idle_timeout_s is not None:
            request.config.idle_timeout_s = idle_timeout_s
        request.config.drives.extend(drives)
        request.config.actuators.extend(actuators)
        if sensors is not None:
            request.config.sensors.CopyFrom(sensors)
        request.config.faults.schedule.extend(faults)
        if fault_seed is not None:
            request.config.faults.seed = fault_seed
        if max_fault_delay is not None:
            request.config.faults.max_delay_cycles = max_fault_delay
        response = self._call("CreateSession", request)
        session_id = response.session.session_id
        if response.owner_secret:
            self._owner_secrets[session_id] = response.owner_secret
        info = response.session
        if start:
            try:
                info = self.start_session(session_id)
            except RpcError:
                try:  # created but not startable: not left behind
                    self.close_session(session_id)
                except RpcError:
                    pass  # the start's error is the one to report
                raise
        return CreatedSession(session_id, response.session.udp_port, response.udp_token, info,
                              response.udp_key, response.owner_secret)

    def _session(self, name: str, session_id: int, changes: bool = True):
        return self._call(name, service_pb2.SessionRequest(session_id=session_id),
                          session_id if changes else 0)

    def start_session(self, session_id: int) -> session_pb2.SessionInfo:
        return self._session("StartSession", session_id)

    def pause_session(self, session_id: int) -> session_pb2.SessionInfo:
        return self._session("PauseSession", session_id)

    def stop_session(self, session_id: int) -> session_pb2.SessionInfo:
        return self._session("StopSession", session_id)

    def reset_session(self, session_id: int, q=None, v=None) -> session_pb2.SessionInfo:
        request = service_pb2.ResetSessionRequest(session_id=session_id)
        if q is not None:
            request.q.extend(_finite(q, "q"))
        if v is not None:
            request.v.extend(_finite(v, "v"))
        return self._call("ResetSession", request, session_id)

    def close_session(self, session_id: int) -> session_pb2.SessionStats:
        """Stops and removes the session; returns its final statistics."""
        return self._session("CloseSession", session_id).final_stats

    def get_session(self, session_id: int) -> session_pb2.SessionInfo:
        return self._session("GetSession", session_id, changes=False)

    def list_sessions(self) -> list[session_pb2.SessionInfo]:
        return list(self._call("ListSessions", service_pb2.ListSessionsRequest()).sessions)

    def get_stats(self, session_id: int) -> session_pb2.SessionStats:
        return self._session("GetStats", session_id, changes=False)

    def inject_fault(self, session_id: int,
                     fault: types_pb2.InjectedFault) -> types_pb2.InjectedFault:
        """Injects `fault` (hilsim.fault(...)): it acts from the session's next control cycle (or
        its start_s, when later) for its duration, or until clear_faults; returns it with its id."""
        return self._call("InjectFault",
                          service_pb2.InjectFaultRequest(session_id=session_id, fault=fault),
                          session_id)

    def clear_faults(self, session_id: int, fault_id: int = 0) -> None:
        """Ends fault `fault_id` (0: every fault, scheduled ones too) at the next control cycle."""
        self._call("ClearFaults", service_pb2.ClearFaultsRequest(session_id=session_id,
                                                                 id=fault_id), session_id)

    # --- control ------------------------------------------------------------------------------

    def step(self, session_id: int, tau: Optional[Sequence[float] | np.ndarray] = None,
             steps: int = 1, base_wrench: Optional[Sequence[float] | np.ndarray] = None, *,
             position: Optional[Sequence[float] | np.ndarray] = None,
             velocity: Optional[Sequence[float] | np.ndarray] = None) -> State:
        """LOCKSTEP: `steps` control cycles with set-points (nv values each: joint forces `tau`,
        `position` and `velocity` for joints with those command interfaces; none given: zero
        torques), and optionally a push on a floating base during them (force in the world frame
        [N], then torque [N·m]); the State after the last."""
        command = control_pb2.Command(session_id=session_id, steps=steps,
                                      base_wrench=_wrench(base_wrench),
                                      client_send_time_ns=time.monotonic_ns())
        _set_points(command, tau, position, velocity)
        if not (command.tau or command.position or command.velocity):
            nv = self.get_session(session_id).model.nv
            command.tau.extend([0.0] * nv)  # an empty command would be a sync: no step
        return State.from_proto(self._call("Step", command, session_id))

    def control(self, session_id: int) -> ControlStream:
        """Opens the session's Control stream and binds it with a sync (its answer is the first
        State receive() returns)."""
        stream = ControlStream(self._stub, session_id, self._metadata_for(session_id))
        stream.sync()
        return stream

    def stream_states(self, session_id: int, decimation: int = 1,
                      ground_truth: bool = False) -> StateStream:
        """Every `decimation`-th State of the session as it is published, for as long as the
        returned stream is iterated (StreamStates): the simulated truth with `ground_truth`,
        else what the session's sensors read."""
        request = service_pb2.StreamStatesRequest(session_id=session_id, decimation=decimation,
                                                  ground_truth=ground_truth)
        return StateStream(self._stub.StreamStates(request, metadata=self._metadata))
