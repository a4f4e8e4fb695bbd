// The bundled legged robots stand on the ground under the PD stance law of
// examples/quadruped_stance (a PD on every joint around the model's initial posture, nothing on the
// base): the quadruped (Solo 12 on four foot spheres, config/models/quadruped.yaml) and the
// humanoid (simple_humanoid on four spheres under each sole, config/models/humanoid.yaml).
// - For 30 s: their feet sink by no more than 5 mm, the base drifts by no more than 1 cm once
//   settled and stays upright, the feet carry the weight (Σ λ_n = m g within 1 %) and stick (no
//   friction row at the cone's edge), and, settled, every solve of the rows converges within its
//   budget; on aba and crba, RK4 and semi-implicit Euler at 1 kHz.
// - Pushed on the base after 1 s of standing, each gives by centimetres and 4 s later stands
//   within 5 mm of where it stood, upright, on all its feet, which carry its weight.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "engine/constraints/constraint_row_stage.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "examples/quadruped_stance/stance_law.h"

namespace hilsim {
namespace {

/// A bundled robot, the gains of its stance law and the contact spheres it stands on.
struct Robot {
  const char* model;
  double stiffness, damping;  // of the stance law [N·m/rad, N·m·s/rad]
  std::vector<std::string> feet;
  /// Steps after which every solve converges within the budget (settled, the warm start is the
  /// answer: one sweep). Until then the rows' forces change from step to step and a solve may
  /// use its whole budget (at the first touch, the feet landing at once, in either robot).
  int solves_settled_after;
};

// The gains and pushes are the examples' (examples::kStanceSettings).
const examples::StanceSetting& kQuadrupedSetting = *examples::stanceSetting("quadruped");
const examples::StanceSetting& kHumanoidSetting = *examples::stanceSetting("humanoid");

const Robot kQuadruped{"quadruped", kQuadrupedSetting.stiffness, kQuadrupedSetting.damping,
                       {"FL_foot", "FR_foot", "HL_foot", "HR_foot"}, 1000};

// k: the PD has no gravity compensation, and the 131 kg body, its centre of mass 0.7 m above the
// ankles, sags back on them: by 2.2° (and 1.3 cm of drift after the first second) at k = 1000,
// 0.4° at 2000, 0.12° at 5000, where its 30 N·m drives (the right ankle's pitch, the waist) hold
// their 8 N·m at 2 mrad.
// c: the sampled damping of a free-floating robot is stable while h c λ_max(M⁻¹) < 2, and
// λ_max = 2.16 /(kg·m²) (the legs' zig-zag mode) asks c < 927; 700 leaves a margin for a lifted
// foot and damps the rocking. Four spheres per sole make each foot's rows redundant (12 on 6 DoF),
// on which Gauss–Seidel converges linearly at the rate the rows' regularisation sets: while the
// body still rocks, a solve needs more than the default 100 sweeps for the 1e-10 m/s² tolerance
// (the last such at 2.3 s on RK4, 3.2 s on Euler, its last sweep's change below 3e-8 m/s²); after
// 4 s none does.
const Robot kHumanoid{"humanoid",
                      kHumanoidSetting.stiffness,
                      kHumanoidSetting.damping,
                      {"r_heel_out", "r_heel_in", "r_toe_out", "r_toe_in", "l_heel_in",
                       "l_heel_out", "l_toe_in", "l_toe_out"},
                      4000};

/// A robot standing under its stance law at 1 kHz, and what its feet do at the step just taken.
class Stance {
 public:
  Stance(const Robot& robot, Formulation formulation, Integrator integrator)
      : model_(std::make_shared<const Model>(loadModel(robot.model))),
        law_(*model_, robot.stiffness, robot.damping),
        sim_(model_, formulation, integrator, 1e-3),
        stage_(*static_cast<const ConstraintRowStage*>(sim_.constraints())),
        tau_(model_->nv) {
    for (const std::string& name : robot.feet)
      for (std::size_t s = 0; s < model_->contact_spheres.size(); ++s)
        if (model_->contact_spheres[s].name == name) feet_.push_back(static_cast<int>(s));
  }

  Simulator& sim() { return sim_; }
  /// Whether every sphere the robot stands on was found, and the ground is there.
  bool hasItsFeet(const Robot& robot) const {
    return model_->ground.enabled && feet_.size() == robot.feet.size();
  }

