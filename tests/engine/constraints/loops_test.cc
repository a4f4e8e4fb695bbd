// Loop closures (docs/LOOPS.md): the closure rows against finite differences, the constrained
// dynamics against the equations of motion (RNEA) and across formulations, and the quick-return
// mechanism of seed 002's notes (model C) at its published numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>
#include <random>
#include <string>

#include <Eigen/Cholesky>

#include "engine/algorithms/crba.h"
#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/rnea.h"
#include "engine/builder/closure_builder.h"
#include "engine/builder/model_builder.h"
#include "engine/constraints/closure_kinematics.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "engine/model/configuration.h"
#include "tests/support/formulation_matrix.h"
#include "tests/support/random_model.h"
#include "tests/support/tolerances.h"

namespace hilsim {
namespace {

using test::kAlgebraTol;
using test::kFormulationRelTol;
using test::relativeDifference;

using test::LoopCase;
using test::randomLoopCase;

Eigen::VectorXd positionError(const Model& model, Data& data, const Eigen::VectorXd& q) {
  Eigen::VectorXd C(model.nconstraints);
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {&C, nullptr, nullptr});
  return C;
}

Eigen::VectorXd rowRates(const Model& model, Data& data, const Eigen::VectorXd& q,
                         const Eigen::VectorXd& v) {
  Eigen::MatrixXd J(model.nconstraints, model.nv);
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {nullptr, &J, nullptr});
  return J * v;
}

TEST(ClosureRows, JacobianAndBiasAreTheDerivativesAlongAMotion) {
  // Along q(t) = q ⊕ t v (v constant, q̈ = 0): Ċ = J v where the closure holds, and
  // d/dt (J v) = J̇ v, the bias. Central differences with h = 1e-6 are accurate to about
  // h² |C'''| + ε |C| / h ≈ 1e-10 on these O(1) mechanisms; 1e-7 leaves room for their size.
  constexpr double kH = 1e-6, kTol = 1e-7;
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    LoopCase c = randomLoopCase(rng, 6 + trial % 5, 10);
    const Model& model = c.model;
    Data data(model);
    const int m = model.nconstraints;
    Eigen::VectorXd q_plus(model.nq), q_minus(model.nq);
    integrateConfiguration(model, c.q, c.v, kH, q_plus);
    integrateConfiguration(model, c.q, c.v, -kH, q_minus);

    EXPECT_LT(positionError(model, data, c.q).cwiseAbs().maxCoeff(), test::kAlgebraTol);
    const Eigen::VectorXd rate = rowRates(model, data, c.q, c.v);
    const Eigen::VectorXd rate_fd =
        (positionError(model, data, q_plus) - positionError(model, data, q_minus)) / (2 * kH);
    EXPECT_LT(relativeDifference(rate, rate_fd), kTol) << "trial " << trial;

    Eigen::VectorXd bias(m);
    forwardKinematics(model, data, c.q, c.v);
    evaluateClosures(model, data, {nullptr, nullptr, &bias});
    const Eigen::VectorXd bias_fd =
        (rowRates(model, data, q_plus, c.v) - rowRates(model, data, q_minus, c.v)) / (2 * kH);
    EXPECT_LT(relativeDifference(bias, bias_fd), kTol) << "trial " << trial;
  }
}

TEST(ClosureRows, ForceRatesAreTheDerivativesOfTheRowsForces) {
  // Along q(t) = q ⊕ t v: d/dt of each row's spatial forces F_a, F_b by central differences
  // (h = 1e-6: truncation h² |F'''| and round-off ε |F| / h, both ~1e-10 on these O(1)
  // mechanisms; 1e-7 leaves room for their size), against closureForceRates
  constexpr double kH = 1e-6, kTol = 1e-7;
  std::mt19937 rng(41);
  for (int trial = 0; trial < 20; ++trial) {
    LoopCase c = randomLoopCase(rng, 6 + trial % 5, 10);
    const Model& model = c.model;
    const int m = model.nconstraints;
    Data data(model);
    ConstraintRows plus(model), minus(model);
    Eigen::VectorXd q_shift(model.nq);
    integrateConfiguration(model, c.q, c.v, kH, q_shift);
    forwardKinematics(model, data, q_shift);
    evaluateClosures(model, data, {.rows = &plus});
    integrateConfiguration(model, c.q, c.v, -kH, q_shift);
    forwardKinematics(model, data, q_shift);
    evaluateClosures(model, data, {.rows = &minus});
    Matrix6N rate_a(6, m), rate_b(6, m);
    forwardKinematics(model, data, c.q, c.v);
    closureForceRates(model, data, rate_a, rate_b);
    const Matrix6N fd_a = (plus.force_a.leftCols(m) - minus.force_a.leftCols(m)) / (2 * kH);
    const Matrix6N fd_b = (plus.force_b.leftCols(m) - minus.force_b.leftCols(m)) / (2 * kH);
    for (int r = 0; r < m; ++r) {
      EXPECT_LE((rate_a.col(r) - fd_a.col(r)).lpNorm<Eigen::Infinity>(),
                kTol * std::max(1.0, fd_a.col(r).lpNorm<Eigen::Infinity>()))
          << "trial " << trial << ", row " << r;
      EXPECT_LE((rate_b.col(r) - fd_b.col(r)).lpNorm<Eigen::Infinity>(),
                kTol * std::max(1.0, fd_b.col(r).lpNorm<Eigen::Infinity>()))
          << "trial " << trial << ", row " << r;
    }
  }
}

