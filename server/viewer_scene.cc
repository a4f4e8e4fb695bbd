#include "server/viewer_scene.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <string>

#include <Eigen/Eigenvalues>
#include <Eigen/Geometry>

#include "engine/algorithms/forward_kinematics.h"

namespace hilsim::server {
namespace {

void setVector(google::protobuf::RepeatedField<double>* out, const Vector3& p) {
  out->Clear();
  out->Add(p.x());
  out->Add(p.y());
  out->Add(p.z());
}

void setRotation(google::protobuf::RepeatedField<double>* out, const Matrix3& r) {
  const Eigen::Quaterniond quaternion(r);
  out->Clear();
  out->Add(quaternion.w());
  out->Add(quaternion.x());
  out->Add(quaternion.y());
  out->Add(quaternion.z());
}

v1::ViewerShape* addShape(v1::ViewerBody* body, v1::ViewerShape::Kind kind,
                          v1::ViewerShape::Role role, const Vector3& position,
                          const Matrix3& rotation, std::initializer_list<double> size) {
  v1::ViewerShape* shape = body->add_shapes();
  shape->set_kind(kind);
  shape->set_role(role);
  for (const double s : size) shape->add_size(s);
  setVector(shape->mutable_position(), position);
  setRotation(shape->mutable_rotation(), rotation);
  return shape;
}

/// A rotation that takes z onto the unit vector `direction`.
Matrix3 zOnto(const Vector3& direction) {
  return Eigen::Quaterniond::FromTwoVectors(Vector3::UnitZ(), direction).toRotationMatrix();
}

/// The cylinder of radius `radius` from `from` to `to` (in the body frame).
void addSegment(v1::ViewerBody* body, const Vector3& from, const Vector3& to, double radius) {
  const Vector3 d = to - from;
  const double length = d.norm();
  if (length < 1e-9) return;
  addShape(body, v1::ViewerShape::KIND_CYLINDER, v1::ViewerShape::ROLE_LINK, 0.5 * (from + to),
           zOnto(d / length), {std::min(radius, 0.25 * length), length});
}

/// Body origins at the initial configuration: how far the model reaches from W's origin [m].
double modelExtent(const Model& model) {
  Data data(model, DataWorkspace::kPerBody);
  forwardKinematics(model, data, model.initialConfiguration());
  double extent = 0.0;
  for (int i = 1; i < model.nbodies; ++i) {
    extent = std::max(extent, data.X_WB[i].translation.norm());
    extent = std::max(extent, data.X_WB[i].actPoint(model.inertias[i].com).norm());
  }
  return std::max(extent, 0.2);  // a single body at the origin still gets a visible ground
}

/// Segments from body i's frame to every child joint, to the frames of links welded into it, to
/// its closure frames and spring points.
void addSegments(const Model& model, int i, double radius, v1::ViewerBody* body) {
  const bool flexible = model.nmodes[i] > 0;
  for (int child = i + 1; child < model.nbodies; ++child) {
    if (model.parent[child] != i) continue;
    // a child on a flexible body's node: the body itself is drawn deformed through its nodes
    if (flexible && model.parent_node[child] >= 0) continue;
    addSegment(body, Vector3::Zero(), model.joint_placement[child].translation, radius);
  }
  for (const Frame& frame : model.frames) {
    if (frame.body == i) addSegment(body, Vector3::Zero(), frame.placement.translation, radius);
  }
  for (const LoopClosure& loop : model.loops) {
    if (loop.body_a == i) addSegment(body, Vector3::Zero(), loop.frame_a.translation, radius);
    if (loop.body_b == i) addSegment(body, Vector3::Zero(), loop.frame_b.translation, radius);
  }
  for (const SpringDamper& spring : model.force_elements) {
    if (spring.body_a == i) addSegment(body, Vector3::Zero(), spring.point_a, 0.5 * radius);
    if (spring.body_b == i) addSegment(body, Vector3::Zero(), spring.point_b, 0.5 * radius);
  }
}

/// The format of a mesh file the page can draw ("stl", "obj"), from its extension; empty
/// otherwise (Collada and others: not drawn).
std::string meshFormat(const VisualShape& visual) {
  if (visual.geometry != VisualShape::Geometry::kMesh || visual.mesh_file.empty()) return {};
  std::string extension = std::filesystem::path(visual.mesh_file).extension().string();
  for (char& c : extension) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (extension == ".stl") return "stl";
  if (extension == ".obj") return "obj";
  return {};
}

/// Whether the page can draw this visual: a primitive, or a mesh file it can read.
bool drawable(const VisualShape& visual) {
  return visual.geometry != VisualShape::Geometry::kMesh || !meshFormat(visual).empty();
}

/// Body i's own visual geometry (URDF <visual>): boxes, cylinders, spheres, and meshes found
/// beside the model file in a format the page reads.
void addVisuals(const Model& model, std::uint64_t session, int i, v1::ViewerBody* body) {
  for (std::size_t k = 0; k < model.visuals.size(); ++k) {
    const VisualShape& visual = model.visuals[k];
    if (visual.body != i || !drawable(visual)) continue;
    const Vector3& s = visual.size;
    v1::ViewerShape* shape = nullptr;
    switch (visual.geometry) {
      case VisualShape::Geometry::kBox:
        shape = addShape(body, v1::ViewerShape::KIND_BOX, v1::ViewerShape::ROLE_VISUAL,
                         visual.placement.translation, visual.placement.rotation,
                         {s.x(), s.y(), s.z()});
        break;
      case VisualShape::Geometry::kCylinder:
        shape = addShape(body, v1::ViewerShape::KIND_CYLINDER, v1::ViewerShape::ROLE_VISUAL,
                         visual.placement.translation, visual.placement.rotation, {s.x(), s.y()});
        break;
      case VisualShape::Geometry::kSphere:
        shape = addShape(body, v1::ViewerShape::KIND_SPHERE, v1::ViewerShape::ROLE_VISUAL,
                         visual.placement.translation, visual.placement.rotation, {s.x()});
        break;
      case VisualShape::Geometry::kMesh:
        shape = addShape(body, v1::ViewerShape::KIND_MESH, v1::ViewerShape::ROLE_VISUAL,
                         visual.placement.translation, visual.placement.rotation, {});
        shape->set_mesh_url("/api/sessions/" + std::to_string(session) + "/meshes/" +
                            std::to_string(k));
        shape->set_mesh_format(meshFormat(visual));
        setVector(shape->mutable_scale(), visual.scale);
        break;
    }
    if (shape != nullptr && visual.rgba[3] > 0.0) {
      for (int k = 0; k < 4; ++k) shape->add_rgba(visual.rgba[k]);
    }
  }
}

}  // namespace

void buildViewerScene(ServerSession& session, v1::ViewerScene* scene) {
  const Model& model = session.model();
  scene->Clear();
  scene->set_session_id(session.id());
  scene->set_session_name(session.name());
  *scene->mutable_model() = session.modelInfo();
  scene->set_control_period_ns(
      static_cast<std::int64_t>(std::llround(1e9 / session.effectiveConfig().control_rate_hz())));
  scene->set_mode(session.effectiveConfig().mode());
  const double extent = modelExtent(model);
  scene->set_extent(extent);
  // One thickness for the whole model, from its size: segments of a 1 m arm are 2 cm thick.
  const double radius = std::clamp(0.015 * extent, 0.002, 0.05);

  // The model's own visuals, where it has drawable ones.
  std::vector<char> has_visuals(model.nbodies, 0);
  for (const VisualShape& visual : model.visuals) {
    if (drawable(visual)) has_visuals[visual.body] = 1;
  }

  for (int i = 0; i < model.nbodies; ++i) {
    v1::ViewerBody* body = scene->add_bodies();
    body->set_name(model.body_names[i]);
    body->set_parent(model.parent[i]);
    if (has_visuals[i]) addVisuals(model, session.id(), i, body);
    if (i == 0) continue;
    const Inertia& inertia = model.inertias[i];
    body->set_mass(inertia.mass);
    const bool flexible = model.nmodes[i] > 0;
    if (flexible) body->set_nodes(static_cast<std::uint32_t>(model.flexible[i].nodes.size()));

    if (!has_visuals[i]) addSegments(model, i, radius, body);

    // The joint, at the body's frame (the joint's child frame): its axis is fixed in B.
    const Joint& joint = model.joints[i];
    if (joint.type == JointType::kRevolute) {
      addShape(body, v1::ViewerShape::KIND_CYLINDER, v1::ViewerShape::ROLE_JOINT, Vector3::Zero(),
               zOnto(joint.axis), {1.6 * radius, 4.0 * radius});
    } else if (joint.type == JointType::kPrismatic) {
      addShape(body, v1::ViewerShape::KIND_BOX, v1::ViewerShape::ROLE_JOINT, Vector3::Zero(),
               zOnto(joint.axis), {2.2 * radius, 2.2 * radius, 5.0 * radius});
    } else {
      addShape(body, v1::ViewerShape::KIND_SPHERE, v1::ViewerShape::ROLE_JOINT, Vector3::Zero(),
               Matrix3::Identity(), {1.8 * radius});
    }

    // The box of uniform density with the body's mass and central inertia: principal moments
    // I₁ = m (b² + c²) / 12 and cyclic, so a² = 6 (I₂ + I₃ − I₁) / m. A flexible body's box
    // would hide its deformation; a massless body has none.
    if (flexible || inertia.mass <= 0.0 || has_visuals[i]) continue;
    const Eigen::SelfAdjointEigenSolver<Matrix3> principal(inertia.inertia_com);
    if (principal.info() != Eigen::Success) continue;
    const Vector3 moments = principal.eigenvalues();
    Matrix3 axes = principal.eigenvectors();
    if (axes.determinant() < 0.0) axes.col(2) = -axes.col(2);
    double side[3];
    for (int k = 0; k < 3; ++k) {
      const double s = 6.0 * (moments.sum() - 2.0 * moments[k]) / inertia.mass;
      // a point mass or a thin rod has (nearly) zero sides: keep them visible
      side[k] = std::clamp(std::sqrt(std::max(s, 0.0)), 2.0 * radius, 2.0 * extent);
    }
    addShape(body, v1::ViewerShape::KIND_BOX, v1::ViewerShape::ROLE_INERTIA, inertia.com, axes,
             {side[0], side[1], side[2]});
  }

  if (model.ground.enabled) {
    scene->mutable_ground()->set_height(model.ground.height);
    scene->mutable_ground()->set_friction(model.ground.friction);
    for (const ContactSphere& sphere : model.contact_spheres) {
      v1::ViewerContact* contact = scene->add_contacts();
      contact->set_name(sphere.name);
      contact->set_body(sphere.body);
      for (int k = 0; k < 3; ++k) contact->add_center(sphere.center[k]);
      contact->set_radius(sphere.radius);
    }
  }

  for (const LoopClosure& loop : model.loops) {
    v1::ViewerClosure* closure = scene->add_closures();
    closure->set_name(loop.name);
    closure->set_type(std::string(closureTypeName(loop.type)));
    closure->set_body_a(loop.body_a);
    closure->set_body_b(loop.body_b);
    closure->set_length(loop.length);
  }
  for (const SpringDamper& element : model.force_elements) {
    v1::ViewerSpring* spring = scene->add_springs();
    spring->set_name(element.name);
    spring->set_body_a(element.body_a);
    spring->set_body_b(element.body_b);
  }
}

std::string viewerMeshFile(const Model& model, std::uint64_t index) {
  if (index >= model.visuals.size()) return {};
  const VisualShape& visual = model.visuals[index];
  return meshFormat(visual).empty() ? std::string() : visual.mesh_file;
}

ViewerPoser::ViewerPoser(const Model& model)
    : model_(model), data_(model, DataWorkspace::kPerBody), q_(model.nq) {}

void ViewerPoser::pose(const google::protobuf::RepeatedField<double>& q, v1::ViewerFrame* frame) {
  // Published states are finite and nq long; a faulted session's last one may not be finite.
  if (q.size() != model_.nq) return;
  for (int k = 0; k < model_.nq; ++k) q_[k] = q.Get(k);
  if (!q_.allFinite()) return;
  forwardKinematics(model_, data_, q_);

  auto* poses = frame->mutable_poses();
  poses->Reserve(7 * model_.nbodies);
  for (int i = 0; i < model_.nbodies; ++i) {
    const Transform& x = data_.X_WB[i];
    const Eigen::Quaterniond rotation(x.rotation);
    for (const double value : {x.translation.x(), x.translation.y(), x.translation.z(),
                               rotation.w(), rotation.x(), rotation.y(), rotation.z()}) {
      poses->Add(value);
    }
  }
  auto addPoint = [](google::protobuf::RepeatedField<double>* out, const Vector3& p) {
    out->Add(p.x());
    out->Add(p.y());
    out->Add(p.z());
  };
  for (const LoopClosure& loop : model_.loops) {
    auto* points = frame->mutable_closure_points();
    addPoint(points, data_.X_WB[loop.body_a].actPoint(loop.frame_a.translation));
    addPoint(points, data_.X_WB[loop.body_b].actPoint(loop.frame_b.translation));
  }
  for (const SpringDamper& spring : model_.force_elements) {
    addPoint(frame->mutable_spring_points(), data_.X_WB[spring.body_a].actPoint(spring.point_a));
    addPoint(frame->mutable_spring_points(), data_.X_WB[spring.body_b].actPoint(spring.point_b));
  }
  if (model_.ground.enabled) {
    for (int k = 0; k < static_cast<int>(model_.contact_spheres.size()); ++k) {
      Vector3 point;
      double distance;
      contactPoint(model_, data_, k, point, distance);
      addPoint(frame->mutable_contact_points(), point);
    }
  }
  if (model_.has_flexible_bodies) {
    for (int i = 1; i < model_.nbodies; ++i) {
      const int nodes = static_cast<int>(model_.flexible[i].nodes.size());
      if (model_.nmodes[i] == 0) continue;
      for (int node = 0; node < nodes; ++node) {
        addPoint(frame->mutable_nodes(), nodePlacement(model_, data_, q_, i, node).translation);
      }
    }
  }
}

}  // namespace hilsim::server
