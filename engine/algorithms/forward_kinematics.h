// Forward kinematics: pose, velocity and acceleration of every body.
// References:
//   Featherstone, "Rigid Body Dynamics Algorithms", Springer (2008) [RBDA]
#pragma once

#include "engine/model/data.h"

namespace hilsim {

/// Poses data.X_WB and motion subspaces data.S_W at configuration q (nq).
void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q);

/// As above, plus spatial velocities data.V_W (in W about W's origin) for velocity v (nv).
void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v);

/// As above, plus spatial accelerations data.A_W (true accelerations, no gravity offset) for
/// joint accelerations a (nv).
void forwardKinematics(const Model& model, Data& data, const Eigen::VectorXd& q,
                       const Eigen::VectorXd& v, const Eigen::VectorXd& a);

/// Spatial accelerations data.A_W alone (true accelerations, A_W[0] = 0) for joint accelerations
/// a (nv), at the kinematics in Data (X_WB, S_W, c_W; flexible: Ψ) of the last forward dynamics or
/// forwardKinematics(q, v) at the same (q, v): one outward sweep, no trigonometry. Allocation-free.
void bodyAccelerations(const Model& model, Data& data, const Eigen::VectorXd& a);

/// Velocity of body i's frame expressed in that frame: [ω_B; v of the origin of B] (call after
/// forwardKinematics with v).
MotionVector bodyVelocityInBodyFrame(const Data& data, int body);

/// Classical (not spatial) linear velocity of body i's origin, in W [m/s].
Vector3 bodyOriginVelocity(const Data& data, int body);

/// Classical linear acceleration of body i's origin, in W [m/s²] (after forwardKinematics with a).
Vector3 bodyOriginAcceleration(const Data& data, int body);

/// Pose in W of node `node` of flexible body `body`, deformed by the body's modal coordinates in
/// q (call after forwardKinematics with the same q).
Transform nodePlacement(const Model& model, const Data& data, const Eigen::VectorXd& q, int body,
                        int node);

/// Spatial velocity of that node's frame, in W about W's origin (after forwardKinematics with q
/// and v).
MotionVector nodeVelocity(const Model& model, const Data& data, const Eigen::VectorXd& q,
                          const Eigen::VectorXd& v, int body, int node);

}  // namespace hilsim
