// The real-time paths never touch the heap: Simulator::step for every formulation × integrator, and
// the algorithms called directly, on a floating tree with every joint type and on a fixed-base
// chain.
//
// Two independent detectors, active only inside an AllocationGuard on the current thread:
//  1. this binary replaces every global operator new/delete (plain, array, sized, aligned, nothrow)
//     and the C allocator (malloc, calloc, realloc, free, aligned_alloc, posix_memalign, memalign,
//     valloc, pvalloc), forwarding to glibc's __libc_* entry points, and counts calls;
//  2. the binary is compiled with EIGEN_RUNTIME_NO_MALLOC, the guard calls
//     Eigen::internal::set_is_malloc_allowed(false), and eigen_assert is redirected (below) so that
//     Eigen's "heap allocation is forbidden" check is recorded even in a Release (NDEBUG) build
//     instead of being compiled out. This covers Eigen code instantiated in this translation unit
//     (and engine code if the linker keeps this unit's copies of Eigen's inline allocators); the
//     allocator hooks cover everything.
// A self-test proves that an allocation inside the guard is counted, so the suite can fail.

#include <cstddef>

namespace hilsim::test {
/// Records a failed eigen_assert (notably Eigen's malloc-forbidden check).
void recordEigenAssertion(const char* condition) noexcept;
}  // namespace hilsim::test

