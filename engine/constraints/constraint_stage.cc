#include "engine/constraints/constraint_stage.h"

#include <cstdio>

#include "engine/model/model.h"

namespace hilsim {

namespace {

// A rotation row (rad) or a point row (m), in the order of docs/LOOPS.md, "Closure types"
bool rowIsAngular(ClosureType type, int row) {
  switch (type) {
    case ClosureType::kRevolute: return row >= 3;
    case ClosureType::kPrismatic: return row < 3;
    case ClosureType::kWeld: return row >= 3;
    case ClosureType::kBall:
    case ClosureType::kDistance: return false;
  }
  return false;
}

}  // namespace

std::string describeConstraintFailure(const Model& model, const ConstraintFailure& failure) {
  if (failure.kind == ConstraintFailure::Kind::kNone) return {};
  std::string closure = "closure " + std::to_string(failure.closure);
  const char* unit = "m";
  if (failure.closure >= 0 && failure.closure < static_cast<int>(model.loops.size())) {
    const LoopClosure& loop = model.loops[failure.closure];
    closure = "closure '" + loop.name + "' (" + std::string(closureTypeName(loop.type)) + ")";
    if (rowIsAngular(loop.type, failure.row)) unit = "rad";
  }
  char text[600];
  std::snprintf(text, sizeof text,
                "%s stayed open by %.3g %s after the step's projection (more than %.3g; the step "
                "had opened the loops by %.3g), with closure forces up to %.3g and the rows of "
                "rank %d (%d where the motion started): the fixed step cannot follow the motion at "
                "or near a singular configuration of the loops; keep the mechanism away from it "
                "(joint limits, smaller forces) or take a smaller step",
                closure.c_str(), failure.error, unit, failure.limit, failure.drift, failure.force,
                failure.rank, failure.nominal_rank);
  return text;
}

}  // namespace hilsim
