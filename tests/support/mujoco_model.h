// The MuJoCo side of the cross-checks and the peer benchmarks: a URDF loaded into MuJoCo 2.2 with
// only the smooth dynamics left (no contacts, limits, equality or friction-loss constraints),
// optionally on a free joint at the root, and the maps between MuJoCo's and hilsim's coordinates.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <Eigen/Core>
#include <mujoco/mujoco.h>

#include "engine/model/model.h"

namespace hilsim::test {

/// Disable flags that leave MuJoCo's smooth dynamics only:
/// qacc = M⁻¹ (qfrc_applied + qfrc_passive − qfrc_bias).
inline constexpr int kMujocoSmoothDynamicsOnly = mjDSBL_CONSTRAINT | mjDSBL_EQUALITY |
                                                 mjDSBL_FRICTIONLOSS | mjDSBL_LIMIT |
                                                 mjDSBL_CONTACT;

/// The URDF text MuJoCo is given, from the original text:
///  - a `<mujoco><compiler balanceinertia="true"/></mujoco>` element when `balance_inertia`;
///  - with `floating_base`, a free joint between the world and the root link: a URDF `floating`
///    joint from a new massless link `hilsim_world` that MuJoCo's URDF importer (fusestatic) welds
///    into the world. When the root link is named "world" (MuJoCo treats it as its world body),
///    its single outgoing joint becomes `floating` instead; that joint's origin must be the
///    identity, so that MuJoCo's qpos and hilsim's q are the same pose.
/// Throws std::runtime_error if the text is not a URDF this can edit.
std::string urdfForMujoco(const std::string& urdf_xml, bool floating_base, bool balance_inertia);

/// A MuJoCo model and data loaded from a URDF file, with kMujocoSmoothDynamicsOnly set.
class MujocoModel {
 public:
  /// Loads `urdf_path`. MuJoCo refuses inertias that violate the triangle inequality (anymal_b's
  /// 1e-6 kg dummy root link); then the model is loaded again with `balanceinertia`, which replaces
  /// the offending body's principal moments by their mean (balancedInertia() is then true).
  /// Gravity is MuJoCo's default (0, 0, −9.81). Throws std::runtime_error with MuJoCo's message.
  MujocoModel(const std::string& urdf_path, bool floating_base);
  /// MJCF text as given (mjcfWithLoops, mjcfWithContacts); its equality constraints stay on,
  /// contacts, limits and friction loss off unless `contacts` (then MuJoCo's whole constraint
  /// stage runs). Throws std::runtime_error with MuJoCo's message.
  struct Mjcf {
    std::string xml;
    bool contacts = false;
  };
  explicit MujocoModel(const Mjcf& mjcf);
  ~MujocoModel();
  MujocoModel(const MujocoModel&) = delete;
  MujocoModel& operator=(const MujocoModel&) = delete;

  mjModel* model() const { return m_; }
  mjData* data() const { return d_; }
  /// True if MuJoCo needed `balanceinertia` to accept the model.
  bool balancedInertia() const { return balanced_inertia_; }

 private:
  mjModel* m_ = nullptr;
  mjData* d_ = nullptr;
  bool balanced_inertia_ = false;
};

/// Where hilsim's coordinates live in MuJoCo: q(k) ↔ qpos[q[k]], v(k) ↔ qvel[v[k]] (the same
/// index serves qacc, qfrc_* and the rows/columns of the mass matrix). Joints are matched by name,
/// and a hilsim free joint with MuJoCo's free joint. Free-joint coordinates are the same in both
/// ([x y z qw qx qy qz]; [linear velocity in W, angular velocity in the body frame]).
struct CoordinateMap {
  std::vector<int> q;  ///< [nq]
  std::vector<int> v;  ///< [nv]

  /// Writes (q, v) given in hilsim order into qpos, qvel, and tau into qfrc_applied (d->ctrl is
  /// unused: the URDFs have no actuators).
  void setMujocoState(const mjModel* m, mjData* d, const Eigen::VectorXd& q_hilsim,
                      const Eigen::VectorXd& v_hilsim, const Eigen::VectorXd& tau_hilsim) const;
  /// A MuJoCo dof vector (qacc, qfrc_bias, ...) in hilsim order.
  Eigen::VectorXd dofVector(const mjtNum* mujoco_vector) const;
  /// MuJoCo's dense mass matrix (from mj_fullM, nv × nv row-major) in hilsim order.
  Eigen::MatrixXd dofMatrix(const mjtNum* mujoco_full_matrix) const;
};

/// Matches the joints of `model` and `m`. Throws std::runtime_error naming the first joint that has
/// no counterpart, or whose type or size differs.
CoordinateMap mapCoordinates(const Model& model, const mjModel* m);

/// A hilsim Model built from MuJoCo's compiled arrays: body tree and names, body_pos/body_quat,
/// joint types and axes, body_mass/ipos/iquat/inertia, dof damping and armature, joint ranges,
/// opt.gravity. This is the model MuJoCo actually simulates, independent of any file loader.
/// Throws std::runtime_error for what it cannot express (several joints on one body, a joint off
/// its body's origin, a non-zero joint reference, a free joint below the world).
Model modelFromMujoco(const mjModel* m);

/// Replaces the inertia of every moving hilsim body by the one MuJoCo compiled for the body of the
/// same name: mass, centre of mass, and R(iquat) diag(inertia) Rᵀ. Both merge welded links into
/// the same moving ancestor, so body names and frames agree. Returns the largest change of an
/// inertia entry relative to that body's largest moment (what MuJoCo's compiler perturbed).
/// Throws std::runtime_error if a body has no counterpart.
double useMujocoInertias(const mjModel* m, Model& model);

/// MJCF of a hilsim model whose joints are all revolute, with one `connect` equality constraint
/// per ball or revolute loop (MuJoCo's soft point constraint; a revolute loop's axis rows are left
/// out, which is exact for a planar linkage). MuJoCo computes a connect's second anchor from the
/// compiled configuration, so the bodies are written at `q_assembled` (each joint's `ref`), where
/// the loops hold. Gravity, inertias, damping as in `model`; RK4 at `timestep`; `solref` is the
/// constraints' time constant and damping ratio.
std::string mjcfWithLoops(const Model& model, const Eigen::VectorXd& q_assembled, double timestep,
                          const std::string& solref);

/// MJCF of a hilsim model on the ground: a free joint at the root (body 1, placed at the identity)
/// and revolute joints below it (MuJoCo's qpos and qvel are then hilsim's q and v in order), each
/// contact sphere a sphere geom on its body, the ground a plane, elliptic friction cones with the
/// ground's μ, and the contact softness of the model (solref τ ζ, solimp d d: MuJoCo's impedance
/// held constant, as hilsim's). Gravity, inertias, damping as in `model`; no joint limits (a
/// model with enforced limits is refused); `integrator` "Euler" or "RK4" at `timestep`.
std::string mjcfWithContacts(const Model& model, double timestep, const std::string& integrator);

}  // namespace hilsim::test
