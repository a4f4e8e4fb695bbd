#include "engine/constraints/closure_kinematics.h"

#include <cassert>
#include <limits>
#include <random>
#include <vector>

#include <Eigen/Geometry>

#include "engine/algorithms/forward_kinematics.h"
#include "engine/model/configuration.h"
#include "engine/spatial/lanes.h"

namespace hilsim {

namespace {

// Motion of one closure frame (a point of a body): pose, and what a row needs of its velocity and
// acceleration.
struct FrameMotion {
  Matrix3 R;         // R_WF (only where a row needs it)
  Vector3 p;         // origin in W [m]
  Vector3 omega;     // body angular velocity [rad/s]
  Vector3 v_point;   // classical velocity of the origin [m/s]
  Vector3 alpha;     // angular acceleration (bias: at q̈ = 0) [rad/s²]
  Vector3 a_point;   // classical acceleration of the origin (bias: at q̈ = 0) [m/s²]
};

// What of a frame's motion the rows need beyond its pose: nothing, its velocity, and with it
// the bias acceleration (q̈ = 0: the path's c_W) or the acceleration in A_W.
enum class FrameTerms { kPose, kVelocity, kBias, kAcceleration };

// The frame's rotation only `with_rotation` (weld, revolute, prismatic rows read it).
[[gnu::always_inline]] inline FrameMotion frameMotion(const Model& model, const Data& data,
                                                      int body, const Transform& X_BF,
                                                      bool with_rotation, FrameTerms terms) {
  FrameMotion f;
  f.omega.setZero();
  f.v_point.setZero();
  f.alpha.setZero();
  f.a_point.setZero();
  if (body == 0) {
    f.R = X_BF.rotation;
    f.p = X_BF.translation;
    return f;
  }
  const Transform& X_WB = data.X_WB[body];
  if (with_rotation) f.R.noalias() = X_WB.rotation * X_BF.rotation;
  f.p = X_WB.actPoint(X_BF.translation);
  if (terms == FrameTerms::kPose) return f;
  const MotionVector& V = data.V_W[body];
  f.omega = V.head<3>();
  f.v_point = V.tail<3>() + f.omega.cross(f.p);
  if (terms == FrameTerms::kVelocity) return f;
  // spatial acceleration [α; a_O] (in W about W's origin)
  Vector3 a_origin;
  if (terms == FrameTerms::kAcceleration) {
    // A_W less the base's (gravity's −g, the same at every point): the body's own
    f.alpha = data.A_W[body].head<3>() - data.A_W[0].head<3>();
    a_origin = data.A_W[body].tail<3>() - data.A_W[0].tail<3>();
  } else {
    // at q̈ = 0: Σ a_m along the path (in W every Φ is the identity), summed by halves (a
    // 6-vector sum read back by its last three entries would wait on a store the processor
    // cannot forward)
    a_origin.setZero();
    for (int k = body; k > 0; k = model.parent[k]) {
      f.alpha += data.c_W[k].head<3>();
      a_origin += data.c_W[k].tail<3>();
    }
  }
  // spatial to classical (RBDA eq. 2.47): a_p = a_O + α × p + ω × v_p
  f.a_point = a_origin + f.alpha.cross(f.p) + f.omega.cross(f.v_point);
  return f;
}

Eigen::Map<const Vector6> subspaceColumn(const Data& data, int d) {
  return Eigen::Map<const Vector6>(data.S_W.col(d).data());
}

// Writes one row of a Jacobian that comes without ConstraintRows: g_b on the path of body b,
// g_a on that of body a. (ConstraintRows' own Jacobian is written a closure at a time, below.)
void jacobianRow(const Model& model, const Data& data, int body_a, const Vector6& g_a, int body_b,
                 const Vector6& g_b, Eigen::MatrixXd& J, int row) {
  J.row(row).setZero();
  for (int d = lastDof(model, body_b); d >= 0; d = model.dof_parent[d])
    J(row, d) += g_b.dot(subspaceColumn(data, d));
  for (int d = lastDof(model, body_a); d >= 0; d = model.dof_parent[d])
    J(row, d) += g_a.dot(subspaceColumn(data, d));
}

// Writes row `row` into the outputs that want it row by row: the caller's Jacobian, and the
// spatial form of ConstraintRows.
[[gnu::always_inline]] inline void writeRow(const Model& model, const Data& data,
                                            const ClosureOutputs& out, int body_a,
                                            const Vector6& g_a, int body_b, const Vector6& g_b,
                                            int row) {
  if (out.jacobian) jacobianRow(model, data, body_a, g_a, body_b, g_b, *out.jacobian, row);
  if (out.rows) {
    out.rows->body_a[row] = body_a;
    out.rows->body_b[row] = body_b;
    out.rows->force_a.col(row) = g_a;
    out.rows->force_b.col(row) = g_b;
  }
}

// ConstraintRows' Jacobian entries, a closure at a time on its path (ConstraintRows::path_dofs):
// only the dofs that move its bodies are visited, each once, the path the two bodies share
// (where the two coefficients meet on one column) included.
using Side = ConstraintRows::Side;
struct ClosurePath {
  const ConstraintRows::PathDof* begin;
  const ConstraintRows::PathDof* end;
};
using RowMajorMatrix = decltype(ConstraintRows::jacobian);

// One row g_bᵀ V_b + g_aᵀ V_a: (g_a + g_b) · s on the shared path.
void pathRow(const Data& data, ClosurePath path, const Vector6& g_a, const Vector6& g_b,
             RowMajorMatrix& J, int row) {
  const Vector6 g_both = g_a + g_b;
  for (auto e = path.begin; e != path.end; ++e) {
    const Vector6& g = e->side == Side::kA ? g_a : e->side == Side::kB ? g_b : g_both;
    J(row, e->dof) = g.dot(subspaceColumn(data, e->dof));
  }
}

// The three rows e_k · (p_B − p_A) at once: a dof's entries are the velocity its column
// s = [s_ω; s_v] gives the point p_B, s_v + s_ω × p_B, less the one it gives p_A; on the
// shared path s_ω × (p_B − p_A).
void pointRows(const Data& data, ClosurePath path, const Vector3& p_A, const Vector3& p_B,
               RowMajorMatrix& J, int row) {
  const Vector3 d = p_B - p_A;
  for (auto e = path.begin; e != path.end; ++e) {
    const auto s = subspaceColumn(data, e->dof);
    const Vector3 s_omega = s.head<3>(), s_v = s.tail<3>();
    Vector3 w;
    if (e->side == Side::kB)
      w = s_v + s_omega.cross(p_B);
    else if (e->side == Side::kA)
      w = -(s_v + s_omega.cross(p_A));
    else
      w = s_omega.cross(d);
    for (int k = 0; k < 3; ++k) J(row + k, e->dof) = w(k);
  }
}

// The rows n_k · (ω_b − ω_a) for the directions n_k, the columns of N: entries ± n_k · s_ω, and
// zero on the shared path (both bodies turn with it alike).
template <int R>
void angularRows(const Data& data, ClosurePath path, const Eigen::Matrix<double, 3, R>& N,
                 RowMajorMatrix& J, int row) {
  for (auto e = path.begin; e != path.end; ++e) {
    if (e->side == Side::kBoth) continue;
    const Vector3 s_omega = subspaceColumn(data, e->dof).head<3>();
    const double sign = e->side == Side::kB ? 1.0 : -1.0;
    for (int k = 0; k < R; ++k) J(row + k, e->dof) = sign * N.col(k).dot(s_omega);
  }
}

// Rotation vector of R_B R_Aᵀ (in W): zero when the frames are parallel; its rate is ω_b − ω_a
// there.
Vector3 rotationError(const Matrix3& R_A, const Matrix3& R_B) {
  const Eigen::AngleAxisd aa(Matrix3(R_B * R_A.transpose()));
  return aa.angle() * aa.axis();
}

// The one row of a distance closure: C = |d| − L, Ċ = u · ḋ, C̈ = u · d̈ + (|ḋ|² − (u · ḋ)²) / |d|
// with d = p_B − p_A and u = d / |d|. The portable code (and the reference of distanceRowLanes,
// below, which the stage runs where AVX2 is there).
void distanceRow(const Model& model, const Data& data, const ClosureOutputs& out,
                 RowMajorMatrix* J, ClosurePath path, FrameTerms terms, const LoopClosure& c,
                 int row) {
  const FrameMotion A = frameMotion(model, data, c.body_a, c.frame_a, false, terms);
  const FrameMotion B = frameMotion(model, data, c.body_b, c.frame_b, false, terms);
  const Vector3 d = B.p - A.p;
  const double length = d.norm();
  // one division (its latency is on every row's chain); coincident points (only far off the
  // manifold; L > 0): any direction is as good
  const bool apart = length > std::numeric_limits<double>::min();  // 1 / length finite
  const double inverse_length = apart ? 1.0 / length : 0.0;
  const Vector3 u = apart ? Vector3(d * inverse_length) : Vector3::UnitX();
  if (out.position_error) (*out.position_error)(row) = length - c.length;
  if (out.jacobian || out.rows) {
    const Vector6 g_a = pointRow(A.p, -u), g_b = pointRow(B.p, u);
    writeRow(model, data, out, c.body_a, g_a, c.body_b, g_b, row);
    if (J) pathRow(data, path, g_a, g_b, *J, row);
  }
  if (terms == FrameTerms::kPose) return;
  const Vector3 d_rate = B.v_point - A.v_point;
  const double along = u.dot(d_rate);
  if (out.rate) (*out.rate)(row) = along;
  if (terms == FrameTerms::kVelocity) return;
  Eigen::VectorXd* const second = out.bias ? out.bias : out.acceleration;
  if (second) {
    const Vector3 d_bias = B.a_point - A.a_point;
    (*second)(row) = u.dot(d_bias) + (d_rate.squaredNorm() - along * along) * inverse_length;
  }
}

#ifdef HILSIM_HAVE_LANES
using namespace detail::lanes;  // NOLINT: the 4-wide 3-vector helpers

// A closure frame's origin and, as `terms` asks, its classical velocity and acceleration, each
// a 3-vector in four lanes (engine/spatial/lanes.h): frameMotion's arithmetic without its
// rotation, in registers.
struct FrameLanes {
  Lanes p, v_point, a_point;
};

[[gnu::always_inline]] inline FrameLanes frameLanes(const Model& model, const Data& data,
                                                    int body, const double* r_BF,
                                                    FrameTerms terms) {
  const Lanes zero = _mm256_setzero_pd();
  FrameLanes f{zero, zero, zero};
  if (body == 0) {
    f.p = load3(r_BF);
    return f;
  }
  const double* X = data.X_WB[body].rotation.data();  // R (column-major), then the translation
  f.p = add(times(load4(X), load4(X + 3), load4(X + 6), r_BF), load3(X + 9));
  if (terms == FrameTerms::kPose) return f;
  const double* V = data.V_W[body].data();
  const Lanes omega = load4(V);  // its fourth lane is v_O's first entry, never read
  f.v_point = add(load3(V + 3), cross(omega, f.p));
  if (terms == FrameTerms::kVelocity) return f;
  Lanes alpha = zero, a_origin = zero;
  if (terms == FrameTerms::kAcceleration) {
    const double* A = data.A_W[body].data();
    const double* A_base = data.A_W[0].data();
    alpha = _mm256_sub_pd(load4(A), load4(A_base));
    a_origin = _mm256_sub_pd(load3(A + 3), load3(A_base + 3));
  } else {
    for (int k = body; k > 0; k = model.parent[k]) {
      const double* c = data.c_W[k].data();
      alpha = add(alpha, load4(c));
      a_origin = add(a_origin, load3(c + 3));
    }
  }
  // RBDA eq. 2.47: a_p = a_O + α × p + ω × v_p
  f.a_point = add(add(a_origin, cross(alpha, f.p)), cross(omega, f.v_point));
  return f;
}

// distanceRow four lanes wide, for the outputs but a caller's Jacobian (`out.jacobian`): the
// rows' spatial form is stored straight from the registers (Eigen's 3-vectors run on 2-wide
// packets and spill the frames to the stack: 326 instructions a row against 234 here, on the
// delta; its loops 1965 → 1854 ns, docs/PERFORMANCE.md "Loops").
[[gnu::always_inline]] inline void distanceRowLanes(const Model& model, const Data& data,
                                                   const ClosureOutputs& out, RowMajorMatrix* J,
                                                   ClosurePath path, FrameTerms terms,
                                                   const LoopClosure& c, int row) {
  assert(!out.jacobian);
  const FrameLanes A = frameLanes(model, data, c.body_a, c.frame_a.translation.data(), terms);
  const FrameLanes B = frameLanes(model, data, c.body_b, c.frame_b.translation.data(), terms);
  const Lanes d = _mm256_sub_pd(B.p, A.p);
  const double length = std::sqrt(sum3(mul(d, d)));
  const bool apart = length > std::numeric_limits<double>::min();  // 1 / length finite
  const double inverse_length = apart ? 1.0 / length : 0.0;
  const Lanes u = apart ? mul(d, _mm256_set1_pd(inverse_length)) : _mm256_setr_pd(1, 0, 0, 0);
  if (out.position_error) (*out.position_error)(row) = length - c.length;
  if (out.rows) {
    // g_a = [p_A × (−u); −u] = [u × p_A; −u], g_b = [p_B × u; u] (pointRow)
    out.rows->body_a[row] = c.body_a;
    out.rows->body_b[row] = c.body_b;
    double* g_a = out.rows->force_a.col(row).data();
    double* g_b = out.rows->force_b.col(row).data();
    store4(g_a, cross(u, A.p));
    store3(g_a + 3, negate(u));
    store4(g_b, cross(B.p, u));
    store3(g_b + 3, u);
    if (J) pathRow(data, path, Eigen::Map<const Vector6>(g_a), Eigen::Map<const Vector6>(g_b),
                   *J, row);
  }
  if (terms == FrameTerms::kPose) return;
  const Lanes d_rate = _mm256_sub_pd(B.v_point, A.v_point);
  const double along = sum3(mul(u, d_rate));
  if (out.rate) (*out.rate)(row) = along;
  if (terms == FrameTerms::kVelocity) return;
  Eigen::VectorXd* const second = out.bias ? out.bias : out.acceleration;
  if (second) {
    const Lanes d_bias = _mm256_sub_pd(B.a_point, A.a_point);
    (*second)(row) =
        sum3(mul(u, d_bias)) + (sum3(mul(d_rate, d_rate)) - along * along) * inverse_length;
  }
}

// The three rows e_k · (p_B − p_A) of a closure's origins four lanes wide: a ball's, and a weld's
// or revolute's when none of their angular rows is wanted (a planar linkage's); bit k of
// `wanted`: row first_row + k. For the outputs but a Jacobian (the caller's or ConstraintRows').
void pointRowsLanes(const Model& model, const Data& data, const ClosureOutputs& out,
                    FrameTerms terms, const LoopClosure& c, int first_row, unsigned wanted) {
  assert(!out.jacobian && !(out.rows && out.rows_jacobian));
  const FrameLanes A = frameLanes(model, data, c.body_a, c.frame_a.translation.data(), terms);
  const FrameLanes B = frameLanes(model, data, c.body_b, c.frame_b.translation.data(), terms);
  alignas(32) double p_A[4], p_B[4], d[4], d_rate[4], d_bias[4];
  _mm256_store_pd(p_A, A.p);
  _mm256_store_pd(p_B, B.p);
  _mm256_store_pd(d, _mm256_sub_pd(B.p, A.p));
  _mm256_store_pd(d_rate, _mm256_sub_pd(B.v_point, A.v_point));
  _mm256_store_pd(d_bias, _mm256_sub_pd(B.a_point, A.a_point));
  Eigen::VectorXd* const second = out.bias ? out.bias : out.acceleration;
  for (int k = 0; k < 3; ++k) {
    if (((wanted >> k) & 1u) == 0) continue;
    const int row = first_row + k;
    if (out.position_error) (*out.position_error)(row) = d[k];
    if (out.rows) {
      // g_b = [p_B × e_k; e_k], g_a = −[p_A × e_k; e_k] (pointRow); p × e_k has p_{k+2} in
      // entry k + 1, −p_{k+1} in entry k + 2 (indices mod 3) and zero in entry k
      out.rows->body_a[row] = c.body_a;
      out.rows->body_b[row] = c.body_b;
      const int k1 = (k + 1) % 3, k2 = (k + 2) % 3;
      auto g_a = out.rows->force_a.col(row);
      auto g_b = out.rows->force_b.col(row);
      g_b.setZero();
      g_b(k1) = p_B[k2];
      g_b(k2) = -p_B[k1];
      g_b(3 + k) = 1.0;
      g_a.setZero();
      g_a(k1) = -p_A[k2];
      g_a(k2) = p_A[k1];
      g_a(3 + k) = -1.0;
    }
    if (out.rate && terms != FrameTerms::kPose) (*out.rate)(row) = d_rate[k];
    if (second) (*second)(row) = d_bias[k];
  }
}
#endif

void evaluate(const Model& model, const Data& data, const ClosureOutputs& out,
              [[maybe_unused]] bool four_wide) {
  assert(!out.rows || (out.rows->path_begin.size() == model.loops.size() + 1 &&
                       out.rows->jacobian.cols() == model.nv));  // built from this model
  assert(!(out.bias && out.acceleration));
  // C̈, at q̈ = 0 (bias) or at the accelerations in A_W
  Eigen::VectorXd* const second = out.bias ? out.bias : out.acceleration;
  const FrameTerms terms = out.acceleration ? FrameTerms::kAcceleration
                           : out.bias       ? FrameTerms::kBias
                           : out.rate       ? FrameTerms::kVelocity
                                            : FrameTerms::kPose;
  // the Jacobian of ConstraintRows, where it is wanted
  RowMajorMatrix* const J = out.rows && out.rows_jacobian ? &out.rows->jacobian : nullptr;
  assert(!out.active_only || out.rows);
  int row = 0;
  int next_active = 0;  // cursor into out.rows->active (ascending)
  for (std::size_t l = 0; l < model.loops.size(); ++l) {
    const LoopClosure& c = model.loops[l];
    const int first_row = row;
    const int count = closureRows(c.type);
    // bit j: row first_row + j is evaluated
    unsigned wanted = (1u << count) - 1;
    if (out.active_only) {
      wanted = 0;
      const std::vector<int>& active = out.rows->active;
      for (; next_active < out.rows->active_count && active[next_active] < first_row + count;
           ++next_active)
        wanted |= 1u << (active[next_active] - first_row);
      if (wanted == 0) {
        row += count;
        continue;
      }
    }
    const auto is_wanted = [&](int r) { return ((wanted >> (r - first_row)) & 1u) != 0; };
    ClosurePath path{nullptr, nullptr};
    if (J) {
      const auto* dofs = out.rows->path_dofs.data();
      path = {dofs + out.rows->path_begin[l], dofs + out.rows->path_begin[l + 1]};
    }
    if (c.type == ClosureType::kDistance) {
#ifdef HILSIM_HAVE_LANES
      if (four_wide && !out.jacobian)
        distanceRowLanes(model, data, out, J, path, terms, c, first_row);
      else
#endif
        distanceRow(model, data, out, J, path, terms, c, first_row);
      row = first_row + count;
      continue;
    }
    // the rows that read the frames' rotations: a weld's or revolute's angular rows (3–5,
    // 3–4), every row of a prismatic closure (its normals turn with A)
    constexpr unsigned kAngularRows = 0b111000u;
    const bool with_rotation =
        c.type == ClosureType::kPrismatic ||
        ((c.type == ClosureType::kWeld || c.type == ClosureType::kRevolute) &&
         (wanted & kAngularRows) != 0);
#ifdef HILSIM_HAVE_LANES
    if (four_wide && !J && !out.jacobian && !with_rotation && c.type != ClosureType::kPrismatic) {
      pointRowsLanes(model, data, out, terms, c, first_row, wanted);  // ball, planar weld, revolute
      row = first_row + count;
      continue;
    }
#endif
    const FrameMotion A = frameMotion(model, data, c.body_a, c.frame_a, with_rotation, terms);
    const FrameMotion B = frameMotion(model, data, c.body_b, c.frame_b, with_rotation, terms);
    const Vector3 d = B.p - A.p;                  // separation of the origins
    const Vector3 d_rate = B.v_point - A.v_point;  // its rate
    const Vector3 d_bias = B.a_point - A.a_point;  // its second derivative (bias: at q̈ = 0)

    // n · (p_B − p_A) for a direction n fixed in W
    const auto point_rows = [&](const Vector3& n, double error) {
      if (!is_wanted(row)) {
        ++row;
        return;
      }
      if (out.position_error) (*out.position_error)(row) = error;
      if (out.jacobian || out.rows)
        writeRow(model, data, out, c.body_a, pointRow(A.p, -n), c.body_b, pointRow(B.p, n), row);
      if (out.rate) (*out.rate)(row) = n.dot(d_rate);
      if (second) (*second)(row) = n.dot(d_bias);
      ++row;
    };
    // n · (ω_b − ω_a) for a direction n fixed in W
    const auto angular_rows = [&](const Vector3& n, double error) {
      if (!is_wanted(row)) {
        ++row;
        return;
      }
      if (out.position_error) (*out.position_error)(row) = error;
      if (out.jacobian || out.rows)
        writeRow(model, data, out, c.body_a, angularRow(-n), c.body_b, angularRow(n), row);
      if (out.rate) (*out.rate)(row) = n.dot(B.omega - A.omega);
      if (second) (*second)(row) = n.dot(B.alpha - A.alpha);
      ++row;
    };

    switch (c.type) {
      case ClosureType::kBall:
        for (int k = 0; k < 3; ++k) point_rows(Vector3::Unit(k), d(k));
        if (J) pointRows(data, path, A.p, B.p, *J, first_row);
        break;
      case ClosureType::kWeld: {
        for (int k = 0; k < 3; ++k) point_rows(Vector3::Unit(k), d(k));
        if (J) pointRows(data, path, A.p, B.p, *J, first_row);
        if (!with_rotation) break;
        const Vector3 e = rotationError(A.R, B.R);
        for (int k = 0; k < 3; ++k) angular_rows(Vector3::Unit(k), e(k));
        if (J) angularRows<3>(data, path, Matrix3::Identity(), *J, first_row + 3);
        break;
      }
      case ClosureType::kRevolute: {
        for (int k = 0; k < 3; ++k) point_rows(Vector3::Unit(k), d(k));
        if (J) pointRows(data, path, A.p, B.p, *J, first_row);
        if (!with_rotation) break;
        // n_k · (u_A × u_B) for the normals n_k of the axis, fixed in A: rate n_k · (ω_b − ω_a)
        // where aligned; its derivative adds ṅ_k · (ω_b − ω_a) with ṅ_k = ω_a × n_k
        const Vector3 u_A = A.R * c.axis, u_B = B.R * c.axis;
        const Vector3 misalignment = u_A.cross(u_B);
        Eigen::Matrix<double, 3, 2> normals;
        normals.col(0).noalias() = A.R * c.normal_1;
        normals.col(1).noalias() = A.R * c.normal_2;
        if (J) angularRows<2>(data, path, normals, *J, first_row + 3);
        for (int k = 0; k < 2; ++k) {
          const Vector3 n = normals.col(k);
          if (!is_wanted(row)) {
            ++row;
            continue;
          }
          if (out.position_error) (*out.position_error)(row) = n.dot(misalignment);
          if (out.jacobian || out.rows)
            writeRow(model, data, out, c.body_a, angularRow(-n), c.body_b, angularRow(n), row);
          if (out.rate) (*out.rate)(row) = n.dot(B.omega - A.omega);
          if (second)
            (*second)(row) = n.dot(B.alpha - A.alpha) + A.omega.cross(n).dot(B.omega - A.omega);
          ++row;
        }
        break;
      }
      case ClosureType::kPrismatic: {
        if ((wanted & 0b111u) != 0) {
          const Vector3 e = rotationError(A.R, B.R);
          for (int k = 0; k < 3; ++k) angular_rows(Vector3::Unit(k), e(k));
          if (J) angularRows<3>(data, path, Matrix3::Identity(), *J, first_row);
        } else {
          row += 3;  // the normals' rows follow
        }
        // C = n · d with n = R_A n_A fixed in A: Ċ = n · ḋ + ω_a · (n × d),
        // C̈ = n · d̈ + α_a · (n × d) + (ω_a × (ω_a × n)) · d + 2 (ω_a × n) · ḋ
        for (const Vector3* normal : {&c.normal_1, &c.normal_2}) {
          if (!is_wanted(row)) {
            ++row;
            continue;
          }
          const Vector3 n = A.R * *normal;
          if (out.position_error) (*out.position_error)(row) = n.dot(d);
          if (out.jacobian || out.rows) {
            Vector6 g_a = pointRow(A.p, -n);
            g_a.head<3>() += n.cross(d);
            const Vector6 g_b = pointRow(B.p, n);
            writeRow(model, data, out, c.body_a, g_a, c.body_b, g_b, row);
            if (J) pathRow(data, path, g_a, g_b, *J, row);
          }
          if (out.rate) (*out.rate)(row) = n.dot(d_rate) + A.omega.dot(n.cross(d));
          if (second) {
            const Vector3 n_rate = A.omega.cross(n);
            (*second)(row) = n.dot(d_bias) + A.alpha.dot(n.cross(d)) +
                               A.omega.cross(n_rate).dot(d) + 2.0 * n_rate.dot(d_rate);
          }
          ++row;
        }
        break;
      }
      case ClosureType::kDistance:  // distanceRow, above
        break;
    }
    row = first_row + count;  // also past the rows a type's case left out
  }
}

}  // namespace

void evaluateClosures(const Model& model, const Data& data, const ClosureOutputs& out) {
  evaluate(model, data, out, true);
}

namespace detail {
void evaluateClosuresPortable(const Model& model, const Data& data, const ClosureOutputs& out) {
  evaluate(model, data, out, false);
}
}  // namespace detail

void closureForceRates(const Model& model, const Data& data, Matrix6N& force_a_rate,
                       Matrix6N& force_b_rate) {
  assert(force_a_rate.cols() >= model.nconstraints && force_b_rate.cols() >= model.nconstraints);
  // A row's force is a unit force along n at a point p, [p × n; n], or a unit couple [n; 0]
  // (pointRow, angularRow): its rate [ṗ × n + p × ṅ; ṅ], or [ṅ; 0], with ṗ the point's velocity
  // and ṅ = 0 for a direction fixed in W, ω_a × n for one fixed in A
  const auto point_rate = [](const Vector3& p, const Vector3& p_rate, const Vector3& n,
                             const Vector3& n_rate) {
    Vector6 g;
    g.head<3>() = p_rate.cross(n) + p.cross(n_rate);
    g.tail<3>() = n_rate;
    return g;
  };
  const Vector3 zero = Vector3::Zero();
  int row = 0;
  for (const LoopClosure& c : model.loops) {
    const int first_row = row;
    const bool with_rotation =
        c.type == ClosureType::kRevolute || c.type == ClosureType::kPrismatic;
    const FrameMotion A = frameMotion(model, data, c.body_a, c.frame_a, with_rotation,
                                      FrameTerms::kVelocity);
    const FrameMotion B = frameMotion(model, data, c.body_b, c.frame_b, with_rotation,
                                      FrameTerms::kVelocity);
    const auto set = [&](const Vector6& g_a_rate, const Vector6& g_b_rate) {
      force_a_rate.col(row) = g_a_rate;
      force_b_rate.col(row) = g_b_rate;
      ++row;
    };
    // the three rows e_k · (p_B − p_A) (directions fixed in W)
    const auto point_rows = [&] {
      for (int k = 0; k < 3; ++k) {
        const Vector3 n = Vector3::Unit(k);
        set(point_rate(A.p, A.v_point, -n, zero), point_rate(B.p, B.v_point, n, zero));
      }
    };
    const auto fixed_angular_rows = [&] {
      for (int k = 0; k < 3; ++k) set(Vector6::Zero(), Vector6::Zero());
    };
    switch (c.type) {
      case ClosureType::kBall:
        point_rows();
        break;
      case ClosureType::kWeld:
        point_rows();
        fixed_angular_rows();
        break;
      case ClosureType::kRevolute:
        point_rows();
        // ± n · ω with the normals n fixed in A
        for (const Vector3* normal : {&c.normal_1, &c.normal_2}) {
          const Vector3 n_rate = A.omega.cross(A.R * *normal);
          Vector6 g = Vector6::Zero();
          g.head<3>() = n_rate;
          set(-g, g);
        }
        break;
      case ClosureType::kPrismatic: {
        fixed_angular_rows();
        // g_a = [p_A × (−n) + n × d; −n], g_b = [p_B × n; n], n fixed in A, d = p_B − p_A
        const Vector3 d = B.p - A.p, d_rate = B.v_point - A.v_point;
        for (const Vector3* normal : {&c.normal_1, &c.normal_2}) {
          const Vector3 n = A.R * *normal;
          const Vector3 n_rate = A.omega.cross(n);
          Vector6 g_a = point_rate(A.p, A.v_point, -n, -n_rate);
          g_a.head<3>() += n_rate.cross(d) + n.cross(d_rate);
          set(g_a, point_rate(B.p, B.v_point, n, n_rate));
        }
        break;
      }
      case ClosureType::kDistance: {
        // u = d / |d|, u̇ = (ḋ − u (u · ḋ)) / |d|
        const Vector3 d = B.p - A.p, d_rate = B.v_point - A.v_point;
        const double length = d.norm();
        const bool apart = length > std::numeric_limits<double>::min();
        const Vector3 u = apart ? Vector3(d / length) : Vector3::UnitX();
        const Vector3 u_rate = apart ? Vector3((d_rate - u * u.dot(d_rate)) / length) : zero;
        set(point_rate(A.p, A.v_point, -u, -u_rate), point_rate(B.p, B.v_point, u, u_rate));
        break;
      }
    }
    assert(row == first_row + closureRows(c.type));
    static_cast<void>(first_row);
  }
}

void findStructuralClosureRows(const Model& model, ConstraintRows& rows) {
  // A row is identically zero by the model's geometry: the exact zeros of its axes (a planar
  // linkage's out-of-plane rows), the same at every configuration. Such a row is zero at three
  // random configurations; another is not, but at a measure-zero set of them (and then not to
  // the last bit). It is left out for good: its multiplier is zero, its pivot none. A row that
  // is zero only at some states (a singular position) stays, and the pivoted factorisation's
  // rank test meets it there.
  const int m = model.nconstraints;
  rows.active_count = 0;
  if (m == 0) return;
  std::vector<char> nonzero(static_cast<std::size_t>(m), 0);
  Data data(model);
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> angle(-3.0, 3.0);
  Eigen::VectorXd v(model.nv), q(model.nq);
  const Eigen::VectorXd neutral = model.neutralConfiguration();
  for (int trial = 0; trial < 3; ++trial) {
    for (int d = 0; d < model.nv; ++d) v(d) = angle(rng);
    integrateConfiguration(model, neutral, v, 1.0, q);
    forwardKinematics(model, data, q);
    evaluateClosures(model, data, {.rows = &rows});
    for (int r = 0; r < m; ++r) nonzero[r] |= !rows.jacobian.row(r).isZero(0.0);
  }
  for (int r = 0; r < m; ++r)
    if (nonzero[r]) rows.active[rows.active_count++] = r;
}

double addForceElementForces(const Model& model, const Data& data, Eigen::VectorXd& forces) {
  double dissipated = 0.0;
  for (const SpringDamper& e : model.force_elements) {
    const Transform at_a(Matrix3::Identity(), e.point_a), at_b(Matrix3::Identity(), e.point_b);
    const FrameMotion A = frameMotion(model, data, e.body_a, at_a, false, FrameTerms::kPose);
    const FrameMotion B = frameMotion(model, data, e.body_b, at_b, false, FrameTerms::kPose);
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
    dissipated += e.damping * rate * rate;
    const Vector6 g_b = pointRow(B.p, u), g_a = pointRow(A.p, -u);
    for (int dof = lastDof(model, e.body_b); dof >= 0; dof = model.dof_parent[dof])
      forces(dof) -= tension * g_b.dot(data.S_W.col(dof));
    for (int dof = lastDof(model, e.body_a); dof >= 0; dof = model.dof_parent[dof])
      forces(dof) -= tension * g_a.dot(data.S_W.col(dof));
  }
  return dissipated;
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
