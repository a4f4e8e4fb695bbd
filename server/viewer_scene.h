// What the browser viewer draws of a session (proto/hilsim/v1/viewer.proto, docs/VIEWER.md): the
// scene, built once from the model (shapes from joint frames and inertias), and the frames, built
// from a published state on the viewer's own thread (forward kinematics in a Data of its own;
// the session's RT thread is never touched).
#pragma once

#include <cstdint>
#include <string>

#include <Eigen/Core>

#include "engine/model/data.h"
#include "hilsim/v1/viewer.pb.h"
#include "server/server_session.h"

namespace hilsim::server {

/// The scene of `session`: every body with its shapes in its own frame, closures, springs, the
/// model's extent at its initial configuration.
void buildViewerScene(ServerSession& session, v1::ViewerScene* scene);

/// The mesh file of visual `index` of `model`, when the scene offers it to the page (a mesh found
/// beside the model file, in a format the page reads); empty otherwise.
std::string viewerMeshFile(const Model& model, std::uint64_t index);

/// Fills frames for one model: holds the Data and vectors that forward kinematics needs, sized
/// once, so that building a frame allocates nothing but the message's own fields.
class ViewerPoser {
 public:
  explicit ViewerPoser(const Model& model);
  /// Poses, closure and spring points and flexible nodes of `frame` (nothing else) at the
  /// configuration `q` (nq values, from a published state).
  void pose(const google::protobuf::RepeatedField<double>& q, v1::ViewerFrame* frame);

 private:
  const Model& model_;
  Data data_;
  Eigen::VectorXd q_;
};

}  // namespace hilsim::server
