#include "engine/algorithms/aba_steps.h"

#include <cmath>
#include <cstddef>

#include "engine/algorithms/joint_kinematics.h"

#include "engine/spatial/lanes.h"

namespace hilsim::detail {

void abaOutwardStep(const Model& model, Data& data, int i, const double* q, const double* v) {
  jointPositionStep(model, data, i, q);
  MotionVector joint_velocity;
  jointVelocityStep(model, data, i, q, v, joint_velocity);
  bodyInertiaStep(model, data, i);
  // P(k) = M(k) and z(k) = b_m(k) = V ×* M V
  const Inertia& I = data.inertia_W[i];
  I.matrix(data.P_W[i]);
  ForceVector momentum;
  I.apply(data.V_W[i], momentum);
  crossForce(data.V_W[i], momentum, data.z_W[i]);
}

void abaInwardStep(const Model& model, Data& data, int i, const double* q,
                   const Eigen::VectorXd& v, const Eigen::VectorXd& tau) {
  const int iv = model.idx_v[i];
  const int parent = model.parent[i];
  const Matrix6& P = data.P_W[i];
  ForceVector& z = data.z_W[i];
  z.noalias() += P * data.c_W[i];  // z(k) = Φ z⁺(k−1) + P(k) a_m(k) + b_m(k)
  withJointSize(model.nv_joint[i], [&](auto n) {
    constexpr int NV = decltype(n)::value;
    Eigen::Matrix<double, 6, NV> U;
    Eigen::Matrix<double, NV, 1> epsilon;
    articulatedJointStep<NV>(model, data, i, P, z, q, v, tau, U, epsilon);
    if (parent == 0) return;
    // z⁺(k) = z + G ε and P⁺(k) = τ̄ P = P − G ℋ P, accumulated straight into the parent
    const auto G = data.G_W.middleCols<NV>(iv);
    ForceVector& z_parent = data.z_W[parent];
    z_parent += z;
    z_parent.noalias() += G * epsilon;
    Matrix6& P_parent = data.P_W[parent];
    P_parent += P;
    if constexpr (NV == 1) {
      P_parent.noalias() -= G * U.transpose();
    } else {
      // P − U D⁻¹ Uᵀ written symmetric: G Uᵀ is symmetric only up to round-off, and the next
      // joint's U = P S and D = Sᵀ P S carry that asymmetry on, amplified at every multi-DoF
      // joint (a chain of 20 ball joints drifted to 6e-7 relative, of 40 to O(1);
      // FormulationChains in formulations_test)
      Matrix6 update;
      update.noalias() = G * U.transpose();
      P_parent -= 0.5 * (update + update.transpose());
    }
  });
}

#ifdef HILSIM_HAVE_ABA_STEPS_AVX2

// Why by hand: Eigen packs fixed-size blocks by the largest packet that divides their size, so
// every 3-vector, 3 × 3 column and 6-vector runs on 2-wide packets (plus a scalar for the odd
// sizes), with shuffles at each cross product: the outward step took about 540 instructions per
// body. Written 4-wide, ABA runs 25–30 % faster (docs/PERFORMANCE.md, "The 4-wide ABA steps").
// Here a 3-vector is one register: lanes x, y, z, and a fourth lane that holds whatever follows
// the vector in memory (zero after load3). That lane is carried and overwritten, never kept:
// every 4-wide store that writes it is followed by the store of the next vector over its address.
namespace {

using namespace lanes;  // NOLINT: the 4-wide 3-vector helpers (engine/spatial/lanes.h)

// A 6-vector as rows 0–3 in a 4-wide register and rows 4–5 in a 2-wide one.
struct SixLanes {
  Lanes top;
  __m128d bottom;
};

inline SixLanes load6(const double* p) { return {load4(p), _mm_loadu_pd(p + 4)}; }
inline void store6(double* p, const SixLanes& x) {
  store4(p, x.top);
  _mm_storeu_pd(p + 4, x.bottom);
}
inline SixLanes add6(const SixLanes& a, const SixLanes& b) {
  return {add(a.top, b.top), _mm_add_pd(a.bottom, b.bottom)};
}
/// a s + b for a scalar s held in every lane of s4
inline SixLanes fma6(const SixLanes& a, Lanes s4, const SixLanes& b) {
  return {fma(a.top, s4, b.top), _mm_fmadd_pd(a.bottom, _mm256_castpd256_pd128(s4), b.bottom)};
}
/// b − a s
inline SixLanes fnma6(const SixLanes& a, Lanes s4, const SixLanes& b) {
  return {_mm256_fnmadd_pd(a.top, s4, b.top),
          _mm_fnmadd_pd(a.bottom, _mm256_castpd256_pd128(s4), b.bottom)};
}
/// a s for a scalar s held in every lane of s4
inline SixLanes scale6(const SixLanes& a, Lanes s4) {
  return {mul(a.top, s4), _mm_mul_pd(a.bottom, _mm256_castpd256_pd128(s4))};
}
inline double dot6(const SixLanes& a, const SixLanes& b) {
  const Lanes top = mul(a.top, b.top);
  const __m128d pairs = _mm_fmadd_pd(a.bottom, b.bottom,
                                     _mm_add_pd(_mm256_castpd256_pd128(top),
                                                _mm256_extractf128_pd(top, 1)));
  return _mm_cvtsd_f64(_mm_add_sd(pairs, _mm_unpackhi_pd(pairs, pairs)));
}

// the 4-wide loads and stores above rely on these layouts
static_assert(sizeof(Matrix3) == 9 * sizeof(double) && sizeof(Vector3) == 3 * sizeof(double));
static_assert(offsetof(Transform, translation) == sizeof(Matrix3));
static_assert(offsetof(Inertia, inertia_com) == offsetof(Inertia, com) + sizeof(Vector3));
static_assert(offsetof(Model::AxialJointTerms, k_cos) == sizeof(Matrix3) &&
              offsetof(Model::AxialJointTerms, k_sin) == 2 * sizeof(Matrix3) &&
              offsetof(Model::AxialJointTerms, axis_parent) == 3 * sizeof(Matrix3));
static_assert(sizeof(MotionVector) == 6 * sizeof(double) && sizeof(Matrix6) == 36 * sizeof(double));

}  // namespace

void abaOutwardStepAxialAvx2(const Model& model, Data& data, int i, const double* q,
                             const double* v) {
  const bool prismatic = model.joint_type[i] == JointType::kPrismatic;
  assert(prismatic || model.joint_type[i] == JointType::kRevolute);
  const Model::AxialJointTerms& terms = model.axial_joint_terms[i];
  const int parent = model.parent[i];
  const int iv = model.idx_v[i];
  const double q_i = q[model.idx_q[i]];

  // Transform is R (9, column-major) then p (3): three 4-wide column loads stay inside it
  const double* X_parent = data.X_WB[parent].rotation.data();
  const Lanes Rp0 = load4(X_parent), Rp1 = load4(X_parent + 3), Rp2 = load4(X_parent + 6);
  const Lanes p_parent = load3(data.X_WB[parent].translation.data());

  // R_λB = k0 + cos θ k_cos + sin θ k_sin, the 9 entries in three 4-wide chunks (the last chunk
  // reads on into the next member of AxialJointTerms)
  double cos_q = 0.0, sin_q = 0.0;
  if (!prismatic) {
    cos_q = std::cos(q_i);
    sin_q = std::sin(q_i);
  }
  const Lanes c4 = _mm256_set1_pd(cos_q), s4 = _mm256_set1_pd(sin_q);
  alignas(32) double r_pb[12];
  for (int o = 0; o < 12; o += 4)
    _mm256_store_pd(r_pb + o, fma(s4, load4(terms.k_sin.data() + o),
                                  fma(c4, load4(terms.k_cos.data() + o),
                                      load4(terms.k0.data() + o))));
  // R_WB = R_Wλ R_λB, the joint origin p_J = p_λ + R_Wλ p_λJ and the axis a_W = R_Wλ a_λ
  const Lanes R0 = times(Rp0, Rp1, Rp2, r_pb);
  const Lanes R1 = times(Rp0, Rp1, Rp2, r_pb + 3);
  const Lanes R2 = times(Rp0, Rp1, Rp2, r_pb + 6);
  const Lanes p_joint =
      add(times(Rp0, Rp1, Rp2, terms.origin_parent.data()), p_parent);
  const Lanes axis = times(Rp0, Rp1, Rp2, terms.axis_parent.data());
  // revolute: p_B = p_J, S = [a; p × a]; prismatic: p_B = p_J + a q, S = [0; a]
  Lanes p, S_angular, S_linear;
  if (prismatic) {
    p = fma(axis, _mm256_set1_pd(q_i), p_joint);
    S_angular = _mm256_setzero_pd();
    S_linear = axis;
  } else {
    p = p_joint;
    S_angular = axis;
    S_linear = cross(p, axis);
  }
  double* X = data.X_WB[i].rotation.data();
  store4(X, R0);
  store4(X + 3, R1);
  store4(X + 6, R2);
  store3(data.X_WB[i].translation.data(), p);
  Transform& X_WJ = data.X_WJ[i];
  if (prismatic) X_WJ.rotation = data.X_WB[i].rotation;  // a slide does not rotate
  store3(X_WJ.translation.data(), p_joint);
  double* S = data.S_W.col(iv).data();
  store4(S, S_angular);
  store3(S + 3, S_linear);

  // V = V_λ + S v and c = V_λ ×ᵐ S v (seed 004 (3.27); Ṡ_J = 0)
  const double* V_parent = data.V_W[parent].data();
  const Lanes w_parent = load4(V_parent), v_parent = load3(V_parent + 3);
  const Lanes v_i = broadcast(v + iv);
  const Lanes joint_w = mul(S_angular, v_i), joint_v = mul(S_linear, v_i);
  const Lanes w = add(w_parent, joint_w), lin_v = add(v_parent, joint_v);
  double* V = data.V_W[i].data();
  store4(V, w);
  store3(V + 3, lin_v);
  double* c = data.c_W[i].data();
  store4(c, cross(w_parent, joint_w));
  store3(c + 3, add(cross(w_parent, joint_v), cross(v_parent, joint_w)));

  // body inertia in W: c_W = R c_B + p, I_c,W = (R I_c,B) Rᵀ with R(j, k) = X[3k + j]
  const Inertia& I_B = model.inertias[i];
  const double mass = I_B.mass;
  const Lanes com = add(times(R0, R1, R2, I_B.com.data()), p);
  const double* I_cB = I_B.inertia_com.data();
  const Lanes T0 = times(R0, R1, R2, I_cB);
  const Lanes T1 = times(R0, R1, R2, I_cB + 3);
  const Lanes T2 = times(R0, R1, R2, I_cB + 6);
  const Lanes I0 = fma(T2, broadcast(X + 6), fma(T1, broadcast(X + 3), mul(T0, broadcast(X))));
  const Lanes I1 =
      fma(T2, broadcast(X + 7), fma(T1, broadcast(X + 4), mul(T0, broadcast(X + 1))));
  const Lanes I2 =
      fma(T2, broadcast(X + 8), fma(T1, broadcast(X + 5), mul(T0, broadcast(X + 2))));
  Inertia& I_W = data.inertia_W[i];
  I_W.mass = mass;
  store4(I_W.com.data(), com);  // Inertia is mass, com, inertia_com: the fourth lane is I_c(0, 0)
  double* I_cW = I_W.inertia_com.data();
  store4(I_cW, I0);
  store4(I_cW + 3, I1);
  store3(I_cW + 6, I2);

  // P = M(k) (RBDA (2.63)): [I_c + m c̃ c̃ᵀ, m c̃; m c̃ᵀ, m 1], m c̃ c̃ᵀ = m |c|² 1 − h cᵀ, h = m c;
  // column j of m c̃ is h × e_j and of m c̃ᵀ its negative
  const Lanes m4 = _mm256_set1_pd(mass);
  const Lanes h = mul(m4, com);
  const Lanes m_c2 = _mm256_set1_pd(sum3(mul(h, com)));
  const Lanes e0 = _mm256_setr_pd(1, 0, 0, 0), e1 = _mm256_setr_pd(0, 1, 0, 0),
              e2 = _mm256_setr_pd(0, 0, 1, 0);
  const Lanes H0 = cross(h, e0), H1 = cross(h, e1), H2 = cross(h, e2);
  double* P = data.P_W[i].data();
  store4(P, fma(m_c2, e0, _mm256_fnmadd_pd(h, splat<0>(com), I0)));
  store4(P + 3, negate(H0));
  store4(P + 6, fma(m_c2, e1, _mm256_fnmadd_pd(h, splat<1>(com), I1)));
  store4(P + 9, negate(H1));
  store4(P + 12, fma(m_c2, e2, _mm256_fnmadd_pd(h, splat<2>(com), I2)));
  store4(P + 15, negate(H2));
  store4(P + 18, H0);
  store4(P + 21, mul(m4, e0));
  store4(P + 24, H1);
  store4(P + 27, mul(m4, e1));
  store4(P + 30, H2);
  store3(P + 33, mul(m4, e2));

  // z = V ×* (M V): linear momentum l = m (v + ω × c), angular n = I_c ω + c × l
  const Lanes momentum = mul(m4, add(lin_v, cross(w, com)));
  const Lanes angular =
      fma(I2, splat<2>(w), fma(I1, splat<1>(w), fma(I0, splat<0>(w), cross(com, momentum))));
  double* z = data.z_W[i].data();
  store4(z, add(cross(w, angular), cross(lin_v, momentum)));
  store3(z + 3, cross(w, momentum));
}

void abaInwardStepOneDofAvx2(const Model& model, Data& data, int i, const double* q,
                             const double* v, const double* tau) {
  assert(model.nv_joint[i] == 1 && model.joint_rank[i] == 1);
  const int iv = model.idx_v[i];
  const int parent = model.parent[i];
  // U = P S and P c, column by column: P's columns stay in registers for the parent update
  const double* P = data.P_W[i].data();
  const double* S = data.S_W.col(iv).data();
  const double* c = data.c_W[i].data();
  SixLanes P_columns[6];
  SixLanes U = {_mm256_setzero_pd(), _mm_setzero_pd()};
  SixLanes Pc = U;
  for (int j = 0; j < 6; ++j) {
    P_columns[j] = load6(P + 6 * j);
    U = fma6(P_columns[j], broadcast(S + j), U);
    Pc = fma6(P_columns[j], broadcast(c + j), Pc);
  }
  // z(k) = z⁺ + P a_m + b_m
  double* z_data = data.z_W[i].data();
  const SixLanes z = add6(load6(z_data), Pc);
  store6(z_data, z);
  // D = ℋ P ℋ* + armature, ε = τ − d v − k (q − q_ref) − ℋ z, G = U D⁻¹, ν = D⁻¹ ε
  const SixLanes S6 = load6(S);
  const Model::DofParameters& joint = model.dof_parameters[iv];
  const double D = dot6(S6, U) + joint.armature;
  const double epsilon = tau[iv] - joint.damping * v[iv] -
                         joint.stiffness * (q[model.idx_q[i]] - joint.spring_reference) -
                         dot6(S6, z);
  const double D_inv = 1.0 / D;
  data.D_inv[i](0, 0) = D_inv;
  data.nu[iv] = D_inv * epsilon;
  const SixLanes G = scale6(U, _mm256_set1_pd(D_inv));
  store6(data.G_W.col(iv).data(), G);
  if (parent == 0) return;
  // z⁺(λ) += z + G ε, P⁺(λ) += P − G Uᵀ (column j of G Uᵀ is G U_j)
  double* z_parent = data.z_W[parent].data();
  store6(z_parent, fma6(G, _mm256_set1_pd(epsilon), add6(load6(z_parent), z)));
  alignas(32) double U_entries[8];
  store4(U_entries, U.top);
  _mm_store_pd(U_entries + 4, U.bottom);
  double* P_parent = data.P_W[parent].data();
  for (int j = 0; j < 6; ++j) {
    double* column = P_parent + 6 * j;
    store6(column, fnma6(G, broadcast(U_entries + j), add6(load6(column), P_columns[j])));
  }
}

#endif  // HILSIM_HAVE_ABA_STEPS_AVX2

}  // namespace hilsim::detail