  void step() {
    law_.torques({sim_.q().data(), static_cast<std::size_t>(model_->nq)},
                 {sim_.v().data(), static_cast<std::size_t>(model_->nv)},
                 {tau_.data(), static_cast<std::size_t>(model_->nv)});
    sim_.step(tau_);
  }

  Eigen::Vector3d base() const { return sim_.q().head<3>(); }
  /// Angle of the base's z axis from the vertical [rad]: |(q_x, q_y)| of its quaternion is
  /// sin(tilt / 2).
  double tilt() const { return 2.0 * std::asin(std::hypot(sim_.q()[4], sim_.q()[5])); }
  bool converged() const { return stage_.lastSolve().converged; }

  /// How deep the deepest foot is below the ground [m] (negative: all clear of it).
  double deepestFoot() const {
    double deepest = -INFINITY;
    for (const int s : feet_) deepest = std::max(deepest, -row(s).violation);
    return deepest;
  }
  /// The first foot whose normal row is not active (off the ground), or −1.
  int liftedFoot() const {
    for (std::size_t f = 0; f < feet_.size(); ++f)
      if (!row(feet_[f]).active) return static_cast<int>(f);
    return -1;
  }
  /// Feet whose friction force is at the edge of Coulomb's cone (sliding, not sticking).
  int slippingFeet() const {
    int slipping = 0;
    for (const int s : feet_) {
      const int normal = normalMultiplier(s);
      if (stage_.multipliers().segment<2>(normal + 1).norm() >=
          0.999 * model_->ground.friction * stage_.multipliers()(normal))
        ++slipping;
    }
    return slipping;
  }
  /// Σ λ_n of the feet [N] and of every other sphere (knees, body) [N].
  double feetCarry() const { return normalForces(true); }
  double othersCarry() const { return normalForces(false); }
  double weight() const { return model_->totalMass() * -model_->gravity.z(); }

 private:
  int normalRow(int sphere) const {
    const UnilateralLayout& layout = stage_.unilateralLayout();
    return layout.contact_begin - layout.loop_rows + 3 * sphere;
  }
  int normalMultiplier(int sphere) const {
    return stage_.unilateralLayout().contact_begin + 3 * sphere;
  }
  const UnilateralRowState& row(int sphere) const {
    return stage_.unilateralRows()[normalRow(sphere)];
  }
  double normalForces(bool feet) const {
    double sum = 0.0;
    for (int s = 0; s < static_cast<int>(model_->contact_spheres.size()); ++s)
      if ((std::find(feet_.begin(), feet_.end(), s) != feet_.end()) == feet)
        sum += stage_.multipliers()(normalMultiplier(s));
    return sum;
  }

