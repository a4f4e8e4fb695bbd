// Model: the constant description of a multibody system. Built once (ModelBuilder, loaders),
// never changed after; every algorithm takes it as `const Model&`.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include "engine/model/closures.h"
#include "engine/model/contact.h"
#include "engine/model/flexible_body.h"
#include "engine/model/joint.h"
#include "engine/model/visual.h"
#include "engine/spatial/inertia.h"

namespace hilsim {

/// A model that cannot be built, or a model file that cannot be read. The message names the file
/// and element where one is known.
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A named frame rigidly attached to a body: every body's own frame, and the frames of links that
/// were welded (fixed joints) into their parent.
struct Frame {
  std::string name;
  int body = 0;          ///< index of the body it moves with
  Transform placement;   ///< X_BF: pose of the frame in that body's frame
};

/// Topology and parameters of a tree of rigid bodies.
///
/// Bodies are numbered 0 … nbodies−1; body 0 is the world (fixed, no joint, no inertia) and
/// parent[i] < i for every i ≥ 1, so a loop over increasing i runs base → tips. Body i ≥ 1 is
/// moved by joint i, whose frame J_i is fixed on the parent at `joint_placement[i]`; body i's frame
/// is the child frame of that joint. Coordinates are ordered by body: body i owns its joint's
/// q[idx_q[i] … idx_q[i]+nq_joint[i]) and v[idx_v[i] … idx_v[i]+nv_joint[i]), followed by its
/// modal coordinates η (nmodes[i] of them, zero for a rigid body) at q[idxModesQ(i) …) and
/// v[idxModesV(i) …).
///
/// Flexible bodies (seed 004): body i carries `flexible[i]`; its own joint's child frame is its
/// hinge node (or its frame when it has none), and a child joint j attaches at node
/// `parent_node[j]` of it, `joint_placement[j]` then being relative to that node's undeformed frame.
struct Model {
  std::string name;
  /// What the loader accepted or changed that a user should know (one line each, naming the
  /// element): e.g. a URDF link whose principal moments break the triangle inequality.
  std::vector<std::string> load_warnings;
  int nbodies = 1;  ///< including the world
  int nq = 0;       ///< configuration size
  int nv = 0;       ///< velocity size (degrees of freedom)

  // --- per body, [nbodies]; entries for the world are placeholders ---
  std::vector<std::string> body_names;
  std::vector<int> parent;                  ///< parent body; parent[0] = −1
  std::vector<std::string> joint_names;
  std::vector<Joint> joints;
  /// joints[i].type again, packed (packSweepData): the sweeps branch on it without pulling a
  /// whole Joint (80 bytes) through the caches per body
  std::vector<JointType> joint_type;
  std::vector<Transform> joint_placement;   ///< X_{λ(i) J_i}: joint frame in the parent body frame
  std::vector<Inertia> inertias;            ///< body inertia in its own frame
  std::vector<int> idx_q, idx_v, nq_joint, nv_joint;

  // --- per degree of freedom, [nv] ---
  std::vector<int> dof_parent;   ///< nearest ancestor dof (tree of dofs), −1 at a root
  std::vector<int> dof_body;     ///< body whose joint owns the dof
  Eigen::VectorXd damping;       ///< viscous joint damping, τ = −d v [N·m·s/rad or N·s/m]
  Eigen::VectorXd armature;      ///< rotor inertia reflected to the joint [kg·m² or kg]
  Eigen::VectorXd stiffness;     ///< joint spring of 1-DoF joints, τ = −k (q − q_ref)
                                 ///< [N·m/rad or N/m]; zero for other joints
  Eigen::VectorXd spring_reference;  ///< q_ref of that spring [rad or m]
  /// armature, damping, stiffness and spring_reference again, packed per dof (packSweepData): a
  /// sweep's joint step reads them from one stream instead of four
  struct DofParameters {
    double armature = 0.0, damping = 0.0, stiffness = 0.0, spring_reference = 0.0;
  };
  std::vector<DofParameters> dof_parameters;  ///< [nv]
  Eigen::VectorXd lower_limit;   ///< position limits of 1-DoF joints (−inf otherwise) [rad or m];
  Eigen::VectorXd upper_limit;   ///< (+inf otherwise): rows of the constraint stage when
                                 ///< limits_enforced
  Eigen::VectorXd velocity_limit;  ///< [rad/s or m/s], +inf when unknown; data only
  Eigen::VectorXd effort_limit;    ///< [N·m or N], +inf when unknown; data only
  /// Coulomb friction of 1-DoF joints [N·m or N], 0 for none (and for other dofs): a row of the
  /// constraint stage bounded by ±friction (docs/CONTACT.md)
  Eigen::VectorXd friction;

  /// Revolute and prismatic joints, precomputed (packSweepData) so the hot sweeps skip the
  /// generic joint transform: R_{λ(i) B}(θ) = k0 + cos θ k_cos + sin θ k_sin (Rodrigues folded
  /// into the joint placement; a prismatic joint has k0 = R_{λ(i) J} and k_cos = k_sin = 0), and
  /// the axis in the parent frame. Zero for other joint types.
  struct AxialJointTerms {
    Matrix3 k0 = Matrix3::Zero(), k_cos = Matrix3::Zero(), k_sin = Matrix3::Zero();
    Vector3 axis_parent = Vector3::Zero();
    /// The joint's origin in the parent frame (joint_placement's translation), beside the rest:
    /// the sweep reads one stream for the joint instead of two
    Vector3 origin_parent = Vector3::Zero();
  };
  std::vector<AxialJointTerms> axial_joint_terms;  ///< [nbodies]

