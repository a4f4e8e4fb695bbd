// The test matrix: every formulation of the registry (engine/formulations/formulations.h) × every
// integrator × the model families. Suites loop over these instead of naming formulations, so a
// formulation added to the registry is tested everywhere.
#pragma once

#include <string>
#include <vector>

#include "engine/formulations/formulations.h"
#include "engine/integrators/simulator.h"

namespace hilsim::test {

/// Every formulation, in registry order.
inline std::vector<Formulation> allFormulations() {
  std::vector<Formulation> out;
  for (const FormulationInfo& f : formulations()) out.push_back(f.id);
  return out;
}

/// The formulations that can run `model` (checkFormulation is empty).
inline std::vector<Formulation> formulationsFor(const Model& model) {
  std::vector<Formulation> out;
  for (const FormulationInfo& f : formulations())
    if (checkFormulation(model, f.id).empty()) out.push_back(f.id);
  return out;
}

/// Every integrator.
inline std::vector<Integrator> allIntegrators() {
  return std::vector<Integrator>(integrators().begin(), integrators().end());
}

/// A Data that holds exactly what `formulation` asks of its registry row: running the
/// formulation on it shows that the row declares everything it uses.
inline Data dataFor(const Model& model, Formulation formulation) {
  return Data(model, formulationInfo(formulation).workspace);
}

}  // namespace hilsim::test
