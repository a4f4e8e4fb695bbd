#include "engine/algorithms/frame_jacobian.h"

#include <cassert>

namespace hilsim {

namespace {

// Column d = the coefficient of v_d in V_b (seed 004 (3.13) unrolled), in W about W's origin.
void worldJacobian(const Model& model, const Data& data, int body, Matrix6N& J) {
  J.setZero();
  for (int k = body; k > 0; k = model.parent[k]) {
    J.middleCols(model.idx_v[k], model.nv_joint[k]) =
        data.S_W.middleCols(model.idx_v[k], model.nv_joint[k]);
    if (!model.has_flexible_bodies) continue;
    // the parent's node moves the joint frame by Ψ_t η̇_λ; k's own hinge node sits at the joint,
    // so k's frame moves by −Ψ_d η̇_k relative to it. Accumulated: a flexible body on the path
    // gets both its child's Ψ_t and its own −Ψ_d on the same modal columns.
    const int parent = model.parent[k];
    if (model.parent_node[k] >= 0)
      J.middleCols(model.idxModesV(parent), model.nmodes[parent]) += data.flex.Psi_t_W[k];
    if (model.nmodes[k] > 0 && model.flexible[k].hinge_node >= 0)
      J.middleCols(model.idxModesV(k), model.nmodes[k]) -= data.flex.Psi_d_W[k];
  }
}

}  // namespace

void frameJacobian(const Model& model, const Data& data, int frame, JacobianReference reference,
                   Matrix6N& J) {
  assert(frame >= 0 && frame < static_cast<int>(model.frames.size()));
  assert(J.cols() == model.nv);
  const Frame& f = model.frames[frame];
  worldJacobian(model, data, f.body, J);
  if (reference == JacobianReference::kWorld) return;

  Transform X_WF;
  data.X_WB[f.body].compose(f.placement, X_WF);
  if (reference == JacobianReference::kLocal) {
    // the motion of each column from W (about its origin) to F (about F's origin)
    for (int d = 0; d < model.nv; ++d) {
      auto column = J.col(d);
      X_WF.invActMotion(column, column);
    }
    return;
  }
  // W's axes at F's origin p: the linear rows follow the point at p, v_p = v_O + ω × p
  const Vector3& p = X_WF.translation;
  for (int d = 0; d < model.nv; ++d) J.col(d).tail<3>() += J.col(d).head<3>().cross(p);
}

}  // namespace hilsim
