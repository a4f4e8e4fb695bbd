#include "engine/builder/closure_builder.h"

#include <cmath>
#include <utility>
#include <vector>

#include "engine/model/names.h"

namespace hilsim {

namespace {

[[noreturn]] void fail(const std::string& what) { throw ModelError(what); }

// The body a frame name moves with, and the frame's placement in that body.
Frame resolveFrame(const Model& model, const std::string& name, const std::string& who,
                   const char* side) {
  const int f = model.frameIndex(name);
  if (f < 0) fail(who + ": " + side + ": no body or frame named '" + name + "'");
  return model.frames[f];
}

bool finite(const Transform& x) { return x.rotation.allFinite() && x.translation.allFinite(); }

void checkName(const std::string& name, const std::string& kind) {
  if (const std::string why = nameProblem(name); !why.empty()) fail(kind + " name: " + why);
}

void checkSupported(const Model& model, const std::string& who) {
  if (model.has_flexible_bodies)
    fail(who + ": loop closures and force elements on a model with flexible bodies are not "
               "supported yet");
  if (model.nalgebraic > 0)
    fail(who + ": loop closures and force elements on a model with massless joint motion are not "
               "supported yet");
}

// Joint limits and friction rows need the stage's operators on a model of full joint rank (as
// loops do); their rows are joint coordinates, which flexible bodies leave as they are
void checkRowsSupported(const Model& model, const std::string& who) {
  if (model.nalgebraic > 0)
    fail(who + ": not supported on a model with massless joint motion yet");
}

// A contact's row reads the motion of a point on its body, which on a model with flexible bodies
// depends on their modal coordinates as well (Ψ_t of each flexible ancestor): not written yet
void checkContactSupported(const Model& model, const std::string& who) {
  if (model.has_flexible_bodies)
    fail(who + ": ground contact is not supported on a model with flexible bodies yet");
  checkRowsSupported(model, who);
}

// The two frames an element (a loop or a force element) joins, after the checks both share:
// a valid name unique among `existing`, a model that supports them, known frames on two bodies.
template <typename Element>
std::pair<Frame, Frame> joinedFrames(const Model& model, const std::vector<Element>& existing,
                                     const std::string& name, const std::string& kind,
                                     const std::string& who, const std::string& body_a,
                                     const std::string& body_b) {
  checkName(name, kind);
  for (const Element& other : existing)
    if (other.name == name) fail(who + ": duplicate " + kind + " name");
  checkSupported(model, who);
  const Frame a = resolveFrame(model, body_a, who, "body_a");
  const Frame b = resolveFrame(model, body_b, who, "body_b");
  if (a.body == b.body)
    fail(who + ": body_a '" + body_a + "' and body_b '" + body_b + "' move as one body; a " +
         kind + " needs two different bodies");
  return {a, b};
}

}  // namespace

std::string_view closureTypeName(ClosureType type) {
  switch (type) {
    case ClosureType::kBall: return "ball";
    case ClosureType::kRevolute: return "revolute";
    case ClosureType::kPrismatic: return "prismatic";
    case ClosureType::kWeld: return "weld";
    case ClosureType::kDistance: return "distance";
  }
  return "unknown";
}

void addLoopClosure(Model& model, const LoopClosureSpec& spec) {
  const std::string who = "loop '" + spec.name + "'";
  const auto [a, b] =
      joinedFrames(model, model.loops, spec.name, "loop", who, spec.body_a, spec.body_b);
  if (!finite(spec.frame_a) || !finite(spec.frame_b)) fail(who + ": placements must be finite");

  LoopClosure c;
  c.name = spec.name;
  c.type = spec.type;
  c.body_a = a.body;
  c.body_b = b.body;
  c.frame_a = a.placement * spec.frame_a;
  c.frame_b = b.placement * spec.frame_b;
  if (spec.type == ClosureType::kRevolute || spec.type == ClosureType::kPrismatic) {
    if (!spec.axis.allFinite() || spec.axis.norm() < 1e-12)
      fail(who + ": axis must be a finite non-zero vector");
    c.axis = spec.axis.normalized();
    // complete the axis to an orthonormal basis: start from the coordinate axis least aligned
    // with it, so the cross product is well conditioned
    Eigen::Index least = 0;
    c.axis.cwiseAbs().minCoeff(&least);
    c.normal_1 = c.axis.cross(Vector3::Unit(least)).normalized();
    c.normal_2 = c.axis.cross(c.normal_1);
  }
  if (spec.type == ClosureType::kDistance) {
    if (!std::isfinite(spec.length) || spec.length <= 0.0)
      fail(who + ": length must be a finite number > 0 [m]");
    c.length = spec.length;
  }
  model.loops.push_back(c);
  model.nconstraints += closureRows(c.type);
}

void addSpringDamper(Model& model, const SpringDamperSpec& spec) {
  const std::string who = "force '" + spec.name + "'";
  const auto [a, b] = joinedFrames(model, model.force_elements, spec.name, "force element", who,
                                   spec.body_a, spec.body_b);
  if (!spec.point_a.allFinite() || !spec.point_b.allFinite())
    fail(who + ": points must be finite");
  const auto non_negative = [&](double x, const char* what) {
    if (!std::isfinite(x) || x < 0.0) fail(who + ": " + what + " must be a finite number >= 0");
  };
  non_negative(spec.stiffness, "stiffness");
  non_negative(spec.damping, "damping");
  non_negative(spec.rest_length, "rest_length");
  SpringDamper s;
  s.name = spec.name;
  s.body_a = a.body;
  s.body_b = b.body;
  s.point_a = a.placement.actPoint(spec.point_a);
  s.point_b = b.placement.actPoint(spec.point_b);
  s.stiffness = spec.stiffness;
  s.damping = spec.damping;
  s.rest_length = spec.rest_length;
  model.force_elements.push_back(s);
}

void setInitialPosition(Model& model, const std::string& joint_name, std::span<const double> values) {
  const int i = model.jointIndex(joint_name);
  if (i < 0) fail("initial: no moving joint named '" + joint_name + "'");
  const int n = model.nq_joint[i];
  const std::string who = "initial: joint '" + joint_name + "'";
  if (static_cast<int>(values.size()) != n)
    fail(who + " has " + std::to_string(n) + (n == 1 ? " coordinate" : " coordinates") + ", got " +
         std::to_string(values.size()) + (n == 1 ? "" : " (docs/MODEL_FORMAT.md lists them)"));
  for (double x : values)
    if (!std::isfinite(x)) fail(who + ": values must be finite");
  if (model.initial_configuration.size() != model.nq)
    model.initial_configuration = model.neutralConfiguration();
  double* q = model.initial_configuration.data() + model.idx_q[i];
  for (int k = 0; k < n; ++k) q[k] = values[k];
  const JointType type = model.joints[i].type;
  if (type == JointType::kSpherical || type == JointType::kFreeFlyer) {
    const int first = type == JointType::kFreeFlyer ? 3 : 0;
    if (Eigen::Map<const Eigen::Vector4d>(q + first).norm() < 1e-12)
      fail(who + ": the quaternion must be non-zero");
    jointNormalize(model.joints[i], q);
  }
}

void setStabilisation(Model& model, const ConstraintStabilisation& s) {
  if (!std::isfinite(s.baumgarte_alpha) || s.baumgarte_alpha < 0.0 ||
      !std::isfinite(s.baumgarte_beta) || s.baumgarte_beta < 0.0)
    fail("stabilisation: baumgarte_alpha and baumgarte_beta must be finite numbers >= 0 [1/s]");
  if (s.projection_iterations < 0 || s.projection_iterations > 100)
    fail("stabilisation: projection_iterations must be an integer from 0 to 100");
  model.stabilisation = s;
}

void addContactSphere(Model& model, const ContactSphereSpec& spec) {
  const std::string who = "contact '" + spec.name + "'";
  checkName(spec.name, "contact");
  for (const ContactSphere& other : model.contact_spheres)
    if (other.name == spec.name) fail(who + ": duplicate contact name");
  const Frame frame = resolveFrame(model, spec.body, who, "body");
  if (frame.body == 0) fail(who + ": a contact sphere must be on a moving body, not the world");
  if (!spec.center.allFinite()) fail(who + ": center must be finite");
  if (!std::isfinite(spec.radius) || spec.radius < 0.0)
    fail(who + ": radius must be a finite number >= 0 [m]");
  model.contact_spheres.push_back(
      ContactSphere{spec.name, frame.body, frame.placement.actPoint(spec.center), spec.radius});
}

void setGround(Model& model, const GroundPlane& ground) {
  if (!std::isfinite(ground.height)) fail("ground: height must be finite [m]");
  if (!std::isfinite(ground.friction) || ground.friction < 0.0)
    fail("ground: friction must be a finite number >= 0");
  if (ground.enabled) checkContactSupported(model, "ground");
  model.ground = ground;
}

void setLimitsEnforced(Model& model, bool enforced) {
  if (enforced) checkRowsSupported(model, "limits: enforced");
  model.limits_enforced = enforced;
  model.actuator_limits_enforced = enforced;
}

void setContactSettings(Model& model, const ContactSettings& settings) {
  const auto check = [](const ConstraintSoftness& s, const std::string& who) {
    if (!std::isfinite(s.time_constant) || s.time_constant <= 0.0)
      fail(who + ": time_constant must be a finite number > 0 [s]");
    if (!std::isfinite(s.damping_ratio) || s.damping_ratio <= 0.0)
      fail(who + ": damping_ratio must be a finite number > 0");
    if (!(s.impedance > 0.0 && s.impedance < 1.0))
      fail(who + ": impedance must lie strictly between 0 and 1");
  };
  check(settings.limit, "softness: limit");
  check(settings.contact, "softness: contact");
  check(settings.friction, "softness: friction");
  if (settings.max_iterations < 1 || settings.max_iterations > 10000)
    fail("solver: max_iterations must be an integer from 1 to 10000");
  if (!std::isfinite(settings.tolerance) || settings.tolerance < 0.0)
    fail("solver: tolerance must be a finite number >= 0");
  model.contact_settings = settings;
}

}  // namespace hilsim
