// Between the wire contract (hilsim.v1 messages) and the engine's and real-time loop's types:
// enumerations, model descriptions, statistics, and the resolution of a requested session
// configuration against the server's defaults and limits.
#pragma once

#include <cstdint>
#include <string>

#include "engine/integrators/step_limit.h"
#include "engine/model/model.h"
#include "hilsim/v1/session.pb.h"
#include "rt/events.h"
#include "rt/histogram.h"
#include "rt/session.h"
#include "server/server_config.h"

namespace hilsim::server {

/// Longest SessionConfig.name and ModelSource.source_name [bytes]: they are repeated in logs,
/// metrics labels, every SessionInfo and every error message about the model.
inline constexpr std::size_t kMaxNameBytes = 256;

v1::SessionState toProto(rt::SessionState state);
v1::SessionMode toProto(rt::SessionMode mode);
void toProto(const rt::FaultInfo& fault, const std::string& reason, v1::Fault* out);
void toProto(const rt::HistogramSummary& summary, v1::LatencySummary* out);
void toProto(const rt::WorkerStats& stats, v1::WorkerStats* out);

/// An injected fault from the wire (`where` names it in the message): "" and `out` filled, or
/// the INVALID_ARGUMENT message. A scheduled fault's absent start is 0, an injected one's the next
/// cycle. Ranges that depend on the model and the session are the session's to check.
std::string fromProto(const v1::InjectedFault& fault, bool scheduled, const std::string& where,
                      rt::FaultSpec* out);
/// An acting fault on the wire: its id, type and joint (Model::joint_names; "*": every joint).
void toProto(const rt::ActiveFault& fault, const Model& model, v1::InjectedFault* out);

/// Sizes, joints, coordinate labels, neutral configuration, gravity and mass of a model.
v1::ModelInfo describeModel(const Model& model, const std::string& name);

/// The fields of State a model's states carry beyond q, v and tau (control.proto).
struct StateExtras {
  bool tau_commanded = false;  ///< actuator limits: the commanded forces
  bool limit_force = false;    ///< enforced position limits: their forces
  int contacts = 0;            ///< contact spheres on an enabled ground: their force and depth
};
StateExtras stateExtras(const Model& model);

/// What a session's datagrams carry beyond its model's fields.
struct DatagramShape {
  bool mac = false;         ///< framed under MAC (28 bytes more; a UdpCommand without token)
  bool measured = false;    ///< states are sensor readings (State.measured)
  bool imu = false;         ///< states carry an IMU reading
  bool positions = false;   ///< commands carry positions (a position DoF)
  bool velocities = false;  ///< commands carry velocities (a position or velocity DoF)
};

/// Largest UdpState / UdpCommand datagram of a model with every field it carries set [bytes]:
/// the serialized message (TOKEN), or under MAC the frame around it (28 bytes more, and a
/// UdpCommand without token).
std::uint32_t udpStateMaxBytes(const Model& model, const DatagramShape& shape = {});
std::uint32_t udpCommandMaxBytes(const Model& model, const DatagramShape& shape = {});

/// Resolves a requested configuration: every field left 0 or unset by `request` takes the value
/// of `server.session_defaults`, then the contract's default; the result is checked against the
/// contract's ranges and the server's limits. On success fills `out` (model, initial state,
/// name included) and `effective` (every default filled in) and returns ""; otherwise returns
/// the INVALID_ARGUMENT message naming the field, the value and the allowed range.
/// `step_limit`: rk4StepLimit of the model at the session's initial q, when the caller has
/// computed it (outside its locks: an eigendecomposition of 2nv × 2nv); null: computed here.
std::string resolveSessionConfig(const v1::SessionConfig& request, const ServerConfig& server,
                                 std::shared_ptr<const Model> model, std::uint64_t session_id,
                                 rt::SessionConfig* out, v1::SessionConfig* effective,
                                 const StepLimit* step_limit = nullptr);

/// The StepLimit resolveSessionConfig checks the step against: at the request's initial_q when
/// it is nq finite values, else at the model's initial configuration.
StepLimit sessionStepLimit(const v1::SessionConfig& request, const Model& model);

/// Checks a position or velocity vector from a request: `size` finite values. "" when valid,
/// else the message ("initial_q: 6 values, the model has nq = 7").
std::string checkVector(const google::protobuf::RepeatedField<double>& values, int size,
                        const char* field, const char* size_name);

}  // namespace hilsim::server