TEST(ClosureRows, SpatialFormReadsTheJacobianOnTheBodyVelocities) {
  // J_r v = F_b,rᵀ V_b + F_a,rᵀ V_a for every row: the two forms the formulations read agree;
  // and ConstraintRows' J (written a closure at a time) is the J written row by row
  std::mt19937 rng(12);
  for (int trial = 0; trial < 20; ++trial) {
    LoopCase c = randomLoopCase(rng, 6 + trial % 5, 10);
    const Model& model = c.model;
    Data data(model);
    ConstraintRows rows(model);
    forwardKinematics(model, data, c.q, c.v);
    evaluateClosures(model, data, {nullptr, nullptr, nullptr, &rows});
    Eigen::MatrixXd J(model.nconstraints, model.nv);
    evaluateClosures(model, data, {nullptr, &J, nullptr, nullptr});
    const double tolerance = test::kAlgebraTol * std::max(1.0, J.norm());
    EXPECT_LE((rows.jacobian - J).cwiseAbs().maxCoeff(), tolerance) << "trial " << trial;
    // and the same rows at another state (entries are written only on the closures' paths)
    {
      Data other_data(model);
      ConstraintRows reused = rows;
      const Eigen::VectorXd q_other = test::randomConfiguration(model, rng);
      forwardKinematics(model, other_data, q_other, c.v);
      evaluateClosures(model, other_data, {nullptr, nullptr, nullptr, &reused});
      evaluateClosures(model, other_data, {nullptr, &J, nullptr, nullptr});
      EXPECT_LE((reused.jacobian - J).cwiseAbs().maxCoeff(),
                test::kAlgebraTol * std::max(1.0, J.norm()))
          << "trial " << trial << ", second state";
    }
    const Eigen::VectorXd rates = rows.jacobian * c.v;
    for (int r = 0; r < model.nconstraints; ++r) {
      double spatial = 0.0;
      if (rows.body_b[r] > 0) spatial += rows.force_b.col(r).dot(data.V_W[rows.body_b[r]]);
      if (rows.body_a[r] > 0) spatial += rows.force_a.col(r).dot(data.V_W[rows.body_a[r]]);
      EXPECT_NEAR(spatial, rates(r), test::kAlgebraTol * std::max(1.0, std::abs(rates(r))))
          << "trial " << trial << ", row " << r;
    }
    // the support holds every body a row acts on, and each one's parent
    for (const int body : rows.support) {
      if (model.parent[body] == 0) continue;
      EXPECT_TRUE(
          std::binary_search(rows.support.begin(), rows.support.end(), model.parent[body]));
    }
  }
}

TEST(ClosureRows, ActiveOnlyEvaluatesThoseRowsAsTheFullEvaluationAndLeavesTheOthers) {
  // With active_only, each output's selected rows equal the full evaluation's (to rounding: a
  // weld's or revolute's point rows without their angular rows are written four lanes wide,
  // FourWideRowsMatchThePortableOnes), and the other rows keep what they held (bit for bit);
  // random subsets of the rows of
  // random mechanisms with every closure type (a revolute or weld without its angular rows, a
  // prismatic without its normals' rows, whole closures left out)
  std::mt19937 rng(17);
  constexpr double kUntouched = 12345.0;
  for (int trial = 0; trial < 40; ++trial) {
    LoopCase c = randomLoopCase(rng, 5 + trial % 6, 1 + trial % 5);
    const Model& model = c.model;
    const int m = model.nconstraints;
    Data data(model);
    const Eigen::VectorXd qdd = test::randomVector(model.nv, rng);
    forwardKinematics(model, data, c.q, c.v);
    bodyAccelerations(model, data, qdd);
    ConstraintRows full(model);
    Eigen::VectorXd C(m), rate(m), acceleration(m);
    evaluateClosures(model, data,
                     {.position_error = &C, .rows = &full, .rate = &rate,
                      .acceleration = &acceleration, .rows_jacobian = false});
    ConstraintRows some(model);
    some.active_count = 0;
    for (int r = 0; r < m; ++r)
      if (std::bernoulli_distribution(0.4)(rng)) some.active[some.active_count++] = r;
    some.force_a.setConstant(kUntouched);
    Eigen::VectorXd C_some = Eigen::VectorXd::Constant(m, kUntouched);
    Eigen::VectorXd rate_some = C_some, acceleration_some = C_some;
    evaluateClosures(model, data,
                     {.position_error = &C_some, .rows = &some, .rate = &rate_some,
                      .acceleration = &acceleration_some, .rows_jacobian = false,
                      .active_only = true});
    std::vector<char> selected(m, 0);
    for (int a = 0; a < some.active_count; ++a) selected[some.active[a]] = 1;
    for (int r = 0; r < m; ++r) {
      if (selected[r]) {
        const auto near = [](double x, double y) {
          return std::abs(x - y) <= kAlgebraTol * std::max(1.0, std::abs(y));
        };
        EXPECT_PRED2(near, C_some(r), C(r)) << "trial " << trial << ", row " << r;
        EXPECT_PRED2(near, rate_some(r), rate(r)) << "trial " << trial << ", row " << r;
        EXPECT_PRED2(near, acceleration_some(r), acceleration(r))
            << "trial " << trial << ", row " << r;
        EXPECT_LT(relativeDifference(some.force_a.col(r), full.force_a.col(r)), kAlgebraTol)
            << "trial " << trial << ", row " << r;
        EXPECT_LT(relativeDifference(some.force_b.col(r), full.force_b.col(r)), kAlgebraTol)
            << "trial " << trial << ", row " << r;
        EXPECT_EQ(some.body_a[r], full.body_a[r]);
        EXPECT_EQ(some.body_b[r], full.body_b[r]);
      } else {
        EXPECT_EQ(C_some(r), kUntouched) << "trial " << trial << ", row " << r;
        EXPECT_EQ(rate_some(r), kUntouched) << "trial " << trial << ", row " << r;
        EXPECT_EQ(acceleration_some(r), kUntouched) << "trial " << trial << ", row " << r;
        EXPECT_TRUE((some.force_a.col(r).array() == kUntouched).all())
            << "trial " << trial << ", row " << r;
      }
    }
  }
}

