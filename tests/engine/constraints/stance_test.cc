// The bundled quadruped (Solo 12 on four foot spheres, config/models/quadruped.yaml) stands on
// the ground for 30 s under the PD stance law of examples/quadruped_stance: its feet sink by no
// more than 5 mm, its base drifts by no more than 1 cm once settled, its feet carry its weight
// (Σ λ_n = m g within 1 %) and stick (no friction row at the cone's edge), and, settled, every
// solve of the rows converges within its budget; on aba and crba, RK4 and semi-implicit Euler at 1 kHz.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <memory>

#include "engine/constraints/constraint_row_stage.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "examples/quadruped_stance/stance_law.h"

namespace hilsim {
namespace {

TEST(QuadrupedStance, StandsThirtySecondsOnItsFeet) {
  const auto model = std::make_shared<const Model>(loadModel("quadruped"));
  // four feet first, then the knees and the body's underside (config/models/quadruped.yaml)
  ASSERT_EQ(model->contact_spheres.size(), 12u);
  ASSERT_TRUE(model->ground.enabled);
  const examples::StanceLaw law(*model, 3.0, 0.05);
  const double weight = model->totalMass() * 9.81;
  struct Case {
    Formulation formulation;
    Integrator integrator;
  };
  for (const Case c : {Case{Formulation::kAba, Integrator::kRk4},
                       Case{Formulation::kAba, Integrator::kSemiImplicitEuler},
                       Case{Formulation::kCrba, Integrator::kRk4}}) {
    SCOPED_TRACE(std::string(formulationName(c.formulation)) + "/" +
                 std::string(integratorName(c.integrator)));
    Simulator sim(model, c.formulation, c.integrator, 1e-3);
    const auto* stage = static_cast<const ConstraintRowStage*>(sim.constraints());
    const UnilateralLayout& layout = stage->unilateralLayout();
    const int first_contact = layout.contact_begin - layout.loop_rows;
    Eigen::VectorXd tau(model->nv);
    Eigen::Vector3d settled = Eigen::Vector3d::Zero();
    double deepest = 0.0, largest_drift = 0.0;
    int unconverged = 0, slipping = 0;
    for (int k = 0; k < 30000; ++k) {
      law.torques({sim.q().data(), static_cast<std::size_t>(model->nq)},
                  {sim.v().data(), static_cast<std::size_t>(model->nv)},
                  {tau.data(), static_cast<std::size_t>(model->nv)});
      sim.step(tau);
      // (at the first touch, the feet landing at once, a solve or two may use the whole budget)
      if (k >= 1000) unconverged += stage->lastSolve().converged ? 0 : 1;
      for (int foot = 0; foot < 4; ++foot) {
        const int normal = first_contact + 3 * foot;
        deepest = std::max(deepest, -stage->unilateralRows()[normal].violation);
        if (k >= 1000) {  // dropped from 0.1 mm above the ground, settled after a second
          ASSERT_TRUE(stage->unilateralRows()[normal].active) << "foot " << foot << " lifted at " << k;
        }
        // sticking: the tangents' force inside the cone
        const Eigen::VectorXd& lambda = stage->multipliers();
        const int row = layout.loop_rows + normal;
        if (k >= 1000 && lambda.segment<2>(row + 1).norm() >= 0.999 * model->ground.friction * lambda(row))
          ++slipping;
      }
      if (k == 999) settled = sim.q().head<3>();
      if (k >= 1000) largest_drift = std::max(largest_drift, (sim.q().head<3>() - settled).norm());
    }
    EXPECT_LE(deepest, 5e-3);
    EXPECT_LE(largest_drift, 1e-2);
    EXPECT_EQ(unconverged, 0);
    EXPECT_EQ(slipping, 0);
    double carried = 0.0;
    for (int foot = 0; foot < 4; ++foot)
      carried += stage->multipliers()(layout.contact_begin + 3 * foot);
    // at rest the normal forces carry the weight; the 1 % leaves room for the legs' last motion
    EXPECT_NEAR(carried, weight, 1e-2 * weight);
    std::cout << "deepest foot " << deepest * 1e3 << " mm, base drift after 1 s "
              << largest_drift * 1e3 << " mm, feet carry " << carried / weight
              << " of the weight\n";
  }
}

}  // namespace
}  // namespace hilsim
