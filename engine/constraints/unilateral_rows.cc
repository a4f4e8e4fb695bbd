#include "engine/constraints/unilateral_rows.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace hilsim {

UnilateralLayout::UnilateralLayout(const Model& model) : loop_rows(model.nconstraints) {
  for (int d = 0; d < model.nv; ++d) {
    if (model.limitEnforced(d)) limit_dofs.push_back(d);
    if (model.friction[d] > 0.0) friction_dofs.push_back(d);
  }
  contacts = model.ground.enabled ? static_cast<int>(model.contact_spheres.size()) : 0;
  limit_begin = loop_rows;
  friction_begin = limit_begin + static_cast<int>(limit_dofs.size());
  contact_begin = friction_begin + static_cast<int>(friction_dofs.size());
  total = contact_begin + 3 * contacts;
  assert(total == model.constraintRowCapacity());
}

namespace {

// A force `g` (per unit multiplier) on body b and −g on its parent a: the row s·q̇_d of a
// revolute or prismatic dof d (seen from the bodies, g · (V_b − V_a) = s q̇_d, docs/CONTACT.md)
Vector6 jointRowForce(const Model& model, const Data& data, int d, double sign) {
  const auto s = data.S_W.col(d);
  if (model.joint_type[model.dof_body[d]] == JointType::kPrismatic)
    return pointRow(Vector3::Zero(), sign * s.tail<3>());
  return angularRow(sign * s.head<3>());
}

void writeJointRow(const Model& model, const Data& data, int d, double sign, bool with_jacobian,
                   ConstraintRows& rows, int row) {
  const int body = model.dof_body[d];
  const Vector6 g = jointRowForce(model, data, d, sign);
  rows.body_b[row] = body;
  rows.body_a[row] = model.parent[body];
  rows.force_b.col(row) = g;
  rows.force_a.col(row) = -g;
  if (with_jacobian) {
    rows.jacobian.row(row).setZero();
    rows.jacobian(row, d) = sign;
  }
}

}  // namespace

void contactPoint(const Model& model, const Data& data, int sphere, Vector3& point,
                  double& distance) {
  const ContactSphere& c = model.contact_spheres[sphere];
  const Vector3 center = data.X_WB[c.body].actPoint(c.center);
  distance = center.z() - c.radius - model.ground.height;
  point = center - c.radius * Vector3::UnitZ();
}

void evaluateUnilateralRows(const Model& model, const Data& data, const UnilateralLayout& layout,
                            const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                            const Eigen::VectorXd& qdd, double time_step, bool with_jacobian,
                            ConstraintRows& rows, std::vector<UnilateralRowState>& state) {
  // a limit or a normal from the step in which it would close
  const auto closes = [time_step](const UnilateralRowState& s) {
    return s.violation + time_step * std::min(s.rate, 0.0) < 0.0;
  };
  // limits: the row faces the nearer limit, r = q − lower (J = e_d) or upper − q (J = −e_d)
  for (std::size_t k = 0; k < layout.limit_dofs.size(); ++k) {
    const int d = layout.limit_dofs[k];
    const int row = layout.limit_begin + static_cast<int>(k);
    const double position = q[model.idx_q[model.dof_body[d]]];  // a 1-DoF joint: q and v align
    const double to_lower = position - model.lower_limit[d];
    const double to_upper = model.upper_limit[d] - position;
    const double sign = to_lower <= to_upper ? 1.0 : -1.0;
    UnilateralRowState& s = state[row - layout.loop_rows];
    s.kind = RowBound::kUnilateral;
    s.violation = sign > 0.0 ? to_lower : to_upper;
    s.sign = sign;
    s.rate = sign * v[d];
    s.acceleration = sign * qdd[d];
    s.bound = 0.0;
    s.active = closes(s);
    if (s.active) writeJointRow(model, data, d, sign, with_jacobian, rows, row);
  }
  // joint friction: the row q̇_d, its force within ±F
  for (std::size_t k = 0; k < layout.friction_dofs.size(); ++k) {
    const int d = layout.friction_dofs[k];
    const int row = layout.friction_begin + static_cast<int>(k);
    writeJointRow(model, data, d, 1.0, with_jacobian, rows, row);
    UnilateralRowState& s = state[row - layout.loop_rows];
    s.kind = RowBound::kBox;
    s.active = true;
    s.violation = 0.0;
    s.position = q[model.idx_q[model.dof_body[d]]];
    s.rate = v[d];
    s.acceleration = qdd[d];
    s.bound = model.friction[d];
  }
  // contacts: the velocity of the sphere's lowest point along z (normal), x and y (tangents)
  for (int k = 0; k < layout.contacts; ++k) {
    const ContactSphere& sphere = model.contact_spheres[k];
    const int body = sphere.body;
    const int first = layout.contact_begin + 3 * k;
    Vector3 p;
    double distance;
    contactPoint(model, data, k, p, distance);
    const Vector3 center = p + sphere.radius * Vector3::UnitZ();
    const MotionVector& V = data.V_W[body];
    const Vector3 omega = V.head<3>();
    const Vector3 v_point = V.tail<3>() + omega.cross(p);
    // rows in the order normal (z), tangent x, tangent y
    constexpr int kDirection[3] = {2, 0, 1};
    for (int axis = 0; axis < 3; ++axis) {
      UnilateralRowState& s = state[first + axis - layout.loop_rows];
      const int direction = kDirection[axis];
      s.kind = axis == 0 ? RowBound::kConeNormal : RowBound::kConeTangent;
      s.bound = axis == 0 ? model.ground.friction : 0.0;
      s.violation = axis == 0 ? distance : 0.0;
      s.position = p(direction);
      s.rate = v_point(direction);
    }
    const bool active = closes(state[first - layout.loop_rows]);
    for (int axis = 0; axis < 3; ++axis) state[first + axis - layout.loop_rows].active = active;
    if (!active) continue;
    // the body's own acceleration (A_W less the base's, gravity's −g): α and a_O, then the
    // centre's classical acceleration (RBDA eq. 2.47) and, for the tangents, the rolling
    // contact's a_c + α × (p − c): the rate of v_p with p held on the sphere's lowest point
    const Vector3 v_center = V.tail<3>() + omega.cross(center);
    const Vector3 alpha = data.A_W[body].head<3>() - data.A_W[0].head<3>();
    const Vector3 a_origin = data.A_W[body].tail<3>() - data.A_W[0].tail<3>();
    const Vector3 a_center = a_origin + alpha.cross(center) + omega.cross(v_center);
    const Vector3 a_rolling = a_center + alpha.cross(p - center);
    for (int axis = 0; axis < 3; ++axis) {
      const int direction = kDirection[axis];
      const int row = first + axis;
      const Vector6 g = pointRow(p, Vector3::Unit(direction));
      rows.body_b[row] = body;
      rows.body_a[row] = 0;
      rows.force_b.col(row) = g;
      rows.force_a.col(row).setZero();
      if (with_jacobian) {
        rows.jacobian.row(row).setZero();
        for (int d = lastDof(model, body); d >= 0; d = model.dof_parent[d])
          rows.jacobian(row, d) = g.dot(data.S_W.col(d));
      }
      state[row - layout.loop_rows].acceleration =
          axis == 0 ? a_center(direction) : a_rolling(direction);
    }
  }
}

}  // namespace hilsim
