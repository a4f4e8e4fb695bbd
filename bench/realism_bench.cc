// What the hardware models add to a control cycle (docs/REALISM.md, "Measured"): the drives'
// loops and the actuator models per physics step, the sensor models per cycle, beside one RK4
// step of the same model in the same run. iiwa14 (7 DoF) and the quadruped (18 DoF, an IMU).
#include <benchmark/benchmark.h>

#include <memory>

#include "engine/integrators/simulator.h"
#include "engine/io/model_loader.h"
#include "rt/actuator_models.h"
#include "rt/fault_injection.h"
#include "rt/joint_drives.h"
#include "rt/sensor_models.h"

namespace {

using namespace hilsim;

std::shared_ptr<const Model> bundled(const char* name) {
  return std::make_shared<const Model>(loadModel(name));
}

// The reference: one physics step of the model from rest with zero torques (the state put back
// after each, inside the timing: a copy of q and v).
void BM_Rk4Step(benchmark::State& state, const char* name) {
  const auto model = bundled(name);
  Simulator sim(model, Formulation::kAba, Integrator::kRk4, 1e-3);
  const Eigen::VectorXd tau = Eigen::VectorXd::Zero(model->nv);
  const Eigen::VectorXd q = sim.q(), v = sim.v();
  for (auto _ : state) {
    sim.step(tau);
    benchmark::DoNotOptimize(sim.v().data());
    sim.setState(q, v, 0.0);
  }
}

// Position loops on every joint that takes them.
void BM_JointDrives(benchmark::State& state, const char* name) {
  const auto model = bundled(name);
  rt::JointDrives drives(*model, {{"*", rt::CommandInterface::kPosition, 100.0, 1.0, 0.0}}, 1e-3);
  const Eigen::VectorXd q = model->initialConfiguration();
  const Eigen::VectorXd v = Eigen::VectorXd::Constant(model->nv, 0.1);
  const Eigen::VectorXd reference = Eigen::VectorXd::Constant(model->nv, 0.2);
  Eigen::VectorXd tau(model->nv);
  for (auto _ : state) {
    drives.compute(q, v, {reference.data(), reference.data(), reference.data()}, tau);
    benchmark::DoNotOptimize(tau.data());
  }
}

// Every actuator effect on every joint.
void BM_ActuatorModels(benchmark::State& state, const char* name) {
  const auto model = bundled(name);
  rt::ActuatorModels actuators(*model, {{"*", 2e-4, 1e-3, 0.01, 0.03, 0.1}}, 1e-3 / 4);
  const Eigen::VectorXd q = model->initialConfiguration();
  const Eigen::VectorXd commanded = Eigen::VectorXd::Constant(model->nv, 1.5);
  Eigen::VectorXd delivered(model->nv);
  for (auto _ : state) {
    actuators.apply(q, commanded, delivered);
    benchmark::DoNotOptimize(delivered.data());
  }
}

// Noisy, biased, quantised encoders, velocities and torques on every joint, a delay, and on the
// quadruped its IMU with noise on every axis and its twelve contact forces.
void BM_SensorModels(benchmark::State& state, const char* name) {
  const auto model = bundled(name);
  rt::SensorsConfig config;
  config.joints = {{"*", 1e-5, 2e-5, 1e-5, 1e-3, 0.0, 0.2, 0.5}};
  config.delay_cycles = 2;
  config.imu.enabled = hasFloatingBase(*model);
  config.imu.orientation_noise = 1e-3;
  config.imu.angular_velocity_noise = 2e-3;
  config.imu.linear_acceleration_noise = 0.02;
  config.contact_force_noise = 1.0;
  rt::SensorModels sensors(*model, config, 1e-3);
  const Eigen::VectorXd q = model->initialConfiguration();
  const Eigen::VectorXd v = Eigen::VectorXd::Constant(model->nv, 0.1);
  const Eigen::VectorXd tau = Eigen::VectorXd::Constant(model->nv, 2.0);
  const int contacts = static_cast<int>(model->contact_spheres.size());
  const Eigen::VectorXd forces = Eigen::VectorXd::Constant(3 * std::max(contacts, 1), 10.0);
  for (auto _ : state) {
    const rt::SensorReadings& r = sensors.read(q.data(), v.data(), tau.data(), forces.data(),
                                               contacts);
    benchmark::DoNotOptimize(&r);
  }
}

// One control cycle of the fault injector: its hooks with no fault (`active` false), or with eight
// acting at once — drops and delays of commands and states (delay lines of 3 and 2 cycles), a
// frozen and an offset encoder, a brake, a cut on every drive — the physics-step hook once.
void BM_FaultInjection(benchmark::State& state, const char* name, bool active) {
  const auto model = bundled(name);
  const Eigen::VectorXd q = model->initialConfiguration();
  const Eigen::VectorXd v = Eigen::VectorXd::Constant(model->nv, 0.1);
  rt::FaultsConfig config;
  const auto fault = [](rt::FaultType type, std::string joint) {
    rt::FaultSpec f;
    f.type = type;
    f.start = 0.0;
    f.joint = std::move(joint);
    f.rate = 0.3;
    f.burst = 2;
    f.cycles = 3;
    f.value = 0.5;
    return f;
  };
  if (active) {
    const std::string& last = model->joint_names.back();  // a revolute joint on both models
    config.schedule = {fault(rt::FaultType::kDropCommands, ""),
                       fault(rt::FaultType::kDelayCommands, ""),
                       fault(rt::FaultType::kDropStates, ""),
                       fault(rt::FaultType::kDelayStates, ""),
                       fault(rt::FaultType::kFreezeSensor, "*"),
                       fault(rt::FaultType::kOffsetSensor, last),
                       fault(rt::FaultType::kLockJoint, last),
                       fault(rt::FaultType::kCutDrive, "*")};
  }
  rt::FaultInjector faults(*model, config, 1e-3, 1e-3, q);
  rt::Command command;
  command.nv = model->nv;
  rt::SensorReadings readings;
  Eigen::VectorXd tau = Eigen::VectorXd::Constant(model->nv, 1.5);
  const Eigen::VectorXd truth_tau = tau;
  const int contacts = static_cast<int>(model->contact_spheres.size());
  const Eigen::VectorXd forces = Eigen::VectorXd::Constant(3 * std::max(contacts, 1), 10.0);
  std::int64_t cycle = 0;
  for (auto _ : state) {
    faults.beginCycle(cycle, q);
    const rt::Command* taken = faults.idle() ? &command : faults.filterCommand(&command, cycle);
    bool withheld = !faults.idle() && faults.withholdState();
    if (faults.actsOnJoints()) faults.applyToJoints(q, v, tau);
    bool measured = false;
    if (faults.actsOnReadings()) {
      faults.applyToReadings(readings, measured, q.data(), v.data(), truth_tau.data(),
                             forces.data(), contacts);
    }
    benchmark::DoNotOptimize(taken);
    benchmark::DoNotOptimize(withheld);
    benchmark::DoNotOptimize(tau.data());
    benchmark::DoNotOptimize(&readings);
    ++cycle;
  }
}

BENCHMARK_CAPTURE(BM_Rk4Step, iiwa14, "iiwa14");
BENCHMARK_CAPTURE(BM_Rk4Step, quadruped, "quadruped");
BENCHMARK_CAPTURE(BM_JointDrives, iiwa14, "iiwa14");
BENCHMARK_CAPTURE(BM_JointDrives, quadruped, "quadruped");
BENCHMARK_CAPTURE(BM_ActuatorModels, iiwa14, "iiwa14");
BENCHMARK_CAPTURE(BM_ActuatorModels, quadruped, "quadruped");
BENCHMARK_CAPTURE(BM_SensorModels, iiwa14, "iiwa14");
BENCHMARK_CAPTURE(BM_SensorModels, quadruped, "quadruped");
BENCHMARK_CAPTURE(BM_FaultInjection, iiwa14_none, "iiwa14", false);
BENCHMARK_CAPTURE(BM_FaultInjection, quadruped_none, "quadruped", false);
BENCHMARK_CAPTURE(BM_FaultInjection, iiwa14_eight, "iiwa14", true);
BENCHMARK_CAPTURE(BM_FaultInjection, quadruped_eight, "quadruped", true);

}  // namespace

BENCHMARK_MAIN();
