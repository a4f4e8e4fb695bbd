// The per-body steps of the articulated-body algorithm (aba.cc), each in a portable form and, for
// the joints that make up most robots, in a 4-wide AVX2 form:
//  - outward: joint kinematics, the velocity-product acceleration and the start of the
//    articulated quantities P(k) = M(k), z(k) = b_m(k) (seed 004 (3.13), (3.27), (6.1); RBDA §7.3,
//    first loop of Table 7.1);
//  - inward: the joint step of (6.1) and (7.2) and the articulated inertia and bias handed to the
//    parent.
// References:
//   Jain, Rodriguez, "Recursive Dynamics for Flexible Multibody Systems Using Spatial
//   Operators", JPL Publication 90-26 (1990) [seed 004]
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
#pragma once

#include "engine/model/data.h"

namespace hilsim::detail {

/// For body i of a rigid model, from its parent's X_WB and V_W and from q, v (full vectors):
/// X_WB[i], X_WJ[i], S_W's columns of joint i, V_W[i], c_W[i], inertia_W[i], P_W[i] = M(k) and
/// z_W[i] = V ×* M V, all in W about W's origin. Any joint type.
void abaOutwardStep(const Model& model, Data& data, int i, const double* q, const double* v);

/// For body i that is not a free root (see aba.cc), from P_W[i] and z_W[i] holding P(k), z(k)
/// with the children's contributions: z_W[i] += P c_W[i]; G_W's and nu's entries of joint i,
/// D_inv[i] (and, for a joint of rank r_i < n_i, null_basis[i] and epsilon); and, unless the parent
/// is the world, P_W[parent] += P − G Uᵀ and z_W[parent] += z + G ε (seed 004 (6.1), (7.2)).
void abaInwardStep(const Model& model, Data& data, int i, const double* q,
                   const Eigen::VectorXd& v, const Eigen::VectorXd& tau);

#if defined(__AVX2__) && defined(__FMA__)
#define HILSIM_HAVE_ABA_STEPS_AVX2 1

/// abaOutwardStep for a revolute or prismatic joint, with every 3-vector and every column of a
/// 3 × 3 block in one 4-wide AVX2 register (the fourth lane carries a neighbour's value and is
/// never stored where it is read). Same outputs as abaOutwardStep to rounding.
void abaOutwardStepAxialAvx2(const Model& model, Data& data, int i, const double* q,
                             const double* v);

/// abaInwardStep for a joint of one degree of freedom and rank 1, with each column of P as one
/// 4-wide and one 2-wide register. Same outputs as abaInwardStep to rounding.
void abaInwardStepOneDofAvx2(const Model& model, Data& data, int i, const double* q,
                             const double* v, const double* tau);
#endif

}  // namespace hilsim::detail
