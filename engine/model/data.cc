#include "engine/model/data.h"

namespace hilsim {

Data::Data(const Model& model)
    : X_WB(model.nbodies),
      X_WJ(model.nbodies),
      S_W(Matrix6N::Zero(6, model.nv)),
      V_W(model.nbodies, MotionVector::Zero()),
      A_W(model.nbodies, MotionVector::Zero()),
      c_W(model.nbodies, MotionVector::Zero()),
      inertia_W(model.nbodies),
      f_W(model.nbodies, ForceVector::Zero()),
      P_W(model.nbodies, Matrix6::Zero()),
      z_W(model.nbodies, ForceVector::Zero()),
      G_W(Matrix6N::Zero(6, model.nv)),
      D_inv(model.nbodies, Matrix6::Zero()),
      nu(Eigen::VectorXd::Zero(model.nv)),
      tau(Eigen::VectorXd::Zero(model.nv)),
      qdd(Eigen::VectorXd::Zero(model.nv)),
      bias_forces(Eigen::VectorXd::Zero(model.nv)),
      M(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      M_factor(Eigen::MatrixXd::Zero(model.nv, model.nv)),
      S_J(6, 6) {}

}  // namespace hilsim
