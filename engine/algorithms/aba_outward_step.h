// The outward sweep of the articulated-body algorithm for one body: joint kinematics, the
// velocity-product acceleration and the start of the articulated quantities, P(k) = M(k) and
// z(k) = b_m(k) (seed 004 (3.13), (3.27), (6.1); RBDA §7.3, first loop of Table 7.1).
#pragma once

#include "engine/model/data.h"

namespace hilsim::detail {

/// For body i of a rigid model, from its parent's X_WB and V_W and from q, v (full vectors):
/// X_WB[i], X_WJ[i], S_W's columns of joint i, V_W[i], c_W[i], inertia_W[i], P_W[i] = M(k) and
/// z_W[i] = V ×* M V, all in W about W's origin. Any joint type.
void abaOutwardStep(const Model& model, Data& data, int i, const double* q, const double* v);

#if defined(__AVX2__) && defined(__FMA__)
#define HILSIM_HAVE_AXIAL_OUTWARD_STEP_AVX2 1

/// abaOutwardStep for a revolute or prismatic joint, with every 3-vector and every column of a
/// 3 × 3 block in one 4-wide AVX2 register (the fourth lane carries a neighbour's value and is
/// never stored where it is read). Same outputs as abaOutwardStep to rounding.
void abaOutwardStepAxialAvx2(const Model& model, Data& data, int i, const double* q,
                             const double* v);
#endif

}  // namespace hilsim::detail