TEST(ClosureRows, FourWideRowsMatchThePortableOnes) {
  // evaluateClosures (distance rows, and the point rows of a closure none of whose angular rows
  // is wanted, four lanes wide where AVX2 is there) against its portable code, on every output:
  // C, the rows' spatial form (and ConstraintRows' Jacobian where it is asked for), Ċ, and C̈ as
  // bias and at given accelerations; all rows, and random subsets of them (active_only, as the
  // stage asks: a weld or revolute without its angular rows). Random mechanisms with every
  // closure type, to rounding (kAlgebraTol, relative).
  std::mt19937 rng(29);
  int distance = 0, point = 0;
  for (int trial = 0; trial < 40; ++trial) {
    LoopCase c = randomLoopCase(rng, 4 + trial % 7, 1 + trial % 5);
    const Model& model = c.model;
    for (const LoopClosure& loop : model.loops) {
      distance += loop.type == ClosureType::kDistance;
      point += loop.type != ClosureType::kDistance && loop.type != ClosureType::kPrismatic;
    }
    const int m = model.nconstraints;
    Data data(model);
    forwardKinematics(model, data, c.q, c.v);
    bodyAccelerations(model, data, test::randomVector(model.nv, rng));
    ConstraintRows wide(model), portable(model);
    wide.active_count = 0;
    for (int r = 0; r < m; ++r)
      if (std::bernoulli_distribution(0.5)(rng)) wide.active[wide.active_count++] = r;
    portable.active = wide.active;
    portable.active_count = wide.active_count;
    for (const bool subset : {false, true}) {
      for (const bool bias : {false, true}) {
        Eigen::VectorXd C_w = Eigen::VectorXd::Zero(m), rate_w = C_w, second_w = C_w;
        Eigen::VectorXd C_p = C_w, rate_p = C_w, second_p = C_w;
        wide.force_a.setZero();
        portable.force_a.setZero();
        ClosureOutputs out{.position_error = &C_w, .rows = &wide, .rate = &rate_w,
                           .rows_jacobian = !subset, .active_only = subset};
        (bias ? out.bias : out.acceleration) = &second_w;
        evaluateClosures(model, data, out);
        out.position_error = &C_p;
        out.rows = &portable;
        out.rate = &rate_p;
        (bias ? out.bias : out.acceleration) = &second_p;
        detail::evaluateClosuresPortable(model, data, out);
        const std::string where = "trial " + std::to_string(trial) +
                                  (subset ? ", a subset" : ", all rows") +
                                  (bias ? ", bias" : ", accelerations");
        EXPECT_LT(relativeDifference(C_w, C_p), kAlgebraTol) << where;
        EXPECT_LT(relativeDifference(rate_w, rate_p), kAlgebraTol) << where;
        EXPECT_LT(relativeDifference(second_w, second_p), kAlgebraTol) << where;
        EXPECT_LT(relativeDifference(wide.force_a, portable.force_a), kAlgebraTol) << where;
        EXPECT_LT(relativeDifference(wide.force_b, portable.force_b), kAlgebraTol) << where;
        if (!subset) {
          EXPECT_LT(relativeDifference(wide.jacobian, portable.jacobian), kAlgebraTol) << where;
        }
        EXPECT_EQ(wide.body_a, portable.body_a) << where;
        EXPECT_EQ(wide.body_b, portable.body_b) << where;
      }
    }
  }
  EXPECT_GT(distance, 5);  // the cases the four-wide code is for
  EXPECT_GT(point, 5);
}

TEST(Delassus, EveryFormulationsOperatorIsJMinvJtOfTheMassMatrix) {
  // W = J M⁻¹ Jᵀ with M from crba and a dense Cholesky, against each row's delassus operator on
  // every row (and on every other row, to exercise the active subset), after its forward
  // dynamics; and its response M⁻¹ Jᵀ λ for a random λ. Random trees with a floating root,
  // every joint type; 1e-10 relative. The last two trials have over 64 rows, the very last
  // over 256 (treeLdlDelassus marks the blocks of four rows that reach each body in a 64-bit
  // mask, and takes every block beyond that).
  std::mt19937 rng(13);
  for (int trial = 0; trial < 22; ++trial) {
    LoopCase c = trial < 20    ? randomLoopCase(rng, 4 + trial % 10, 1 + trial % 4)
                 : trial == 20 ? randomLoopCase(rng, 30, 24)
                               : randomLoopCase(rng, 60, 80);
    const Model& model = c.model;
    const int m = model.nconstraints;
    if (trial >= 20) {
      ASSERT_GT(m, trial == 20 ? 64 : 256);
    }
    Data reference_data(model);
    ConstraintRows rows(model);
    forwardKinematics(model, reference_data, c.q, c.v);
    evaluateClosures(model, reference_data, {nullptr, nullptr, nullptr, &rows});
    const Eigen::MatrixXd M = crba(model, reference_data, c.q);
    for (const int stride : {1, 2}) {
      rows.active_count = 0;
      for (int r = 0; r < m; r += stride) rows.active[rows.active_count++] = r;
      const int k = rows.active_count;
      Eigen::MatrixXd J_active(k, model.nv);
      for (int r = 0; r < k; ++r) J_active.row(r) = rows.jacobian.row(rows.active[r]);
      const Eigen::MatrixXd expected = J_active * M.llt().solve(J_active.transpose());
      for (const FormulationInfo& f : formulations()) {
        if (!f.delassus) continue;
        Data data = test::dataFor(model, f.id);
        f.forward_dynamics(model, data, c.q, c.v, c.tau);
        Eigen::MatrixXd W = Eigen::MatrixXd::Zero((k + 3) / 4 * 4, k);  // rows padded (contract)
        f.delassus(model, data, rows, W);
        const Eigen::MatrixXd upper = W.topLeftCorner(k, k).triangularView<Eigen::Upper>();
        const Eigen::MatrixXd expected_upper = expected.triangularView<Eigen::Upper>();
        EXPECT_LT(relativeDifference(upper, expected_upper), kFormulationRelTol)
            << f.name << ", trial " << trial << ", stride " << stride;
        // its response, M⁻¹ Jᵀ λ, on every dof (the rows reach only some bodies)
        ASSERT_NE(f.delassus_response, nullptr) << f.name;
        Eigen::VectorXd lambda = Eigen::VectorXd::Zero(m);
        for (int r = 0; r < k; ++r) lambda(r) = std::uniform_real_distribution<>(-1.0, 1.0)(rng);
        Eigen::VectorXd x = Eigen::VectorXd::Constant(model.nv, 1e300);
        f.delassus_response(model, data, rows, lambda, x);
        const Eigen::VectorXd expected_x =
            M.llt().solve(J_active.transpose() * lambda.head(k)).eval();
        EXPECT_LT(relativeDifference(x, expected_x), kFormulationRelTol)
            << f.name << ", trial " << trial << ", stride " << stride;
      }
    }
  }
}