  std::shared_ptr<const Model> model_;
  examples::StanceLaw law_;
  Simulator sim_;
  const ConstraintRowStage& stage_;
  Eigen::VectorXd tau_;
  std::vector<int> feet_;  // indices into model_->contact_spheres
};

constexpr int kSettled = 1000;  // steps: dropped from 0.1 mm above the ground, settled after 1 s
// Upright: the base within 0.5° of level. The PD's sag tilts the humanoid's by 0.12° (the
// quadruped's by nothing: it is symmetric); a falling robot's tilts by tens of degrees.
constexpr double kUpright = 0.5 * M_PI / 180.0;

void standsThirtySeconds(const Robot& robot) {
  struct Case {
    Formulation formulation;
    Integrator integrator;
  };
  for (const Case c : {Case{Formulation::kAba, Integrator::kRk4},
                       Case{Formulation::kAba, Integrator::kSemiImplicitEuler},
                       Case{Formulation::kCrba, Integrator::kRk4}}) {
    SCOPED_TRACE(std::string(robot.model) + " " + std::string(formulationName(c.formulation)) +
                 "/" + std::string(integratorName(c.integrator)));
    Stance run(robot, c.formulation, c.integrator);
    ASSERT_TRUE(run.hasItsFeet(robot));
    Eigen::Vector3d settled = Eigen::Vector3d::Zero();
    double deepest = 0.0, largest_drift = 0.0, largest_tilt = 0.0;
    int unconverged = 0, slipping = 0;
    for (int k = 0; k < 30000; ++k) {
      run.step();
      deepest = std::max(deepest, run.deepestFoot());
      if (k >= robot.solves_settled_after) unconverged += run.converged() ? 0 : 1;
      if (k == kSettled - 1) settled = run.base();
      if (k < kSettled) continue;
      ASSERT_EQ(run.liftedFoot(), -1) << "lifted at " << k;
      slipping += run.slippingFeet();
      largest_drift = std::max(largest_drift, (run.base() - settled).norm());
      largest_tilt = std::max(largest_tilt, run.tilt());
    }
    EXPECT_LE(deepest, 5e-3);
    EXPECT_LE(largest_drift, 1e-2);
    EXPECT_LE(largest_tilt, kUpright);
    EXPECT_EQ(unconverged, 0);
    EXPECT_EQ(slipping, 0);
    // at rest the feet carry the weight; the 1 % leaves room for the legs' last motion
    EXPECT_NEAR(run.feetCarry(), run.weight(), 1e-2 * run.weight());
    EXPECT_EQ(run.othersCarry(), 0.0);
    std::cout << robot.model << " " << formulationName(c.formulation) << "/"
              << integratorName(c.integrator) << ": deepest foot " << deepest * 1e3
              << " mm, base drift after 1 s " << largest_drift * 1e3 << " mm, tilt "
              << largest_tilt * 180.0 / M_PI << "°, feet carry " << run.feetCarry() / run.weight()
              << " of the weight\n";
  }
}

TEST(QuadrupedStance, StandsThirtySecondsOnItsFeet) { standsThirtySeconds(kQuadruped); }
TEST(HumanoidStance, StandsThirtySecondsOnItsFeet) { standsThirtySeconds(kHumanoid); }

/// Standing for 1 s, then `force_W` on the base for 0.1 s, then 4 s more (aba, RK4): the base
/// moves by more than `least_sway` and comes back.
void standsAgainAfterAPush(const Robot& robot, const Vector3& force_W, double least_sway) {
  Stance run(robot, Formulation::kAba, Integrator::kRk4);
  ASSERT_TRUE(run.hasItsFeet(robot));
  constexpr int kPushStart = kSettled, kPushEnd = kPushStart + 100, kEnd = kPushEnd + 4000;
  Eigen::Vector3d stood = Eigen::Vector3d::Zero();
  double largest_sway = 0.0, deepest = 0.0;
  for (int k = 0; k < kEnd; ++k) {
    if (k == kPushStart) stood = run.base();
    run.sim().setBaseWrench(k >= kPushStart && k < kPushEnd ? force_W : Vector3::Zero(),
                            Vector3::Zero());
    run.step();
    deepest = std::max(deepest, run.deepestFoot());
    if (k >= kPushStart) largest_sway = std::max(largest_sway, (run.base() - stood).norm());
  }
  EXPECT_GT(largest_sway, least_sway) << "the push moved the base";
  EXPECT_LT((run.base() - stood).norm(), 5e-3) << "back where it stood";
  EXPECT_LT(run.tilt(), kUpright) << "upright";
  EXPECT_LE(deepest, 5e-3);
  EXPECT_EQ(run.liftedFoot(), -1) << "on all its feet";
  EXPECT_NEAR(run.feetCarry(), run.weight(), 1e-2 * run.weight());
  EXPECT_EQ(run.othersCarry(), 0.0);
  std::cout << robot.model << ": pushed by " << force_W.transpose() << " N for 0.1 s, the base "
            << "swayed " << largest_sway * 1e3 << " mm and stands "
            << (run.base() - stood).norm() * 1e3 << " mm from where it stood 4 s later\n";
}

// 10 N sideways (1 N·s on 2.5 kg): the base sways 4 cm, its legs spring back within 1 mm.
TEST(QuadrupedStance, StandsAgainAfterAPushOnItsBase) {
  standsAgainAfterAPush(kQuadruped, Vector3(kQuadrupedSetting.push.data()), 0.02);
}

// 600 N forward (60 N·s on 131 kg, 0.46 m/s): the body rocks onto its toes (the heels lift for a
// quarter of a second), the base moves 2.4 cm, and it stands within 5 mm of where it stood 0.5 s
// after the push, within 0.1 mm 2.4 s after. The bound is the ankle strategy's: the centre of
// mass, 0.80 m up and 15 cm behind the toes, stops over the soles only while v √(h / g) < 15 cm,
// v < 0.52 m/s, about 680 N for 0.1 s; 650 N leaves it standing, 675 N topples it.
TEST(HumanoidStance, StandsAgainAfterAPushOnItsBase) {
  standsAgainAfterAPush(kHumanoid, Vector3(kHumanoidSetting.push.data()), 0.01);
}

}  // namespace
}  // namespace hilsim
