#include "engine/formulations/formulations.h"

#include <array>
#include <cassert>

#include "engine/algorithms/aba.h"
#include "engine/algorithms/aba_delassus.h"
#include "engine/algorithms/aba_inverse_inertia.h"
#include "engine/algorithms/crba_forward_dynamics.h"
#include "engine/algorithms/hdca.h"
#include "engine/algorithms/hdca_loops.h"
#include "engine/algorithms/riccati_transfer.h"
#include "engine/algorithms/semi_recursive.h"
#include "engine/algorithms/tree_ldl.h"

namespace hilsim {

namespace {

// aba's entry point without its optional external forces.
const Eigen::VectorXd& abaForwardDynamics(const Model& model, Data& data, const Eigen::VectorXd& q,
                                          const Eigen::VectorXd& v, const Eigen::VectorXd& tau) {
  return aba(model, data, q, v, tau);
}

const Eigen::VectorXd& crbaLdlForwardDynamics(const Model& model, Data& data,
                                              const Eigen::VectorXd& q, const Eigen::VectorXd& v,
                                              const Eigen::VectorXd& tau) {
  return crbaForwardDynamics(model, data, q, v, tau);
}

// M⁻¹ X from the tree LᵀDL factor crbaForwardDynamics leaves in data.M_factor.
void crbaLdlInverseInertia(const Model& model, Data& data, Eigen::Ref<Eigen::MatrixXd> X) {
  treeLdlSolve(model, data.M_factor, X);
}

// The table. Rows in enum order (formulationInfo indexes it), the default first.
constexpr std::array kFormulations = {
    FormulationInfo{
        Formulation::kAba,
        "aba",
        "articulated-body recursion, O(n); pseudo-inverses at massless joints",
        "Jain, Rodriguez, \"Recursive Dynamics for Flexible Multibody Systems Using Spatial "
        "Operators\" (JPL 90-26, 1990) §6-7; Featherstone, \"Rigid Body Dynamics Algorithms\" "
        "(2008) §7.3; massless joints: Arnold, \"A recursive multibody formalism for systems "
        "with small mass and inertia terms\" (2013)",
        {.massless = true, .flexible = true, .closed_loops = true, .parallel = false},
        DataWorkspace::kPerBody,
        abaForwardDynamics,
        abaInverseInertia,
        abaDelassus,
        abaDelassusResponse,
        /*leaves_body_accelerations=*/true,
        /*delassus_reads_jacobian=*/false,
    },
    FormulationInfo{
        Formulation::kCrba,
        "crba",
        "composite-body mass matrix and bias forces, tree-sparse LᵀDL solve; O(n²) memory",
        "Featherstone, \"Rigid Body Dynamics Algorithms\" (2008) §6.2, §6.3 (CRBA, LTDL); "
        "flexible: Jain, Rodriguez (JPL 90-26, 1990) §5",
        {.massless = false, .flexible = true, .closed_loops = true, .parallel = false},
        DataWorkspace::kJointSpaceInertia,
        crbaLdlForwardDynamics,
        crbaLdlInverseInertia,
        treeLdlDelassus,
        treeLdlDelassusResponse,
        /*leaves_body_accelerations=*/false,
        /*delassus_reads_jacobian=*/false,
    },
    FormulationInfo{
        Formulation::kRtmm,
        "rtmm",
        "Riccati transfer matrix method: tip-to-root Riccati recursion of the connection "
        "points' transfer equations, O(n); rigid trees",
        "Rui, Bestle, Wang, Zhang, Rui, He, \"A new version of the Riccati transfer matrix "
        "method for multibody systems consisting of chain and branch bodies\", Multibody "
        "System Dynamics 49 (2020) 337-354",
        {.massless = false, .flexible = false, .closed_loops = false, .parallel = false},
        DataWorkspace::kPerBody,
        riccatiTransferForwardDynamics,
        nullptr,
        nullptr,
        nullptr,
    },
    // The semi-recursive rows factor M̄ as crba factors M (the tree LᵀDL in data.M_factor): the
    // stage's operators on that factor solve the paper's augmented system (eq. 61) by elimination
    FormulationInfo{
        Formulation::kSr1,
        "sr1",
        "semi-recursive I: joint coordinates, velocity transformation to each body's reference "
        "point, accumulated M̄ and Q̄, tree LᵀDL solve; rigid",
        "Yu, Mikkola, Pan, Escalona, \"The explanation of two semi-recursive multibody methods "
        "for educational purpose\" §3, §6.2, §7; accumulated as de Jalón et al. (2005)",
        {.massless = false, .flexible = false, .closed_loops = true, .parallel = false},
        DataWorkspace::kJointSpaceInertia,
        semiRecursiveReferencePoints,
        crbaLdlInverseInertia,
        treeLdlDelassus,
        treeLdlDelassusResponse,
        /*leaves_body_accelerations=*/false,
        /*delassus_reads_jacobian=*/false,
    },
    FormulationInfo{
        Formulation::kSr2,
        "sr2",
        "semi-recursive II: joint coordinates, path matrix to intermediate frames at the global "
        "origin, accumulated M̿ and Q̿, tree LᵀDL solve; rigid",
        "Yu, Mikkola, Pan, Escalona, \"The explanation of two semi-recursive multibody methods "
        "for educational purpose\" §4, §6.3, §7; accumulated as de Jalón et al. (2005)",
        {.massless = false, .flexible = false, .closed_loops = true, .parallel = false},
        DataWorkspace::kJointSpaceInertia,
        semiRecursiveGlobalOrigin,
        crbaLdlInverseInertia,
        treeLdlDelassus,
        treeLdlDelassusResponse,
        /*leaves_body_accelerations=*/false,
        /*delassus_reads_jacobian=*/false,
    },
    // hdca's acceleration entry is phase 1 on τ − C (the constraint stage and the Euler steps);
    // its own state (q, p) runs through momenta and momentum_rates, its loops' (q, P) through
    // momentum_loops
    FormulationInfo{
        Formulation::kHdca,
        "hdca",
        "Hamiltonian divide-and-conquer: canonical momenta as state, binary assembly tree of "
        "two-handle mobility equations, its levels in parallel; rigid bodies of regular inertia",
        "Chadaj, Malczyk, Fraczek, \"A parallel Hamiltonian formulation for forward dynamics of "
        "closed-loop multibody systems\", Multibody System Dynamics 39 (2017) 51-77",
        {.massless = false,
         .flexible = false,
         .closed_loops = true,
         .parallel = true,
         .singular_bodies = false},
        DataWorkspace::kDivideAndConquer,
        hdcaForwardDynamics,
        hdcaInverseInertia,
        nullptr,
        nullptr,
        /*leaves_body_accelerations=*/false,
        /*delassus_reads_jacobian=*/true,
        hdcaMomenta,
        hdcaMomentumRates,
        makeHdcaLoops,
    },
};

// Every row must sit at its enum's index.
constexpr bool tableInEnumOrder() {
  for (std::size_t k = 0; k < kFormulations.size(); ++k)
    if (static_cast<std::size_t>(kFormulations[k].id) != k) return false;
  return true;
}
static_assert(tableInEnumOrder(), "kFormulations rows must follow the Formulation enum");

}  // namespace

std::span<const FormulationInfo> formulations() { return kFormulations; }

const FormulationInfo& formulationInfo(Formulation formulation) {
  const auto index = static_cast<std::size_t>(formulation);
  assert(index < kFormulations.size());
  return kFormulations[index];
}

std::optional<Formulation> parseFormulation(std::string_view name) {
  for (const FormulationInfo& f : kFormulations)
    if (f.name == name) return f.id;
  return std::nullopt;
}

std::string_view formulationName(Formulation formulation) {
  return formulationInfo(formulation).name;
}

std::string formulationNames(std::string_view separator, std::string_view last_separator) {
  std::string out;
  for (std::size_t k = 0; k < kFormulations.size(); ++k) {
    if (k > 0) out += k + 1 == kFormulations.size() ? last_separator : separator;
    out += kFormulations[k].name;
  }
  return out;
}

std::string checkThreads(Formulation formulation, int threads) {
  if (threads <= 1 || formulationInfo(formulation).capabilities.parallel) return {};
  std::string parallel;
  for (const FormulationInfo& f : kFormulations)
    if (f.capabilities.parallel) parallel += (parallel.empty() ? "'" : ", '") + std::string(f.name) + "'";
  return "formulation '" + std::string(formulationName(formulation)) +
         "' runs on one thread (parallel: " + parallel + ")";
}

std::string checkFormulation(const Model& model, Formulation formulation) {
  const FormulationInfo& info = formulationInfo(formulation);
  // the formulations that have what `needed` selects, for the message
  const auto those = [](bool FormulationCapabilities::*needed) {
    std::string names;
    for (const FormulationInfo& f : kFormulations) {
      if (!(f.capabilities.*needed)) continue;
      names += (names.empty() ? "'" : ", '") + std::string(f.name) + "'";
    }
    return names.empty() ? std::string("none yet") : names;
  };
  if (model.nalgebraic > 0 && !info.capabilities.massless) {
    std::string joint;
    for (int i = 1; i < model.nbodies && joint.empty(); ++i)
      if (model.idx_algebraic[i] >= 0) joint = model.joint_names[i];
    return "model '" + model.name + "' has massless joint motion (joint '" + joint +
           "'): its mass matrix is singular, so it needs formulation " + those(&FormulationCapabilities::massless) +
           ", not '" + std::string(info.name) + "'";
  }
  if (model.needsConstraintStage() && (!info.capabilities.closed_loops || !info.inverse_inertia)) {
    // what needs the constraint stage, the first thing found
    std::string what = "loop closures or force elements";
    if (!model.hasClosures()) {
      what = "contact spheres on the ground";
      for (int d = 0; d < model.nv; ++d) {
        if (model.friction[d] > 0.0) what = "joint friction";
        if (model.limitEnforced(d)) {
          what = "enforced joint limits (set 'limits: data' to keep them as data only)";
          break;
        }
      }
    }
    return "model '" + model.name + "' has " + what + ": formulation '" +
           std::string(info.name) + "' has no constraint stage to run them (use " +
           those(&FormulationCapabilities::closed_loops) + ")";
  }
  if (model.has_flexible_bodies && !info.capabilities.flexible)
    return "model '" + model.name + "' has flexible bodies: formulation '" +
           std::string(info.name) + "' cannot run them (use " +
           those(&FormulationCapabilities::flexible) + ")";
  if (!info.capabilities.singular_bodies && model.nalgebraic == 0) {
    for (int i = 1; i < model.nbodies; ++i) {
      if (!model.singular_inertia[i]) continue;
      return "model '" + model.name + "' has body '" + model.body_names[i] +
             "' whose spatial inertia is singular (a point mass or a massless link): formulation '" +
             std::string(info.name) + "' needs every body's inertia invertible (use " +
             those(&FormulationCapabilities::singular_bodies) + ")";
    }
  }
  return {};
}

}  // namespace hilsim