TEST(Delassus, StageGivesTheSameDynamicsThroughTheGeneralRoute) {
  // a formulation's delassus operator is a shortcut: without it the stage forms J M⁻¹ Jᵀ from
  // inverse_inertia on the columns of Jᵀ, and q̈ and λ must not change
  std::mt19937 rng(14);
  for (int trial = 0; trial < 10; ++trial) {
    LoopCase c = randomLoopCase(rng, 4 + trial % 10, 1 + trial % 4);
    const Model& model = c.model;
    for (const FormulationInfo& f : formulations()) {
      if (!f.capabilities.closed_loops) continue;
      Data data = test::dataFor(model, f.id);
      // the operator and its response; the operator with M⁻¹ Jᵀ λ through inverse_inertia;
      // inverse_inertia alone
      ConstraintRowStage fast(model, f), without_response(model, f.inverse_inertia, f.delassus),
          general(model, f.inverse_inertia);
      fast.assemble(model, data, c.q, c.v);
      Eigen::VectorXd qdd_fast = f.forward_dynamics(model, data, c.q, c.v, c.tau);
      Eigen::VectorXd qdd_general = qdd_fast, qdd_without_response = qdd_fast;
      fast.accelerations(model, data, c.q, c.v, c.tau, qdd_fast);
      without_response.accelerations(model, data, c.q, c.v, c.tau, qdd_without_response);
      general.accelerations(model, data, c.q, c.v, c.tau, qdd_general);
      EXPECT_LT(relativeDifference(qdd_fast, qdd_general), kFormulationRelTol)
          << f.name << ", trial " << trial;
      EXPECT_LT(relativeDifference(qdd_without_response, qdd_general), kFormulationRelTol)
          << f.name << ", trial " << trial;
      EXPECT_LT(relativeDifference(fast.multipliers(), general.multipliers()), kFormulationRelTol)
          << f.name << ", trial " << trial;
    }
  }
}

// q̈ and λ of `formulation` with the closure stage at (q, v, tau).
struct Constrained {
  Eigen::VectorXd qdd, lambda;
  int rank = 0;
};

Constrained constrainedDynamics(const Model& model, Formulation formulation,
                                const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                const Eigen::VectorXd& tau) {
  Data data = test::dataFor(model, formulation);
  ConstraintRowStage stage(model, formulationInfo(formulation));
  Constrained out;
  out.qdd = forwardDynamics(formulation, model, data, q, v, tau);
  stage.accelerations(model, data, q, v, tau, out.qdd);
  out.lambda = stage.multipliers();
  out.rank = stage.rank();
  return out;
}

TEST(LoopDynamics, EveryFormulationSolvesTheEquationsOfMotionWithClosureForces) {
  // At an assembled state (C = 0, J v = 0): M q̈ + h = τ + Jᵀ λ (checked with RNEA, which knows
  // nothing of the stage) and J q̈ + J̇ v = 0; every formulation gives the same q̈ and λ.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 30; ++trial) {
    LoopCase c = randomLoopCase(rng, 4 + trial % 12, 1 + trial % 4);
    const Model& model = c.model;
    Data data(model);
    ConstraintRowStage assembler(model, formulationInfo(Formulation::kAba).inverse_inertia);
    assembler.assemble(model, data, c.q, c.v);
    ASSERT_LT(assembler.positionError(), 1e-12);

    Eigen::MatrixXd J(model.nconstraints, model.nv);
    Eigen::VectorXd bias(model.nconstraints);
    forwardKinematics(model, data, c.q, c.v);
    evaluateClosures(model, data, {nullptr, &J, &bias});
    ASSERT_LT((J * c.v).cwiseAbs().maxCoeff(), 1e-12);

    // every row that runs loops (test::formulationsFor asks checkFormulation) does
    const std::vector<Formulation> all = test::formulationsFor(model);
    ASSERT_EQ(all.size(), std::ranges::count_if(formulations(), [](const FormulationInfo& f) {
                return f.capabilities.closed_loops;
              }));
    const Constrained reference = constrainedDynamics(model, all.front(), c.q, c.v, c.tau);
    const Eigen::VectorXd applied = rnea(model, data, c.q, c.v, reference.qdd) - c.tau;
    const Eigen::VectorXd closure_force = J.transpose() * reference.lambda;
    EXPECT_LT(relativeDifference(applied, closure_force), kFormulationRelTol) << "trial " << trial;
    const Eigen::VectorXd row_accelerations = J * reference.qdd + bias;
    EXPECT_LT(row_accelerations.cwiseAbs().maxCoeff() /
                  std::max(1.0, reference.qdd.cwiseAbs().maxCoeff()),
              kFormulationRelTol)
        << "trial " << trial;

    for (Formulation f : all) {
      const Constrained other = constrainedDynamics(model, f, c.q, c.v, c.tau);
      EXPECT_LT(relativeDifference(other.qdd, reference.qdd), kFormulationRelTol)
          << formulationName(f) << ", trial " << trial;
      EXPECT_LT(relativeDifference(other.lambda, reference.lambda), kFormulationRelTol)
          << formulationName(f) << ", trial " << trial;
      EXPECT_EQ(other.rank, reference.rank);
    }
  }
}

// --- the quick-return mechanism of docs/LOOPS.md (seed 002 notes, model C) ---

// Planar in x–y, gravity −y, every revolute about z; body frames at the joints (the notes put
// them at the centres of mass: their local points are shifted accordingly).
Model quickReturn() {
  ModelBuilder builder("quick_return");
  builder.setGravity(Vector3(0.0, -9.81, 0.0));
  const auto bar = [](double mass, double com_x, double inertia_z) {
    return Inertia(mass, Vector3(com_x, 0.0, 0.0), Vector3(1e-4, inertia_z, inertia_z).asDiagonal());
  };
  const auto at = [](double x) { return Transform(Matrix3::Identity(), Vector3(x, 0.0, 0.0)); };
  const Joint about_z = Joint::revolute(Vector3::UnitZ());
  builder.addBody("rocker", "world", about_z, Transform(), bar(2.0, 0.5, 2.0 / 12.0));
  builder.addBody("slider", "rocker", Joint::prismatic(Vector3::UnitX()), Transform(),
                  bar(0.5, 0.0, 0.001));
  builder.addBody("crank", "slider", about_z, Transform(), bar(1.0, -0.1, 0.04 / 12.0));
  builder.addBody("link", "rocker", about_z, at(1.0), bar(1.5, 0.3, 0.045));
  builder.addBody("ram", "link", about_z, at(0.6), bar(3.0, 0.0, 0.01));
  Model model = builder.build();
  // the crank's end pinned at D = (0, 0.5); the ram sliding along x at height 1.1 without turning
  LoopClosureSpec pin;
  pin.name = "pin_D";
  pin.type = ClosureType::kBall;
  pin.body_a = "world";
  pin.frame_a = Transform(Matrix3::Identity(), Vector3(0.0, 0.5, 0.0));
  pin.body_b = "crank";
  pin.frame_b = at(-0.2);
  addLoopClosure(model, pin);
  LoopClosureSpec guide;
  guide.name = "guide";
  guide.type = ClosureType::kPrismatic;
  guide.body_a = "world";
  guide.frame_a = Transform(Matrix3::Identity(), Vector3(0.9463513310, 1.1, 0.0));
  guide.body_b = "ram";
  guide.axis = Vector3::UnitX();
  addLoopClosure(model, guide);
  return model;
}

