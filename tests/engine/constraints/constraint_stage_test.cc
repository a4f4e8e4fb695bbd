// The constraint stage seam of the Simulator: a stage sees every forward-dynamics evaluation of
// every integrator and every step's end, for every formulation, and what it does to q̈ and to the
// state is what the simulation follows. The stage here locks one joint of a double pendulum with
// the textbook projection q̈_c = q̈ − M⁻¹Jᵀ(JM⁻¹Jᵀ)⁻¹Jq̈ (dense M: a test stage, not the engine's);
// the locked pendulum must then move as the same pendulum with that joint welded.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <memory>

#include "engine/algorithms/crba.h"
#include "engine/constraints/constraint_stage.h"
#include "engine/integrators/simulator.h"
#include "engine/builder/model_builder.h"
#include "tests/support/formulation_matrix.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

// Locks joint `dof` at q = 0.
class JointLock final : public ConstraintStage {
 public:
  JointLock(const Model& model, int dof)
      : dof_(dof),
        data_(model, DataWorkspace::kJointSpaceInertia),
        ldlt_(model.nv),
        column_(Eigen::VectorXd::Zero(model.nv)),
        unit_(Eigen::VectorXd::Zero(model.nv)) {
    unit_(dof) = 1.0;
  }

  int capacity() const override { return 1; }

  void accelerations(const Model& model, Data&, const Eigen::VectorXd& q, const Eigen::VectorXd&,
                     const Eigen::VectorXd&, Eigen::VectorXd& qdd) override {
    ++evaluations;
    ldlt_.compute(crba(model, data_, q));
    column_ = ldlt_.solve(unit_);  // M⁻¹ Jᵀ with J = e_dofᵀ
    qdd -= column_ * (qdd(dof_) / column_(dof_));
  }

  void project(const Model&, Data&, Eigen::VectorXd& q, Eigen::VectorXd& v) override {
    ++projections;
    q(dof_) = 0.0;
    v(dof_) = 0.0;
  }

  int evaluations = 0;
  int projections = 0;

 private:
  int dof_;
  Data data_;
  Eigen::LDLT<Eigen::MatrixXd> ldlt_;
  Eigen::VectorXd column_, unit_;
};

const Inertia kLink(1.5, Vector3(0.0, 0.0, -0.4), Vector3(0.05, 0.04, 0.01).asDiagonal());
const Transform kDown(Matrix3::Identity(), Vector3(0.0, 0.0, -0.8));

// Two links on revolute joints about y; `weld_first` welds the first one instead.
std::shared_ptr<const Model> doublePendulum(bool weld_first) {
  ModelBuilder builder("double_pendulum");
  if (weld_first) {
    builder.addFixedBody("upper", "world", Transform(), kLink);
  } else {
    builder.addBody("upper", "world", Joint::revolute(Vector3::UnitY()), Transform(), kLink);
  }
  builder.addBody("lower", "upper", Joint::revolute(Vector3::UnitY()), kDown, kLink);
  return std::make_shared<const Model>(builder.build());
}

TEST(ConstraintStage, EveryIntegratorAndFormulationFollowsTheStage) {
  const auto model = doublePendulum(false);
  const auto welded = doublePendulum(true);
  for (const Formulation f : test::allFormulations()) {
    for (const Integrator i : {Integrator::kRk4, Integrator::kSemiImplicitEuler}) {
      SCOPED_TRACE(std::string(formulationName(f)) + " " + std::string(integratorName(i)));
      auto lock = std::make_unique<JointLock>(*model, 0);
      JointLock* stage = lock.get();
      Simulator locked(model, f, i, 1e-3, std::move(lock));
      Simulator reference(welded, f, i, 1e-3);
      locked.setState(Eigen::Vector2d(0.0, 0.7), Eigen::Vector2d::Zero());
      reference.setState(Eigen::VectorXd::Constant(1, 0.7), Eigen::VectorXd::Zero(1));
      const Eigen::VectorXd tau = Eigen::VectorXd::Zero(2), tau_reference = Eigen::VectorXd::Zero(1);
      constexpr int kSteps = 1000;
      for (int k = 0; k < kSteps; ++k) {
        locked.step(tau);
        reference.step(tau_reference);
      }
      // every evaluation went through the stage: four per RK4 step, one per Euler step
      EXPECT_EQ(stage->evaluations, (i == Integrator::kRk4 ? 4 : 1) * kSteps);
      EXPECT_EQ(stage->projections, kSteps);
      // the locked joint stays, the other moves as with the joint welded: the stage's q̈ is the
      // welded model's in exact arithmetic, so only rounding separates the trajectories
      EXPECT_EQ(locked.q()(0), 0.0);
      EXPECT_GT(std::abs(locked.q()(1) - 0.7), 0.1);  // it did swing
      EXPECT_LT(std::abs(locked.q()(1) - reference.q()(0)), 1e-9);
      EXPECT_LT(std::abs(locked.v()(1) - reference.v()(0)), 1e-9);
    }
  }
}

}  // namespace
}  // namespace hilsim