  // --- flexible bodies, [nbodies]; nmodes 0 and an empty FlexibleBody for a rigid body ---
  std::vector<int> nmodes;                  ///< number of assumed modes of each body
  std::vector<FlexibleBody> flexible;       ///< modal data (seed 004 §2)
  std::vector<int> parent_node;             ///< node of the parent that joint i attaches at, or −1
                                            ///< (the parent's frame)
  bool has_flexible_bodies = false;

  /// First index of body i's modal coordinates in q and in v.
  int idxModesQ(int i) const { return idx_q[i] + nq_joint[i]; }
  int idxModesV(int i) const { return idx_v[i] + nv_joint[i]; }

  // --- massless and rank-deficient bodies (seed 003), [nbodies] ---
  /// Body i's spatial inertia is singular as given (zero mass, or a zero principal moment:
  /// massless frames, point masses, thin rods). Set from the model data, not from a tolerance.
  std::vector<char> singular_inertia;
  /// r_i = rank of the articulated joint-space inertia D_i = S_iᵀ P_i S_i + armature (seed 003:
  /// A_i = J_iᵀ M̄_i J_i); nv_joint[i] unless body i and its subtree leave some joint motion without
  /// inertia. ModelBuilder determines it once (docs/MASSLESS.md).
  std::vector<int> joint_rank;
  /// First index of joint i's n_i − r_i algebraic (massless) velocity components ζ_i in the
  /// stacked vector ζ of size `nalgebraic`; −1 when r_i = n_i.
  std::vector<int> idx_algebraic;
  int nalgebraic = 0;  ///< Σ (n_i − r_i): first-order equations without accelerations (seed 003 (28b))

  Vector3 gravity = Vector3(0.0, 0.0, -9.81);  ///< in the world frame [m/s²]
  std::vector<Frame> frames;
  /// What the bodies look like, as the model file says (URDF <visual>); viewers only.
  std::vector<VisualShape> visuals;

  // --- beyond the spanning tree (engine/model/closures.h) ---
  std::vector<LoopClosure> loops;             ///< loop-closure joints: constraint rows
  int nconstraints = 0;                       ///< Σ closureRows over `loops`
  std::vector<SpringDamper> force_elements;   ///< forces between two body points
  ConstraintStabilisation stabilisation;
  /// Joint position limits as unilateral rows of the constraint stage (true) or as data only.
  /// ModelBuilder sets it for a rigid model without massless joint motion (the stage's
  /// operators need both), clears it otherwise.
  bool limits_enforced = true;
  /// Effort and velocity limits applied to the joint forces as a drive does (the Simulator
  /// saturates them; docs/CONTACT.md, "Actuator limits"), or data only.
  bool actuator_limits_enforced = true;
  std::vector<ContactSphere> contact_spheres;  ///< touch `ground` when it is enabled
  GroundPlane ground;
  ContactSettings contact_settings;  ///< softness of limits, contacts, friction; solver budget
  /// Where a simulation starts (nq): the neutral configuration with the `initial` values a model
  /// file gave its 1-DoF joints. With loops, the Simulator assembles from it.
  Eigen::VectorXd initial_configuration;

  /// Index of the body with this name, or −1.
  int bodyIndex(const std::string& body_name) const;
  /// Index of the body moved by the joint with this name, or −1.
  int jointIndex(const std::string& joint_name) const;
  /// Index of the frame with this name, or −1.
  int frameIndex(const std::string& frame_name) const;

  /// Neutral configuration: zero joint angles, identity quaternions, undeformed bodies (nq).
  Eigen::VectorXd neutralConfiguration() const;
  /// Fills the packed copies the sweeps read (joint_type, axial_joint_terms, dof_parameters)
  /// from joints, joint_placement and the per-dof joint parameters. ModelBuilder calls it; code
  /// that changes those fields of a built model calls it again.
  void packSweepData();

  /// Where a simulation starts: initial_configuration (the neutral one where a model file gives
  /// no `initial` values).
  Eigen::VectorXd initialConfiguration() const {
    return initial_configuration.size() == nq ? initial_configuration : neutralConfiguration();
  }

  /// True when the model has loop closures or force elements.
  bool hasClosures() const { return !loops.empty() || !force_elements.empty(); }
  /// True when dof d's position limits are rows of the constraint stage: limits_enforced and a
  /// finite limit.
  bool limitEnforced(int d) const {
    return limits_enforced && (std::isfinite(lower_limit[d]) || std::isfinite(upper_limit[d]));
  }
  /// Rows the constraint stage may hold at once (docs/CONTACT.md, "Rows"): the loops'
  /// (nconstraints), one per enforced limit, one per joint with friction, three per contact
  /// sphere while the ground is enabled.
  int constraintRowCapacity() const;
  /// True when the model needs the constraint stage: closures, force elements or rows beyond
  /// the loops'.
  bool needsConstraintStage() const { return hasClosures() || constraintRowCapacity() > 0; }

  /// Total mass of the moving bodies [kg].
  double totalMass() const;
};

/// Labels of the coordinates of every joint in model order: the joint name for a one-coordinate
/// joint, `<joint>_<k>` (k = 0, 1, …) for each coordinate of a joint with several, then
/// `<body>_mode_<k>` for each modal coordinate of a flexible body. `velocity`
/// selects v / q̈ / τ coordinates (nv labels), otherwise q (nq labels). The `hilsim` CLI's CSV
/// columns and the service's ModelInfo use them.
std::vector<std::string> coordinateLabels(const Model& model, bool velocity);

}  // namespace hilsim