// The notes' state: the rocker points at the crank pin, the crank horizontal, ż on the manifold
// with the crank turning at 2π rad/s.
const Eigen::VectorXd& quickReturnQ() {
  static const Eigen::VectorXd q = (Eigen::VectorXd(5) << 1.19028994968, 0.538516480713,
                                    -1.19028994968, -0.900373479827, -0.289916469855)
                                       .finished();
  return q;
}
const Eigen::VectorXd& quickReturnV() {
  static const Eigen::VectorXd v = (Eigen::VectorXd(5) << 0.866646249266, 1.16675822045,
                                    5.41653905791, -1.42644861845, 0.559802369179)
                                       .finished();
  return v;
}

TEST(QuickReturn, AccelerationsAndClosureForcesAtTheNotesState) {
  // The notes' q̈ and λ (their λ enters as −C_zᵀ λ, ours as +Jᵀ λ: the signs flip). The state is
  // given to 12 digits, so C ≈ 1e-12 and the Baumgarte terms are switched off; q̈ then agrees
  // to the notes' 12 digits within the sensitivity of this small-crank mechanism (1e-9).
  Model model = quickReturn();
  model.stabilisation.baumgarte_alpha = model.stabilisation.baumgarte_beta = 0.0;
  const Eigen::VectorXd expected_qdd =
      (Eigen::VectorXd(5) << -0.975158434918, -17.1123259017, -77.5642893296, 2.9114175378,
       -1.93625910289)
          .finished();
  for (Formulation f : test::formulationsFor(model)) {
    const Constrained c = constrainedDynamics(model, f, quickReturnQ(), quickReturnV(),
                                              Eigen::VectorXd::Zero(model.nv));
    EXPECT_LT(relativeDifference(c.qdd, expected_qdd), 1e-9) << formulationName(f);
    // rows: pin x, y, z; guide rotation x, y, z; guide normals z, −y. Planar: 4 independent.
    EXPECT_EQ(c.rank, 4);
    EXPECT_NEAR(c.lambda(0), -16.0954534227, 1e-7) << formulationName(f);
    EXPECT_NEAR(c.lambda(1), 2.28701840785, 1e-7) << formulationName(f);
    EXPECT_NEAR(c.lambda(5), 0.0, 1e-7) << formulationName(f);
    EXPECT_NEAR(c.lambda(7), -36.3566838531, 1e-7) << formulationName(f);
    // the redundant rows carry no force (minimum-norm λ)
    for (int r : {2, 3, 4, 6}) EXPECT_NEAR(c.lambda(r), 0.0, 1e-9) << formulationName(f);
  }
}

TEST(QuickReturn, RungeKuttaWithBaumgarteFollowsTheNotesTrajectory) {
  // The notes' run: RK4, h = 1e-3, Baumgarte a = b = 10, no projection; z at 0.5 s steps to 8
  // digits, and energy 65.88120713 J within their drift (2.7e-6 J).
  Model model = quickReturn();
  model.stabilisation.projection_iterations = 0;
  const double expected[4][5] = {
      {1.33042965, 0.64634876, -0.63744848, -1.11416573, -0.21626393},
      {1.37822120, 0.31513629, -2.64268385, -1.17943907, -0.19878213},
      {1.91202383, 0.36161257, -4.13265827, -1.64614326, -0.26588058},
      {1.79919720, 0.65188896, -5.68147824, -1.58767290, -0.21152431}};
  for (Formulation f : test::formulationsFor(model)) {
    Simulator sim(std::make_shared<const Model>(model), f, Integrator::kRk4, 1e-3);
    // hdca holds the loops at velocity level in (q, P), without Baumgarte: another
    // discretisation, checked against the converged trajectory below
    if (sim.momentumState()) continue;
    sim.setState(quickReturnQ(), quickReturnV());
    EXPECT_NEAR(sim.energy(), 65.88120713, 1e-8);
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model.nv);
    for (int checkpoint = 0; checkpoint < 4; ++checkpoint) {
      for (int k = 0; k < 500; ++k) sim.step(tau);
      for (int j = 0; j < 5; ++j)
        EXPECT_NEAR(sim.q()(j), expected[checkpoint][j], 2e-8)
            << formulationName(f) << " t = " << sim.time() << " z" << j + 1;
      EXPECT_NEAR(sim.energy(), 65.88120713, 5e-6) << formulationName(f);
    }
  }
}

// --- force elements ---

TEST(QuickReturn, HdcaOnMomentaFollowsTheConvergedTrajectory) {
  // hdca's (q, P) state with the loops at velocity level (docs/HDCA.md "Closed loops"), no
  // stabilisation: at h = 1e-4 it meets aba's Baumgarte run at t = 2 s to 1e-9 (both converged:
  // RK4's error falls as h⁴, from ~1e-6 at 1e-3); at h = 1e-3 it is within 5e-7 of that
  // trajectory (measured 1.7e-7; aba's Baumgarte run of the notes, 7.4e-7) and keeps the energy
  // within 1e-6 J (measured 6e-7 J; the notes' run 2.7e-6 J).
  Model model = quickReturn();
  model.stabilisation.projection_iterations = 0;
  const auto shared = std::make_shared<const Model>(model);
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model.nv);
  const auto run = [&](Formulation f, double h) {
    Simulator sim(shared, f, Integrator::kRk4, h);
    sim.setState(quickReturnQ(), quickReturnV());
    const long steps = std::lround(2.0 / h);
    for (long k = 0; k < steps; ++k) sim.step(tau);
    return std::pair<Eigen::VectorXd, double>(sim.q(), sim.energy());
  };
  {
    Simulator sim(shared, Formulation::kHdca, Integrator::kRk4, 1e-3);
    ASSERT_TRUE(sim.momentumState());
  }
  const auto [converged, converged_energy] = run(Formulation::kAba, 1e-4);
  const auto [fine, fine_energy] = run(Formulation::kHdca, 1e-4);
  EXPECT_LE((fine - converged).lpNorm<Eigen::Infinity>(), 1e-9);
  const auto [coarse, coarse_energy] = run(Formulation::kHdca, 1e-3);
  const double error = (coarse - converged).lpNorm<Eigen::Infinity>();
  std::cout << "[ measured ] quick return, hdca at 1 ms: " << error << " from the converged z at 2 s,"
            << " energy " << coarse_energy - 65.88120713 << " J\n";
  EXPECT_LE(error, 5e-7);
  EXPECT_NEAR(coarse_energy, 65.88120713, 1e-6);
}

