#include "engine/constraints/closure_kinematics.h"

#include <Eigen/Geometry>

namespace hilsim {

namespace {

// Motion of one closure frame (a point of a body): pose, and what a row needs of its velocity and
// bias acceleration.
struct FrameMotion {
  Matrix3 R;         // R_WF (only where a row needs it)
  Vector3 p;         // origin in W [m]
  Vector3 omega;     // body angular velocity [rad/s]
  Vector3 v_point;   // classical velocity of the origin [m/s]
  Vector3 alpha;     // bias angular acceleration (q̈ = 0) [rad/s²]
  Vector3 a_point;   // bias classical acceleration of the origin [m/s²]
};

// The last degree of freedom that moves body i (−1 for the world); the others follow dof_parent.
int lastDof(const Model& model, int i) {
  while (i > 0 && model.nv_joint[i] + model.nmodes[i] == 0) i = model.parent[i];
  return i > 0 ? model.idx_v[i] + model.nv_joint[i] + model.nmodes[i] - 1 : -1;
}

// The frame's rotation only `with_rotation` (weld, revolute, prismatic rows read it), its
// velocity and bias acceleration only `with_bias`.
FrameMotion frameMotion(const Model& model, const Data& data, int body, const Transform& X_BF,
                        bool with_rotation, bool with_bias) {
  FrameMotion f;
  if (body == 0) {
    f.R = X_BF.rotation;
    f.p = X_BF.translation;
    f.omega.setZero();
    f.v_point.setZero();
    f.alpha.setZero();
    f.a_point.setZero();
    return f;
  }
  const Transform& X_WB = data.X_WB[body];
  if (with_rotation) f.R.noalias() = X_WB.rotation * X_BF.rotation;
  f.p = X_WB.actPoint(X_BF.translation);
  if (!with_bias) {
    f.omega.setZero();
    f.v_point.setZero();
    f.alpha.setZero();
    f.a_point.setZero();
    return f;
  }
  const MotionVector& V = data.V_W[body];
  f.omega = V.head<3>();
  f.v_point = V.tail<3>() + f.omega.cross(f.p);
  // bias spatial acceleration: Σ a_m along the path (in W every Φ is the identity)
  MotionVector A = MotionVector::Zero();
  for (int k = body; k > 0; k = model.parent[k]) A += data.c_W[k];
  f.alpha = A.head<3>();
  // spatial to classical (RBDA eq. 2.47): a_p = a_O + α × p + ω × v_p
  f.a_point = A.tail<3>() + f.alpha.cross(f.p) + f.omega.cross(f.v_point);
  return f;
}

// Writes one row: g_b on the path of body b, g_a on that of body a.
template <typename Matrix>
void jacobianRow(const Model& model, const Data& data, int body_a, const Vector6& g_a, int body_b,
                 const Vector6& g_b, Matrix& J, int row) {
  J.row(row).setZero();
  // each column of S_W as a fixed-size 6-vector: the dot product unrolls (a row of a loop model
  // is evaluated every step, on a path of a few dofs)
  const auto column = [&](int d) { return Eigen::Map<const Vector6>(data.S_W.col(d).data()); };
  for (int d = lastDof(model, body_b); d >= 0; d = model.dof_parent[d])
    J(row, d) += g_b.dot(column(d));
  for (int d = lastDof(model, body_a); d >= 0; d = model.dof_parent[d])
    J(row, d) += g_a.dot(column(d));
}

// Writes row `row` into the outputs that want it: J's row, and its spatial form.
void writeRow(const Model& model, const Data& data, const ClosureOutputs& out, int body_a,
              const Vector6& g_a, int body_b, const Vector6& g_b, int row) {
  if (out.jacobian) jacobianRow(model, data, body_a, g_a, body_b, g_b, *out.jacobian, row);
  if (out.rows) {
    jacobianRow(model, data, body_a, g_a, body_b, g_b, out.rows->jacobian, row);
    out.rows->body_a[row] = body_a;
    out.rows->body_b[row] = body_b;
    out.rows->force_a.col(row) = g_a;
    out.rows->force_b.col(row) = g_b;
  }
}

// Row coefficients on a body's spatial velocity V = [ω; v_O]:
// n · v_p = n · (v_O + ω × p) = [p × n; n] · V, and n · ω = [n; 0] · V
Vector6 pointRow(const Vector3& p, const Vector3& n) {
  Vector6 g;
  g.head<3>() = p.cross(n);
  g.tail<3>() = n;
  return g;
}
Vector6 angularRow(const Vector3& n) {
  Vector6 g;
  g.head<3>() = n;
  g.tail<3>().setZero();
  return g;
}

// Rotation vector of R_B R_Aᵀ (in W): zero when the frames are parallel; its rate is ω_b − ω_a
// there.
Vector3 rotationError(const Matrix3& R_A, const Matrix3& R_B) {
  const Eigen::AngleAxisd aa(Matrix3(R_B * R_A.transpose()));
  return aa.angle() * aa.axis();
}

}  // namespace

void evaluateClosures(const Model& model, const Data& data, const ClosureOutputs& out) {
  const bool with_bias = out.bias != nullptr;
  int row = 0;
  for (const LoopClosure& c : model.loops) {
    const bool with_rotation = c.type != ClosureType::kBall && c.type != ClosureType::kDistance;
    const FrameMotion A = frameMotion(model, data, c.body_a, c.frame_a, with_rotation, with_bias);
    const FrameMotion B = frameMotion(model, data, c.body_b, c.frame_b, with_rotation, with_bias);
    const Vector3 d = B.p - A.p;                  // separation of the origins
    const Vector3 d_rate = B.v_point - A.v_point;  // its rate
    const Vector3 d_bias = B.a_point - A.a_point;  // its second derivative at q̈ = 0

    // n · (p_B − p_A) for a direction n fixed in W
    const auto point_rows = [&](const Vector3& n, double error) {
      if (out.position_error) (*out.position_error)(row) = error;
      if (out.jacobian || out.rows)
        writeRow(model, data, out, c.body_a, pointRow(A.p, -n), c.body_b, pointRow(B.p, n), row);
      if (out.bias) (*out.bias)(row) = n.dot(d_bias);
      ++row;
    };
    // n · (ω_b − ω_a) for a direction n fixed in W
    const auto angular_rows = [&](const Vector3& n, double error) {
      if (out.position_error) (*out.position_error)(row) = error;
      if (out.jacobian || out.rows)
        writeRow(model, data, out, c.body_a, angularRow(-n), c.body_b, angularRow(n), row);
      if (out.bias) (*out.bias)(row) = n.dot(B.alpha - A.alpha);
      ++row;
    };

    switch (c.type) {
      case ClosureType::kBall:
        for (int k = 0; k < 3; ++k) point_rows(Vector3::Unit(k), d(k));
        break;
      case ClosureType::kWeld: {
        for (int k = 0; k < 3; ++k) point_rows(Vector3::Unit(k), d(k));
        const Vector3 e = rotationError(A.R, B.R);
        for (int k = 0; k < 3; ++k) angular_rows(Vector3::Unit(k), e(k));
        break;
      }
      case ClosureType::kRevolute: {
        for (int k = 0; k < 3; ++k) point_rows(Vector3::Unit(k), d(k));
        // n_k · (u_A × u_B) for the normals n_k of the axis, fixed in A: rate n_k · (ω_b − ω_a)
        // where aligned; its derivative adds ṅ_k · (ω_b − ω_a) with ṅ_k = ω_a × n_k
        const Vector3 u_A = A.R * c.axis, u_B = B.R * c.axis;
        const Vector3 misalignment = u_A.cross(u_B);
        for (const Vector3* normal : {&c.normal_1, &c.normal_2}) {
          const Vector3 n = A.R * *normal;
          if (out.position_error) (*out.position_error)(row) = n.dot(misalignment);
          if (out.jacobian || out.rows)
            writeRow(model, data, out, c.body_a, angularRow(-n), c.body_b, angularRow(n), row);
          if (out.bias)
            (*out.bias)(row) =
                n.dot(B.alpha - A.alpha) + A.omega.cross(n).dot(B.omega - A.omega);
          ++row;
        }
        break;
      }
      case ClosureType::kPrismatic: {
        const Vector3 e = rotationError(A.R, B.R);
        for (int k = 0; k < 3; ++k) angular_rows(Vector3::Unit(k), e(k));
        // C = n · d with n = R_A n_A fixed in A: Ċ = n · ḋ + ω_a · (n × d),
        // C̈ = n · d̈ + α_a · (n × d) + (ω_a × (ω_a × n)) · d + 2 (ω_a × n) · ḋ
        for (const Vector3* normal : {&c.normal_1, &c.normal_2}) {
          const Vector3 n = A.R * *normal;
          if (out.position_error) (*out.position_error)(row) = n.dot(d);
          if (out.jacobian || out.rows) {
            Vector6 g_a = pointRow(A.p, -n);
            g_a.head<3>() += n.cross(d);
            writeRow(model, data, out, c.body_a, g_a, c.body_b, pointRow(B.p, n), row);
          }
          if (out.bias) {
            const Vector3 n_rate = A.omega.cross(n);
            (*out.bias)(row) = n.dot(d_bias) + A.alpha.dot(n.cross(d)) +
                               A.omega.cross(n_rate).dot(d) + 2.0 * n_rate.dot(d_rate);
          }
          ++row;
        }
        break;
      }
      case ClosureType::kDistance: {
        // C = |d| − L: Ċ = u · ḋ, C̈ = u · d̈ + (|ḋ|² − (u · ḋ)²) / |d|
        const double length = d.norm();
        // coincident points (only far off the manifold; L > 0): any direction is as good
        const Vector3 u = length > 0.0 ? Vector3(d / length) : Vector3::UnitX();
        if (out.position_error) (*out.position_error)(row) = length - c.length;
        if (out.jacobian || out.rows)
          writeRow(model, data, out, c.body_a, pointRow(A.p, -u), c.body_b, pointRow(B.p, u), row);
        if (out.bias) {
          const double along = u.dot(d_rate);
          (*out.bias)(row) =
              u.dot(d_bias) +
              (length > 0.0 ? (d_rate.squaredNorm() - along * along) / length : 0.0);
        }
        ++row;
        break;
      }
    }
  }
}

void addForceElementForces(const Model& model, const Data& data, Eigen::VectorXd& forces) {
  for (const SpringDamper& e : model.force_elements) {
    const Transform at_a(Matrix3::Identity(), e.point_a), at_b(Matrix3::Identity(), e.point_b);
    const FrameMotion A = frameMotion(model, data, e.body_a, at_a, false, false);
    const FrameMotion B = frameMotion(model, data, e.body_b, at_b, false, false);
    const Vector3 d = B.p - A.p;
    const double length = d.norm();
    if (!(length > 0.0)) continue;
    const Vector3 u = d / length;
    const auto point_velocity = [&](int body, const Vector3& p) -> Vector3 {
      if (body == 0) return Vector3::Zero();
      const MotionVector& V = data.V_W[body];
      return V.tail<3>() + V.head<3>().cross(p);
    };
    const double rate = u.dot(point_velocity(e.body_b, B.p) - point_velocity(e.body_a, A.p));
    // tension pulls the points together: −T u on b at p_B, +T u on a at p_A, i.e. Q = −T rowᵀ
    // with the row of ℓ̇
    const double tension = e.stiffness * (length - e.rest_length) + e.damping * rate;
    const Vector6 g_b = pointRow(B.p, u), g_a = pointRow(A.p, -u);
    for (int dof = lastDof(model, e.body_b); dof >= 0; dof = model.dof_parent[dof])
      forces(dof) -= tension * g_b.dot(data.S_W.col(dof));
    for (int dof = lastDof(model, e.body_a); dof >= 0; dof = model.dof_parent[dof])
      forces(dof) -= tension * g_a.dot(data.S_W.col(dof));
  }
}

double forceElementEnergy(const Model& model, const Data& data) {
  double energy = 0.0;
  for (const SpringDamper& e : model.force_elements) {
    const Vector3 p_a = e.body_a == 0 ? e.point_a : data.X_WB[e.body_a].actPoint(e.point_a);
    const Vector3 p_b = e.body_b == 0 ? e.point_b : data.X_WB[e.body_b].actPoint(e.point_b);
    const double stretch = (p_b - p_a).norm() - e.rest_length;
    energy += 0.5 * e.stiffness * stretch * stretch;
  }
  return energy;
}

}  // namespace hilsim