// Must precede every Eigen include (Eigen only defines eigen_assert when it is not defined).
#define eigen_assert(x)                                                 \
  do {                                                                  \
    if (!static_cast<bool>(x)) ::hilsim::test::recordEigenAssertion(#x); \
  } while (false)

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include <gtest/gtest.h>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/crba.h"
#include "engine/algorithms/crba_forward_dynamics.h"
#include "engine/algorithms/energy.h"
#include "engine/algorithms/forward_kinematics.h"
#include "engine/algorithms/frame_jacobian.h"
#include "engine/algorithms/rnea.h"
#include "engine/algorithms/tree_ldl.h"
#include "engine/model/configuration.h"
#include "engine/integrators/simulator.h"
#include "engine/builder/closure_builder.h"
#include "engine/builder/model_builder.h"
#include "engine/constraints/closure_kinematics.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/io/model_loader.h"
#include "tests/support/allocation_hooks.h"
#include "tests/support/contact_models.h"
#include "tests/support/formulation_matrix.h"
#include "tests/support/random_model.h"

#ifndef EIGEN_RUNTIME_NO_MALLOC
#error "allocation_test must be compiled with EIGEN_RUNTIME_NO_MALLOC (see tests/CMakeLists.txt)"
#endif

namespace {

thread_local long t_eigen_assertions = 0;
thread_local const char* t_last_eigen_assertion = nullptr;

}  // namespace

void hilsim::test::recordEigenAssertion(const char* condition) noexcept {
  ++t_eigen_assertions;
  t_last_eigen_assertion = condition;
}

namespace hilsim {
namespace {

struct Counts {
  long allocations = 0, deallocations = 0, eigen_assertions = 0;
};

/// Counts heap traffic on this thread between construction and stop() (or destruction), with
/// Eigen's runtime malloc check armed. Nothing inside may allocate, including gtest assertions:
/// check the counts after stop().
class AllocationGuard {
 public:
  AllocationGuard() {
    const test::HeapCounts before = test::threadHeapCounts();
    allocations_ = before.allocations;
    deallocations_ = before.deallocations;
    eigen_assertions_ = t_eigen_assertions;
    Eigen::internal::set_is_malloc_allowed(false);
    test::beginHeapCounting();
  }
  ~AllocationGuard() { stop(); }
  AllocationGuard(const AllocationGuard&) = delete;
  AllocationGuard& operator=(const AllocationGuard&) = delete;

  Counts stop() {
    if (test::heapCountingActive()) {
      test::endHeapCounting();
      const test::HeapCounts after = test::threadHeapCounts();
      Eigen::internal::set_is_malloc_allowed(true);
      counts_ = Counts{after.allocations - allocations_, after.deallocations - deallocations_,
                       t_eigen_assertions - eigen_assertions_};
    }
    return counts_;
  }

 private:
  long allocations_ = 0, deallocations_ = 0, eigen_assertions_ = 0;
  Counts counts_;
};

[[maybe_unused]] void expectNoHeapTraffic(const Counts& c, const std::string& what) {
  EXPECT_EQ(c.allocations, 0) << what;
  EXPECT_EQ(c.deallocations, 0) << what;
  EXPECT_EQ(c.eigen_assertions, 0)
      << what << ": " << (t_last_eigen_assertion ? t_last_eigen_assertion : "");
}

// Keeps the compiler from eliding the self-test's allocations.
void* volatile g_sink = nullptr;

// ------------------------------------------------------------------------------------------------

TEST(AllocationCounter, CountsEveryAllocatorInsideTheGuardOnly) {
#if !HILSIM_ALLOCATION_HOOKS
  GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
#else
  using MallocFn = void* (*)(std::size_t);
  MallocFn volatile malloc_fn = &std::malloc;  // opaque to the optimiser
  struct alignas(64) Overaligned {
    double x[8];
  };
  {
    AllocationGuard guard;
    int* a = new int(1);
    g_sink = a;
    delete a;
    double* b = new double[16];
    g_sink = b;
    delete[] b;
    Overaligned* c = new Overaligned();
    g_sink = c;
    delete c;
    int* d = new (std::nothrow) int(2);
    g_sink = d;
    delete d;
    void* e = malloc_fn(100);
    g_sink = e;
    e = std::realloc(e, 1000);
    g_sink = e;
    std::free(e);
    void* f = std::calloc(10, 10);
    g_sink = f;
    std::free(f);
    {
      std::vector<double> g(100, 1.0);
      g_sink = g.data();
    }
    const Counts counts = guard.stop();
    EXPECT_EQ(counts.allocations, 8);
    EXPECT_EQ(counts.deallocations, 7);  // realloc moves the block without calling free
    EXPECT_EQ(counts.eigen_assertions, 0);
  }
  {
    // an Eigen heap matrix trips both detectors
    AllocationGuard guard;
    {
      Eigen::VectorXd x(64);
      g_sink = x.data();
    }
    const Counts counts = guard.stop();
    EXPECT_GE(counts.allocations, 1);
    EXPECT_GE(counts.deallocations, 1);
    EXPECT_GE(counts.eigen_assertions, 1);
  }
  {
    // outside a guard nothing is counted
    const long before = test::threadHeapCounts().allocations;
    int* a = new int(3);
    g_sink = a;
    delete a;
    EXPECT_EQ(test::threadHeapCounts().allocations, before);
  }
#endif
}

// ------------------------------------------------------------------------------------------------

/// A floating tree with every joint type, damping and armature, and a few welded bodies. The free
/// root has no armature, so ABA takes its floating-base (6×6 Cholesky) step.
[[maybe_unused]] Model floatingTree() {
  std::mt19937 rng(31);
  test::RandomTreeOptions options;
  options.bodies = 20;
  Model model = test::randomTree(rng, options);
  model.armature.head<6>().setZero();
  return model;
}

/// A fixed-base serial chain of revolute joints (a manipulator-like model).
[[maybe_unused]] Model fixedBaseChain() {
  ModelBuilder builder("chain");
  std::string parent = "world";
  for (int k = 0; k < 7; ++k) {
    const std::string name = "link" + std::to_string(k);
    const Vector3 axis = k % 2 == 0 ? Vector3::UnitZ() : Vector3::UnitY();
    builder.addBody(name, parent, Joint::revolute(axis),
                    Transform(Matrix3::Identity(), Vector3(0.0, 0.0, k == 0 ? 0.0 : 0.3)),
                    Inertia(2.0, Vector3(0.0, 0.0, 0.15), Vector3(0.02, 0.02, 0.005).asDiagonal()),
                    JointProperties{0.1, 0.01});
    parent = name;
  }
  return builder.build();
}

/// A floating tree mixing rigid and flexible bodies (1–4 modes, hinge nodes, children on nodes,
/// geometric stiffening).
[[maybe_unused]] Model flexibleTree() {
  std::mt19937 rng(32);
  test::RandomFlexibleTreeOptions options;
  options.bodies = 8;
  return test::randomFlexibleTree(rng, options);
}

/// A floating random tree closed by every loop type, with two spring–dampers.
[[maybe_unused]] Model closedTree() {
  std::mt19937 rng(33);
  test::RandomTreeOptions options;
  options.bodies = 10;
  Model model = test::randomTree(rng, options);
  test::addRandomClosures(model, test::randomConfiguration(model, rng), 5, rng);
  for (int k = 0; k < 2; ++k) {
    SpringDamperSpec spring;
    spring.name = "spring" + std::to_string(k);
    spring.body_a = model.body_names[k];
    spring.body_b = model.body_names[model.nbodies - 1 - k];
    spring.stiffness = 50.0;
    spring.damping = 0.5;
    spring.rest_length = 0.1;
    addSpringDamper(model, spring);
  }
  return model;
}

[[maybe_unused]] Model modelNamed(const std::string& name) {
  if (name == "floating_tree") return floatingTree();
  if (name == "closed_tree") return closedTree();
  if (name == "four_bar" || name == "delta") return loadModel(name);
  if (name == "massless_chain") return test::masslessChain();
  if (name == "flexible_tree") return flexibleTree();
  return fixedBaseChain();
}

struct SimulatorCase {
  const char* model_name;
  Formulation formulation;
  Integrator integrator;
};

void PrintTo(const SimulatorCase& c, std::ostream* os) {
  *os << c.model_name << " " << formulationName(c.formulation) << " "
      << integratorName(c.integrator);
}

class SimulatorAllocations : public ::testing::TestWithParam<SimulatorCase> {};

TEST_P(SimulatorAllocations, TenThousandStepsAllocateNothing) {
#if !HILSIM_ALLOCATION_HOOKS
  GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
#else
  const SimulatorCase c = GetParam();
  const auto model = std::make_shared<const Model>(modelNamed(c.model_name));
  std::mt19937 rng(5);
  Simulator sim(model, c.formulation, c.integrator, 1e-3);
  const Eigen::VectorXd q0 = test::randomConfiguration(*model, rng);
  const Eigen::VectorXd v0 = test::randomVector(model->nv, rng, 0.1);
  const Eigen::VectorXd tau = test::randomVector(model->nv, rng, 0.1);
  Counts counts;
  {
    AllocationGuard guard;
    sim.setState(q0, v0);  // a reset solves the massless velocities: also allocation-free
    for (int k = 0; k < 10000; ++k) sim.step(tau);
    counts = guard.stop();
  }
  expectNoHeapTraffic(counts, std::string(c.model_name) + " " +
                                  std::string(formulationName(c.formulation)) + " " +
                                  std::string(integratorName(c.integrator)));
  EXPECT_NEAR(sim.time(), 10.0, 1e-9);
#endif
}

// Every formulation × integrator × model family that checkSimulatorChoice accepts.
std::vector<SimulatorCase> simulatorCases() {
  std::vector<SimulatorCase> cases;
  for (const char* name : {"floating_tree", "fixed_chain", "flexible_tree", "massless_chain",
                           "closed_tree", "four_bar", "delta"}) {
    const Model model = modelNamed(name);
    for (const Formulation f : test::allFormulations())
      for (const Integrator i : test::allIntegrators())
        if (checkSimulatorChoice(model, f, i).empty()) cases.push_back({name, f, i});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    All, SimulatorAllocations, ::testing::ValuesIn(simulatorCases()), [](const auto& info) {
      return std::string(info.param.model_name) + "_" +
             std::string(formulationName(info.param.formulation)) + "_" +
             std::string(integratorName(info.param.integrator));
    });

// Every algorithm called directly, repeatedly, with and without external wrenches.
class AlgorithmAllocations : public ::testing::TestWithParam<const char*> {};

TEST_P(AlgorithmAllocations, AlgorithmsAllocateNothing) {
#if !HILSIM_ALLOCATION_HOOKS
  GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
#else
  const Model model = modelNamed(GetParam());
  Data data(model);
  std::mt19937 rng(6);
  const Eigen::VectorXd q = test::randomConfiguration(model, rng);
  const Eigen::VectorXd v = test::randomVector(model.nv, rng);
  const Eigen::VectorXd a = test::randomVector(model.nv, rng);
  const Eigen::VectorXd tau = test::randomVector(model.nv, rng);
  std::vector<ForceVector> f_ext(model.nbodies);
  for (auto& f : f_ext) f = test::randomVector(6, rng);
  const std::span<const ForceVector> wrenches(f_ext);
  Eigen::VectorXd q_next(model.nq), b(model.nv);
  Matrix6N J(6, model.nv);
  double sum = 0.0;  // consumes the results
  Counts counts;
  {
    AllocationGuard guard;
    for (int k = 0; k < 200; ++k) {
      sum += rnea(model, data, q, v, a)(0);
      sum += rnea(model, data, q, v, a, wrenches)(0);
      sum += nonLinearEffects(model, data, q, v)(0);
      sum += nonLinearEffects(model, data, q, v, wrenches)(0);
      sum += crba(model, data, q)(0, 0);
      sum += aba(model, data, q, v, tau)(0);
      sum += aba(model, data, q, v, tau, wrenches)(0);
      sum += crbaForwardDynamics(model, data, q, v, tau)(0);
      sum += crbaForwardDynamics(model, data, q, v, tau, wrenches)(0);
      data.M_factor = data.M;
      treeLdlFactor(model, data.M_factor);
      b = tau;
      treeLdlSolve(model, data.M_factor, b);
      sum += b(0);
      forwardKinematics(model, data, q);
      forwardKinematics(model, data, q, v);
      forwardKinematics(model, data, q, v, a);
      sum += bodyVelocityInBodyFrame(data, model.nbodies - 1)(0);
      sum += bodyOriginVelocity(data, model.nbodies - 1)(0);
      sum += bodyOriginAcceleration(data, model.nbodies - 1)(0);
      for (const JacobianReference reference :
           {JacobianReference::kWorld, JacobianReference::kLocal,
            JacobianReference::kLocalWorldAligned}) {
        frameJacobian(model, data, static_cast<int>(model.frames.size()) - 1, reference, J);
        sum += J(0, 0);
      }
      for (int i = 1; i < model.nbodies; ++i) {
        if (model.nmodes[i] == 0 || model.flexible[i].nodes.empty()) continue;
        sum += nodePlacement(model, data, q, i, 0).translation(0);
        sum += nodeVelocity(model, data, q, v, i, 0)(0);
      }
      sum += kineticEnergy(model, data, q, v);
      sum += potentialEnergy(model, data, q);
      integrateConfiguration(model, q, v, 1e-3, q_next);
      normalizeConfiguration(model, q_next);
      sum += q_next(0);
    }
    counts = guard.stop();
  }
  expectNoHeapTraffic(counts, GetParam());
  EXPECT_TRUE(std::isfinite(sum));
#endif
}

INSTANTIATE_TEST_SUITE_P(Models, AlgorithmAllocations,
                         ::testing::Values("floating_tree", "fixed_chain", "flexible_tree"));

// The loop closure stage on its own, for every formulation's M⁻¹: accelerations, projection,
// assembly, the closure rows, the force elements and their energy.
TEST(LoopStageAllocations, EveryPartOfTheStageAllocatesNothing) {
#if !HILSIM_ALLOCATION_HOOKS
  GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
#else
  const Model model = closedTree();
  std::mt19937 rng(9);
  const Eigen::VectorXd q0 = test::randomConfiguration(model, rng);
  const Eigen::VectorXd v0 = test::randomVector(model.nv, rng);
  const Eigen::VectorXd tau = test::randomVector(model.nv, rng);
  for (const FormulationInfo& f : formulations()) for (const bool general : {false, true}) {
    if (!f.capabilities.closed_loops) continue;
    // with the formulation's Delassus operator, and through its M⁻¹ alone
    Data data = test::dataFor(model, f.id);
    ConstraintRowStage stage = general ? ConstraintRowStage(model, f.inverse_inertia)
                                     : ConstraintRowStage(model, f);
    Eigen::VectorXd q = q0, v = v0, qdd(model.nv), C(model.nconstraints), bias(model.nconstraints);
    Eigen::MatrixXd J(model.nconstraints, model.nv);
    double sum = 0.0;
    Counts counts;
    {
      AllocationGuard guard;
      for (int k = 0; k < 100; ++k) {
        sum += stage.assemble(model, data, q, v);
        qdd = f.forward_dynamics(model, data, q, v, tau);
        stage.accelerations(model, data, q, v, tau, qdd);
        stage.project(model, data, q, v);
        forwardKinematics(model, data, q, v);
        evaluateClosures(model, data, {&C, &J, &bias});
        addForceElementForces(model, data, qdd);
        sum += qdd(0) + stage.multipliers()(0) + C(0) + J(0, 0) + bias(0);
        sum += forceElementEnergy(model, data) + stage.potentialEnergy(model, data, q);
      }
      counts = guard.stop();
    }
    expectNoHeapTraffic(counts, std::string("loop stage ") + std::string(f.name) +
                                    (general ? " (general route)" : ""));
    EXPECT_TRUE(std::isfinite(sum)) << f.name;
  }
#endif
}

#if HILSIM_ALLOCATION_HOOKS
// 5000 steps of every formulation with the stage that can run `model`, both explicit
// integrators, torques from drive(k, tau); no heap traffic, and the rows beyond the loops active
// in more than `active_rows` row-steps.
template <typename Drive>
void expectStageStepsAllocateNothing(const std::shared_ptr<const Model>& model, Drive drive,
                                     int active_rows, const std::string& what) {
  for (const FormulationInfo& f : formulations()) {
    if (!checkFormulation(*model, f.id).empty()) continue;
    for (const Integrator integrator : {Integrator::kRk4, Integrator::kSemiImplicitEuler}) {
      Simulator sim(model, f.id, integrator, 1e-3);
      const auto* stage = static_cast<const ConstraintRowStage*>(sim.constraints());
      Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
      int active_steps = 0;
      Counts counts;
      {
        AllocationGuard guard;
        for (int k = 0; k < 5000; ++k) {
          drive(k, tau);
          sim.step(tau);
          active_steps += stage->activeUnilateralRows();
        }
        counts = guard.stop();
      }
      expectNoHeapTraffic(counts, what + " " + std::string(f.name));
      EXPECT_GT(active_steps, active_rows) << what << " " << f.name;
      EXPECT_TRUE(sim.q().allFinite()) << what << " " << f.name;
    }
  }
}
#endif

// The rows beyond the loops: a leg with a loop, limits, joint friction and two contact spheres
// dropped on the ground, so that rows of every kind switch on and off, for thousands of steps of
// every formulation with the stage and both explicit integrators (docs/CONTACT.md).
TEST(ContactStageAllocations, StepsWithLimitsFrictionAndContactsAllocateNothing) {
#if !HILSIM_ALLOCATION_HOOKS
  GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
#else
  const auto model = std::make_shared<const Model>(
      loadYamlString(test::kLeggedFourBar, ".", "legged_four_bar.yaml"));
  // more than the three friction rows active in every step: limits and contacts too
  expectStageStepsAllocateNothing(
      model,
      [](int k, Eigen::VectorXd& tau) {
        tau(0) = 4.0 * std::sin(0.004 * k);
        tau(3) = 20.0 * std::sin(0.01 * k);
      },
      5000 * 3, "contact stage");
#endif
}

// The stage on a model with flexible bodies: the bundled flexible arm with stops on its two
// geared joints and Coulomb friction on the elbow, driven into the stops and back (aba's modal
// M⁻¹ and crba's LᵀDL on the columns of Jᵀ, docs/CONTACT.md).
TEST(ContactStageAllocations, AFlexibleArmAtItsStopsAllocatesNothing) {
#if !HILSIM_ALLOCATION_HOOKS
  GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
#else
  Model arm = loadModel("flexible_arm");
  const int shoulder = arm.idx_v[1], elbow = arm.idx_v[2];
  arm.lower_limit[shoulder] = -0.3;
  arm.upper_limit[shoulder] = 0.3;
  arm.lower_limit[elbow] = -0.5;
  arm.upper_limit[elbow] = 0.5;
  arm.friction[elbow] = 0.5;
  ASSERT_TRUE(arm.limits_enforced);
  // more than the elbow's friction row in every step: the stops too
  expectStageStepsAllocateNothing(
      std::make_shared<const Model>(std::move(arm)),
      [=](int k, Eigen::VectorXd& tau) {
        tau(shoulder) = 20.0 * std::sin(0.004 * k);
        tau(elbow) = 5.0 * std::sin(0.006 * k);
      },
      5000 + 1000, "flexible arm at its stops");
#endif
}

// Simulator::energy() and setState() are also callable from the loop.
TEST(SimulatorStateAllocations, EnergyAndSetStateAllocateNothing) {
#if !HILSIM_ALLOCATION_HOOKS
  GTEST_SKIP() << "allocator hooks are disabled under sanitizers";
#else
  const auto model = std::make_shared<const Model>(floatingTree());
  std::mt19937 rng(8);
  Simulator sim(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  const Eigen::VectorXd q = test::randomConfiguration(*model, rng);
  const Eigen::VectorXd v = test::randomVector(model->nv, rng);
  double sum = 0.0;
  Counts counts;
  {
    AllocationGuard guard;
    for (int k = 0; k < 100; ++k) {
      sim.setState(q, v, 0.0);
      sum += sim.energy();
    }
    counts = guard.stop();
  }
  expectNoHeapTraffic(counts, "energy/setState");
  EXPECT_TRUE(std::isfinite(sum));
#endif
}

}  // namespace
}  // namespace hilsim