TEST(ForceElements, GeneralisedForceIsMinusTheGradientOfTheSpringEnergy) {
  // Q = −∂E/∂q for an undamped spring–damper: derivatives along q ⊕ ε e_k (every joint type,
  // central differences, ε = 1e-6: accurate to 1e-9 relative here).
  std::mt19937 rng(8);
  for (int trial = 0; trial < 10; ++trial) {
    test::RandomTreeOptions options;
    options.bodies = 6;
    Model model = test::randomTree(rng, options);
    for (int k = 0; k < 3; ++k) {
      SpringDamperSpec spring;
      spring.name = "spring" + std::to_string(k);
      spring.body_a = model.body_names[k];
      spring.body_b = model.body_names[model.nbodies - 1 - k];
      spring.point_a = test::randomVector(3, rng, 0.2);
      spring.point_b = test::randomVector(3, rng, 0.2);
      spring.stiffness = 100.0 * (k + 1);
      spring.rest_length = 0.1 * k;
      addSpringDamper(model, spring);
    }
    Data data(model);
    const Eigen::VectorXd q = test::randomConfiguration(model, rng);
    Eigen::VectorXd Q = Eigen::VectorXd::Zero(model.nv);
    forwardKinematics(model, data, q, Eigen::VectorXd::Zero(model.nv));
    addForceElementForces(model, data, Q);
    Eigen::VectorXd gradient(model.nv), q_step(model.nq);
    constexpr double kEps = 1e-6;
    for (int k = 0; k < model.nv; ++k) {
      const Eigen::VectorXd e = Eigen::VectorXd::Unit(model.nv, k);
      integrateConfiguration(model, q, e, kEps, q_step);
      forwardKinematics(model, data, q_step);
      const double up = forceElementEnergy(model, data);
      integrateConfiguration(model, q, e, -kEps, q_step);
      forwardKinematics(model, data, q_step);
      gradient(k) = (up - forceElementEnergy(model, data)) / (2 * kEps);
    }
    EXPECT_LT(relativeDifference(Q, -gradient), 1e-8) << "trial " << trial;
  }
}

// --- closed-form mechanisms ---

// The rocker angle of the bundled four-bar (a, b, c, d = 0.1, 0.35, 0.3, 0.4; open branch) for
// crank angle θ: C at distance b from the crank tip B and c from the pivot D.
double fourBarRocker(double theta) {
  constexpr double a = 0.1, b = 0.35, c = 0.3, d = 0.4;
  const Eigen::Vector2d B(a * std::cos(theta), a * std::sin(theta)), D(d, 0.0);
  const Eigen::Vector2d BD = D - B;
  const double e = BD.norm();
  const double along = (b * b - c * c + e * e) / (2 * e);
  const double across = std::sqrt(b * b - along * along);
  const Eigen::Vector2d u = BD / e, n(-u.y(), u.x());
  const Eigen::Vector2d C = B + along * u + across * n;
  return std::atan2(C.y(), C.x() - d);
}

double closureError(const Model& model, const Eigen::VectorXd& q) {
  Data data(model);
  return positionError(model, data, q).cwiseAbs().maxCoeff();
}

TEST(FourBar, FollowsItsClosedFormKinematicsAndStaysClosedFor1e5Steps) {
  // The bundled crank–rocker swings under gravity from crank-up for 100 s at 1 kHz (RK4, the
  // default stabilisation): the rocker angle stays on the closed-form curve of the crank angle,
  // and the closure error stays below 1e-9 m (docs/LOOPS.md "Stabilisation").
  const auto model = std::make_shared<const Model>(loadModel("four_bar"));
  ASSERT_EQ(model->loops.size(), 1u);
  for (Formulation f : test::formulationsFor(*model)) {
    Simulator sim(model, f, Integrator::kRk4, 1e-3);
    EXPECT_LT(sim.assemblyError(), 1e-12);
    EXPECT_NEAR(sim.q()(2), fourBarRocker(sim.q()(0)), 1e-10);
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
    double worst_closure = 0.0, worst_rocker = 0.0, crank_min = 1e9, crank_max = -1e9;
    for (int k = 1; k <= 100'000; ++k) {
      sim.step(tau);
      if (k % 100 != 0) continue;
      worst_closure = std::max(worst_closure, closureError(*model, sim.q()));
      worst_rocker = std::max(worst_rocker, std::abs(sim.q()(2) - fourBarRocker(sim.q()(0))));
      crank_min = std::min(crank_min, sim.q()(0));
      crank_max = std::max(crank_max, sim.q()(0));
    }
    EXPECT_LT(worst_closure, 1e-9) << formulationName(f);
    EXPECT_LT(worst_rocker, 1e-8) << formulationName(f);
    EXPECT_GT(crank_max - crank_min, 2.0) << formulationName(f);  // a real swing
  }
}

TEST(LoopStage, SolvesOnlyForTheRowsThatAreNotZeroAtEveryConfiguration) {
  // The bundled four-bar is planar about z, closed by a revolute (5 rows): its out-of-plane point
  // row and both tilt rows are zero at every configuration, and the stage leaves them out. On
  // random spatial mechanisms the rows it keeps are those whose Jacobian row is not zero at a
  // random state.
  const Model four_bar = loadModel("four_bar");
  for (Formulation f : test::formulationsFor(four_bar)) {
    ConstraintRowStage stage(four_bar, formulationInfo(f));
    EXPECT_EQ(stage.structuralRows(), 2) << formulationName(f);
  }
  std::mt19937 rng(31);
  for (int trial = 0; trial < 20; ++trial) {
    LoopCase c = randomLoopCase(rng, 3 + trial, 1 + trial % 4);
    Data data(c.model);
    Eigen::MatrixXd J(c.model.nconstraints, c.model.nv);
    forwardKinematics(c.model, data, c.q);
    evaluateClosures(c.model, data, {.jacobian = &J});
    int nonzero = 0;
    for (int r = 0; r < J.rows(); ++r) nonzero += !J.row(r).isZero(0.0);
    for (Formulation f : test::formulationsFor(c.model)) {
      ConstraintRowStage stage(c.model, formulationInfo(f));
      EXPECT_EQ(stage.structuralRows(), nonzero) << formulationName(f) << ", trial " << trial;
    }
  }
}

TEST(SliderCrank, FollowsItsClosedFormKinematics) {
  // crank r = 0.1 m about z at the origin, rod l = 0.3 m, slider on x; the rod's end pinned to the
  // slider by a ball (3 rows, 1 redundant in the plane). x = r cos θ + sqrt(l² − r² sin² θ).
  constexpr double r = 0.1, l = 0.3;
  ModelBuilder builder("slider_crank");
  builder.setGravity(Vector3(0.0, -9.81, 0.0));
  const Joint about_z = Joint::revolute(Vector3::UnitZ());
  builder.addBody("crank", "world", about_z, Transform(),
                  Inertia(0.5, Vector3(r / 2, 0, 0), Vector3(1e-5, 4e-4, 4e-4).asDiagonal()));
  builder.addBody("rod", "crank", about_z, Transform(Matrix3::Identity(), Vector3(r, 0, 0)),
                  Inertia(0.4, Vector3(l / 2, 0, 0), Vector3(1e-5, 3e-3, 3e-3).asDiagonal()));
  builder.addBody("slider", "world", Joint::prismatic(Vector3::UnitX()), Transform(),
                  Inertia(1.0, Vector3::Zero(), Vector3(1e-3, 1e-3, 1e-3).asDiagonal()));
  Model model = builder.build();
  LoopClosureSpec pin;
  pin.name = "wrist_pin";
  pin.body_a = "rod";
  pin.frame_a = Transform(Matrix3::Identity(), Vector3(l, 0, 0));
  pin.body_b = "slider";
  addLoopClosure(model, pin);
  setInitialPosition(model, "rod", std::vector<double>{-0.2});
  setInitialPosition(model, "slider", std::vector<double>{0.35});
  const auto shared = std::make_shared<const Model>(model);
  for (Formulation f : test::formulationsFor(model)) {
    Simulator sim(shared, f, Integrator::kRk4, 1e-3);
    ASSERT_LT(sim.assemblyError(), 1e-12);
    Eigen::VectorXd tau = Eigen::VectorXd::Zero(model.nv);
    tau(0) = 0.5;  // a motor on the crank: several turns in 3 s
    double worst = 0.0;
    for (int k = 0; k < 3000; ++k) {
      sim.step(tau);
      const double theta = sim.q()(0);
      const double x = r * std::cos(theta) + std::sqrt(l * l - std::pow(r * std::sin(theta), 2));
      worst = std::max(worst, std::abs(sim.q()(2) - x));
    }
    EXPECT_LT(worst, 1e-9) << formulationName(f);
    EXPECT_GT(sim.q()(0), 4 * M_PI) << formulationName(f);
  }
}

// --- redundant and singular mechanisms ---

// An orthogonal Bricard linkage: five 1 m, 1 kg rods along the edges of a unit cube (x, y, z,
// −x, −y) from the origin, the ground closing the sixth edge (−z); each hinge perpendicular to
// the two rods it joins. Five closure rows on five coordinates, one degree of freedom.
Model bricard() {
  ModelBuilder builder("bricard");
  builder.setGravity(Vector3(0.0, -9.81, 0.0));
  const Vector3 edges[5] = {Vector3::UnitX(), Vector3::UnitY(), Vector3::UnitZ(),
                            -Vector3::UnitX(), -Vector3::UnitY()};
  const Vector3 hinges[5] = {Vector3::UnitY(), Vector3::UnitZ(), Vector3::UnitX(),
                             Vector3::UnitY(), Vector3::UnitZ()};
  std::string parent = "world";
  Vector3 start = Vector3::Zero();
  for (int k = 0; k < 5; ++k) {
    // a 1 m bar of 0.1 m square section: m (1 + 0.01) / 12 across, m (0.02) / 12 along
    const Vector3 along = edges[k].cwiseAbs();
    const Matrix3 I = ((1.01 / 12.0) * (Vector3::Ones() - along) + (0.02 / 12.0) * along).asDiagonal();
    const std::string name = "rod" + std::to_string(k + 1);
    builder.addBody(name, parent, Joint::revolute(hinges[k]),
                    Transform(Matrix3::Identity(), start), Inertia(1.0, edges[k] / 2, I));
    parent = name;
    start = edges[k];
  }
  Model model = builder.build();
  LoopClosureSpec hinge;
  hinge.name = "ground_hinge";
  hinge.type = ClosureType::kRevolute;
  hinge.body_a = "rod5";
  hinge.frame_a = Transform(Matrix3::Identity(), -Vector3::UnitY());
  hinge.body_b = "world";
  hinge.frame_b = Transform(Matrix3::Identity(), Vector3::UnitZ());
  hinge.axis = Vector3::UnitX();
  addLoopClosure(model, hinge);
  return model;
}

TEST(Bricard, OneDegreeOfFreedomAndEnergyConservedFor10Seconds) {
  // Grübler counts 5 − 5 = 0; the rows have rank 4 (one redundant), the linkage moves. RK4 at
  // 1 ms for 10 s from a push on the first hinge: energy constant to 1e-6 of its swing.
  const auto model = std::make_shared<const Model>(bricard());
  for (Formulation f : test::formulationsFor(*model)) {
    Simulator sim(model, f, Integrator::kRk4, 1e-3);
    ASSERT_LT(sim.assemblyError(), 1e-14);
    Eigen::VectorXd v0 = Eigen::VectorXd::Zero(model->nv);
    v0(0) = 1.0;
    sim.setState(sim.q(), v0);  // projected onto J v = 0
    ASSERT_GT(sim.v().norm(), 0.1) << "the linkage must have a motion";
    const double e0 = sim.energy();
    double swing = 0.0, drift = 0.0;
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
    const Eigen::VectorXd q0 = sim.q();
    for (int k = 0; k < 10'000; ++k) {
      sim.step(tau);
      drift = std::max(drift, std::abs(sim.energy() - e0));
      swing = std::max(swing, (sim.q() - q0).cwiseAbs().maxCoeff());
    }
    auto* stage = static_cast<ConstraintRowStage*>(sim.constraints());
    EXPECT_EQ(stage->rank(), 4) << formulationName(f);
    EXPECT_TRUE(sim.q().allFinite() && sim.v().allFinite()) << formulationName(f);
    EXPECT_GT(swing, 0.5) << formulationName(f);
    EXPECT_LT(drift, 1e-6 * std::max(1.0, std::abs(e0))) << formulationName(f);
    EXPECT_LT(closureError(*model, sim.q()), 1e-9) << formulationName(f);
  }
}

// The double four-bar of the IFToMM multibody benchmarks: three 1 m, 1 kg cranks hinged at x = 0,
// 1, 2 on the ground and two 1 m, 1 kg couplers joining their tips (g = 9.81 along −y). The
// third crank is redundant (10 rows, rank 4, one degree of freedom), and with the cranks
// horizontal every bar is aligned: the rows lose rank there, twice per turn.
Model doubleFourBar() {
  ModelBuilder builder("double_four_bar");
  builder.setGravity(Vector3(0.0, -9.81, 0.0));
  const Inertia bar(1.0, Vector3(0.5, 0, 0), Vector3(1e-4, 1.0 / 12, 1.0 / 12).asDiagonal());
  const Joint about_z = Joint::revolute(Vector3::UnitZ());
  const auto at = [](double x) { return Transform(Matrix3::Identity(), Vector3(x, 0, 0)); };
  builder.addBody("crank1", "world", about_z, at(0.0), bar);
  builder.addBody("coupler1", "crank1", about_z, at(1.0), bar);
  builder.addBody("crank2", "world", about_z, at(1.0), bar);
  builder.addBody("coupler2", "crank2", about_z, at(1.0), bar);
  builder.addBody("crank3", "world", about_z, at(2.0), bar);
  Model model = builder.build();
  for (int k : {1, 2}) {
    LoopClosureSpec pin;
    pin.name = "pin" + std::to_string(k);
    pin.type = ClosureType::kRevolute;
    pin.body_a = "coupler" + std::to_string(k);
    pin.frame_a = at(1.0);
    pin.body_b = "crank" + std::to_string(k + 1);
    pin.frame_b = at(1.0);
    pin.axis = Vector3::UnitZ();
    addLoopClosure(model, pin);
  }
  // cranks up, couplers level (the benchmark's start)
  for (const char* crank : {"crank1", "crank2", "crank3"})
    setInitialPosition(model, crank, std::vector<double>{M_PI / 2});
  for (const char* coupler : {"coupler1", "coupler2"})
    setInitialPosition(model, coupler, std::vector<double>{-M_PI / 2});
  return model;
}

TEST(DoubleFourBar, TurnsThroughItsSingularPositionsWithEnergyConserved) {
  // from cranks up at 1 rad/s: the cranks turn full circles, through the aligned positions; RK4
  // at 1 ms for 10 s keeps the energy within 1e-6 of its value and the loops closed
  const auto model = std::make_shared<const Model>(doubleFourBar());
  for (Formulation f : test::formulationsFor(*model)) {
    Simulator sim(model, f, Integrator::kRk4, 1e-3);
    ASSERT_LT(sim.assemblyError(), 1e-14);
    Eigen::VectorXd v0 = Eigen::VectorXd::Zero(model->nv);
    v0 << 1.0, -1.0, 1.0, -1.0, 1.0;
    sim.setState(sim.q(), v0);
    const double e0 = sim.energy();
    const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
    double drift = 0.0, worst_closure = 0.0, worst_parallel = 0.0;
    for (int k = 0; k < 10'000; ++k) {
      sim.step(tau);
      drift = std::max(drift, std::abs(sim.energy() - e0));
      worst_closure = std::max(worst_closure, closureError(*model, sim.q()));
      // the parallelogram branch: every crank at the same angle
      worst_parallel = std::max({worst_parallel, std::abs(sim.q()(2) - sim.q()(0)),
                                 std::abs(sim.q()(4) - sim.q()(0))});
    }
    std::cout << "[ measured ] double four-bar, " << formulationName(f) << ": crank turned to "
              << sim.q()(0) << " rad, energy drift " << drift << " J, closure " << worst_closure
              << " m\n";
    EXPECT_GT(std::abs(sim.q()(0) - M_PI / 2), 2 * M_PI) << formulationName(f);
    EXPECT_LT(drift, 1e-6 * std::abs(e0)) << formulationName(f);
    EXPECT_LT(worst_closure, 1e-9) << formulationName(f);
    EXPECT_LT(worst_parallel, 1e-6) << formulationName(f);
  }
}

TEST(Assembly, ClosesAFourBarFromARoughGuessAndProjectsTheVelocity) {
  Model model = loadModel("four_bar");
  Data data(model);
  ConstraintRowStage stage(model, formulationInfo(Formulation::kAba).inverse_inertia);
  Eigen::VectorXd q = model.initial_configuration;
  q(1) += 0.15;  // the guess of the model file, disturbed
  q(2) -= 0.2;
  Eigen::VectorXd v = Eigen::VectorXd::Ones(model.nv);
  EXPECT_GT(closureError(model, q), 1e-2);
  EXPECT_LT(stage.assemble(model, data, q, v), 1e-13);
  EXPECT_LT(closureError(model, q), 1e-13);
  EXPECT_NEAR(q(2), fourBarRocker(q(0)), 1e-10);  // the open branch it started near
  Eigen::MatrixXd J(model.nconstraints, model.nv);
  forwardKinematics(model, data, q);
  evaluateClosures(model, data, {nullptr, &J, nullptr});
  EXPECT_LT((J * v).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_GT(v.norm(), 0.1);  // the admissible part is kept
}

}  // namespace
}  // namespace hilsim
