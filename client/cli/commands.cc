#include "client/cli/commands.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <new>
#include <optional>
#include <sstream>

#include "client/cli/csv.h"
#include "client/cli/progress.h"
#include "client/cli/text.h"
#include "engine/algorithms/rnea.h"
#include "engine/constraints/constraint_row_stage.h"
#include "engine/formulations/formulations.h"
#include "engine/integrators/step_limit.h"
#include "engine/io/model_loader.h"
#include "rt/worker_pool.h"

namespace hilsim::cli {
namespace {

/// Checks that every quaternion in q (spherical and free joints) has a norm within
/// kQuaternionNormTol of 1 and renormalises it; `where` prefixes the error message.
void checkQuaternions(const Model& model, Eigen::VectorXd& q, const std::string& where,
                      const std::string& column_prefix) {
  for (int i = 1; i < model.nbodies; ++i) {
    int offset = -1;
    if (model.joints[i].type == JointType::kSpherical) offset = model.idx_q[i];
    if (model.joints[i].type == JointType::kFreeFlyer) offset = model.idx_q[i] + 3;
    if (offset < 0) continue;
    auto quaternion = q.segment<4>(offset);
    const double norm = quaternion.norm();
    if (!(std::abs(norm - 1.0) <= kQuaternionNormTol)) {
      char norm_text[32];
      std::snprintf(norm_text, sizeof(norm_text), "%.9g", norm);
      throw CliError(where + "quaternion of joint '" + model.joint_names[i] + "' (" +
                     column_prefix + std::to_string(offset + 1) + "-" +
                     std::to_string(offset + 4) + ") has norm " + norm_text +
                     ", expected 1 within " + formatNumber(kQuaternionNormTol));
    }
    quaternion /= norm;
  }
}

std::vector<std::string> prefixed(const std::string& prefix, const std::vector<std::string>& labels) {
  std::vector<std::string> out;
  out.reserve(labels.size());
  for (const auto& label : labels) out.push_back(prefix + label);
  return out;
}

/// Per-dof values of joint i: "x" when all equal, else "x/y/z".
std::string dofValues(const Model& model, const Eigen::VectorXd& values, int i) {
  const int start = model.idx_v[i];
  const int n = model.nv_joint[i];
  bool uniform = true;
  for (int k = 1; k < n; ++k) uniform = uniform && values[start + k] == values[start];
  if (n == 0) return "-";
  if (uniform) return readableNumber(values[start]);
  std::string out;
  for (int k = 0; k < n; ++k) {
    if (k > 0) out += "/";
    out += readableNumber(values[start + k]);
  }
  return out;
}

std::string jsonDofArray(const Model& model, const Eigen::VectorXd& values, int i) {
  std::string out = "[";
  for (int k = 0; k < model.nv_joint[i]; ++k) {
    if (k > 0) out += ", ";
    out += jsonNumber(values[model.idx_v[i] + k]);
  }
  return out + "]";
}

std::string jsonVector3(const Vector3& v) {
  // appended in place: GCC 12 warns (-Wrestrict, a false positive) on "[" + a temporary
  std::string out = "[";
  out += jsonNumber(v.x());
  out += ", ";
  out += jsonNumber(v.y());
  out += ", ";
  out += jsonNumber(v.z());
  return out + "]";
}

std::string range(int start, int count) {
  return std::to_string(start) + ":" + std::to_string(start + count);
}

std::string fixed(double value, int precision) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", precision, value);
  return buffer;
}

std::string general(double value, int precision = 10) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
  return buffer;
}

// The loops at the model's assembled start: the rank of the closure rows there, the mobility
// (nv minus that rank) and what the assembly left of C(q).
struct LoopSummary {
  int rank = 0;
  int mobility = 0;
  double residual = 0.0;
};

LoopSummary summariseLoops(const Model& model) {
  LoopSummary summary{0, model.nv, 0.0};
  if (model.nconstraints == 0) return summary;
  Data data(model, DataWorkspace::kPerBody);
  // assembly uses no M⁻¹; any row's operator will do: the default's
  ConstraintRowStage stage(model, formulations().front());
  Eigen::VectorXd q = model.initialConfiguration();
  Eigen::VectorXd v = Eigen::VectorXd::Zero(model.nv);
  summary.residual = stage.assemble(model, data, q, v);
  summary.rank = stage.rank();  // of J Jᵀ, from the velocity projection at the assembled q
  summary.mobility = model.nv - summary.rank;
  return summary;
}

std::string closureBodies(const Model& model, int body_a, int body_b) {
  return model.body_names[body_a] + " -> " + model.body_names[body_b];
}

void writeJsonInfo(const Model& model, const std::string& source, std::ostream& out) {
  std::string s = "{\n";
  s += "  \"name\": " + jsonString(model.name) + ",\n";
  if (!source.empty()) s += "  \"source\": " + jsonString(source) + ",\n";
  s += "  \"nq\": " + std::to_string(model.nq) + ",\n";
  s += "  \"nv\": " + std::to_string(model.nv) + ",\n";
  s += "  \"nbodies\": " + std::to_string(model.nbodies) + ",\n";
  s += "  \"nalgebraic\": " + std::to_string(model.nalgebraic) + ",\n";
  s += "  \"total_mass\": " + jsonNumber(model.totalMass()) + ",\n";
  // null when nothing bounds it or it is not computed (rk4StepLimit)
  const StepLimit limit = rk4StepLimit(model, model.initialConfiguration());
  s += "  \"rk4_max_dt\": " +
       (std::isfinite(limit.max_dt) ? jsonNumber(limit.max_dt) : std::string("null")) + ",\n";
  s += "  \"gravity\": " + jsonVector3(model.gravity) + ",\n";
  s += "  \"warnings\": [";
  for (std::size_t k = 0; k < model.load_warnings.size(); ++k) {
    s += (k == 0 ? "" : ", ") + jsonString(model.load_warnings[k]);
  }
  s += "],\n";
  s += "  \"joints\": [";
  for (int i = 1; i < model.nbodies; ++i) {
    s += i > 1 ? ",\n" : "\n";
    const int parent = model.parent[i];
    s += "    {\n";
    s += "      \"index\": " + std::to_string(i) + ",\n";
    s += "      \"name\": " + jsonString(model.joint_names[i]) + ",\n";
    s += "      \"type\": " + jsonString(jointTypeName(model.joints[i].type)) + ",\n";
    s += "      \"body\": " + jsonString(model.body_names[i]) + ",\n";
    s += "      \"parent\": " + jsonString(model.body_names[parent]) + ",\n";
    s += "      \"parent_index\": " + std::to_string(parent) + ",\n";
    s += "      \"q_index\": " + std::to_string(model.idx_q[i]) + ",\n";
    s += "      \"nq\": " + std::to_string(model.nq_joint[i]) + ",\n";
    s += "      \"v_index\": " + std::to_string(model.idx_v[i]) + ",\n";
    s += "      \"nv\": " + std::to_string(model.nv_joint[i]) + ",\n";
    s += "      \"axis\": " + jsonVector3(model.joints[i].axis) + ",\n";
    s += "      \"mass\": " + jsonNumber(model.inertias[i].mass) + ",\n";
    s += "      \"damping\": " + jsonDofArray(model, model.damping, i) + ",\n";
    s += "      \"armature\": " + jsonDofArray(model, model.armature, i) + ",\n";
    s += "      \"stiffness\": " + jsonDofArray(model, model.stiffness, i) + ",\n";
    s += "      \"spring_reference\": " + jsonDofArray(model, model.spring_reference, i) + ",\n";
    s += "      \"singular_inertia\": " +
         std::string(model.singular_inertia[i] ? "true" : "false") + ",\n";
    s += "      \"rank\": " + std::to_string(model.joint_rank[i]) + ",\n";
    s += "      \"lower_limit\": " + jsonDofArray(model, model.lower_limit, i) + ",\n";
    s += "      \"upper_limit\": " + jsonDofArray(model, model.upper_limit, i) + ",\n";
    s += "      \"velocity_limit\": " + jsonDofArray(model, model.velocity_limit, i) + ",\n";
    s += "      \"effort_limit\": " + jsonDofArray(model, model.effort_limit, i) + "\n";
    s += "    }";
  }
  s += model.nbodies > 1 ? "\n  ],\n" : "],\n";
  // flexible bodies: their modal coordinates follow their joint's in q and v
  s += "  \"flexible_bodies\": [";
  bool first_flexible = true;
  for (int i = 1; i < model.nbodies; ++i) {
    if (model.nmodes[i] == 0) continue;
    s += first_flexible ? "\n" : ",\n";
    first_flexible = false;
    const FlexibleBody& body = model.flexible[i];
    const Eigen::VectorXd frequencies = naturalFrequencies(body);
    s += "    {\"body\": " + jsonString(model.body_names[i]) +
         ", \"modes\": " + std::to_string(model.nmodes[i]) +
         ", \"q_index\": " + std::to_string(model.idxModesQ(i)) +
         ", \"v_index\": " + std::to_string(model.idxModesV(i)) + ", \"frequencies_hz\": [";
    for (int k = 0; k < frequencies.size(); ++k)
      s += (k > 0 ? ", " : "") + jsonNumber(frequencies[k] / (2.0 * M_PI));
    s += "], \"geometric_stiffening\": " + std::string(body.geometric_stiffening ? "true" : "false") +
         ", \"nodes\": [";
    for (std::size_t k = 0; k < body.nodes.size(); ++k)
      s += (k > 0 ? ", " : "") + jsonString(body.nodes[k].name);
    s += "]}";
  }
  s += first_flexible ? "],\n" : "\n  ],\n";
  const LoopSummary loops = summariseLoops(model);
  s += "  \"loops\": [";
  for (std::size_t k = 0; k < model.loops.size(); ++k) {
    const LoopClosure& c = model.loops[k];
    s += k > 0 ? ",\n" : "\n";
    s += "    {\"name\": " + jsonString(c.name) + ", \"type\": " +
         jsonString(closureTypeName(c.type)) + ", \"body_a\": " +
         jsonString(model.body_names[c.body_a]) + ", \"body_b\": " +
         jsonString(model.body_names[c.body_b]) + ", \"rows\": " +
         std::to_string(closureRows(c.type)) + "}";
  }
  s += model.loops.empty() ? "],\n" : "\n  ],\n";
  s += "  \"constraint_rows\": " + std::to_string(model.nconstraints) + ",\n";
  s += "  \"constraint_rank\": " + std::to_string(loops.rank) + ",\n";
  s += "  \"mobility\": " + std::to_string(loops.mobility) + ",\n";
  s += "  \"assembly_residual\": " + jsonNumber(loops.residual) + ",\n";
  s += "  \"force_elements\": [";
  for (std::size_t k = 0; k < model.force_elements.size(); ++k) {
    const SpringDamper& e = model.force_elements[k];
    s += k > 0 ? ",\n" : "\n";
    s += "    {\"name\": " + jsonString(e.name) + ", \"type\": \"spring_damper\", \"body_a\": " +
         jsonString(model.body_names[e.body_a]) + ", \"body_b\": " +
         jsonString(model.body_names[e.body_b]) + ", \"stiffness\": " + jsonNumber(e.stiffness) +
         ", \"damping\": " + jsonNumber(e.damping) +
         ", \"rest_length\": " + jsonNumber(e.rest_length) + "}";
  }
  s += model.force_elements.empty() ? "],\n" : "\n  ],\n";
  s += "  \"frames\": [";
  for (std::size_t f = 0; f < model.frames.size(); ++f) {
    const Frame& frame = model.frames[f];
    s += f > 0 ? ",\n" : "\n";
    s += "    {\"name\": " + jsonString(frame.name) + ", \"body\": " +
         jsonString(model.body_names[frame.body]) + "}";
  }
  s += model.frames.empty() ? "]\n" : "\n  ]\n";
  s += "}\n";
  out << s;
}

// Bodies without (full) inertia and the joints whose motion is not all inertial (docs/MASSLESS.md).
void writeTextMassless(const Model& model, std::ostream& out) {
  bool any_singular = false;
  for (int i = 1; i < model.nbodies; ++i) any_singular = any_singular || model.singular_inertia[i];
  if (!any_singular) return;
  out << "massless  bodies with singular inertia; rank = joint dofs with inertia behind them\n";
  for (int i = 1; i < model.nbodies; ++i) {
    if (!model.singular_inertia[i]) continue;
    out << "  " << model.body_names[i] << ": joint " << model.joint_names[i] << ", rank "
        << model.joint_rank[i] << " of " << model.nv_joint[i] << "\n";
  }
  out << "nalgebraic " << model.nalgebraic;
  if (model.nalgebraic > 0)
    out << "  (first-order joint equations: --solver aba --integrator imex_euler)";
  out << "\n";
}

// Loop closures and force elements (docs/LOOPS.md).
void writeTextLoops(const Model& model, std::ostream& out) {
  if (!model.loops.empty()) {
    const LoopSummary summary = summariseLoops(model);
    out << "loops     " << model.loops.size() << "  (" << model.nconstraints
        << " constraint rows, rank " << summary.rank << " at the assembled start: mobility "
        << summary.mobility << ")\n";
    for (const LoopClosure& c : model.loops)
      out << "  " << c.name << ": " << closureTypeName(c.type) << ", "
          << closureBodies(model, c.body_a, c.body_b) << ", " << closureRows(c.type) << " rows\n";
    out << "assembly  residual " << general(summary.residual, 2)
        << " (max |C(q)| in m or rad, from the model's initial configuration)\n";
  }
  if (model.force_elements.empty()) return;
  out << "forces    " << model.force_elements.size() << "\n";
  for (const SpringDamper& e : model.force_elements)
    out << "  " << e.name << ": spring_damper, " << closureBodies(model, e.body_a, e.body_b)
        << ", k " << readableNumber(e.stiffness) << " N/m, c " << readableNumber(e.damping)
        << " N s/m, rest length " << readableNumber(e.rest_length) << " m\n";
}

void writeTextInfo(const Model& model, const std::string& source, std::ostream& out) {
  out << "model     " << model.name << "\n";
  if (!source.empty()) out << "source    " << source << "\n";
  out << "nq        " << model.nq << "\n";
  out << "nv        " << model.nv << "\n";
  out << "nbodies   " << model.nbodies << " (world + " << model.nbodies - 1 << " moving)\n";
  out << "mass      " << readableNumber(model.totalMass()) << " kg\n";
  out << "gravity   " << readableNumber(model.gravity.x()) << " " << readableNumber(model.gravity.y())
      << " " << readableNumber(model.gravity.z()) << " m/s^2\n";
  out << "frames    " << model.frames.size() << "\n";
  for (const std::string& warning : model.load_warnings) out << "warning   " << warning << "\n";
  const StepLimit limit = rk4StepLimit(model, model.initialConfiguration());
  if (std::isfinite(limit.max_dt)) {
    out << "max step  " << readableNumber(limit.max_dt, 3) << " s with rk4 (joint "
        << model.joint_names[limit.joint] << ": damping or spring against inertia, at q0)\n";
  }
  out << "joints    " << model.nbodies - 1 << "  (q, v: index ranges start:end, end exclusive)\n";

  std::vector<std::vector<std::string>> table;
  table.push_back({"#", "joint", "type", "q", "v", "body", "parent", "mass", "damping",
                   "armature", "lower", "upper", "velocity", "effort"});
  for (int i = 1; i < model.nbodies; ++i) {
    table.push_back({std::to_string(i), model.joint_names[i],
                     std::string(jointTypeName(model.joints[i].type)),
                     range(model.idx_q[i], model.nq_joint[i]),
                     range(model.idx_v[i], model.nv_joint[i]), model.body_names[i],
                     model.body_names[model.parent[i]], readableNumber(model.inertias[i].mass),
                     dofValues(model, model.damping, i), dofValues(model, model.armature, i),
                     dofValues(model, model.lower_limit, i), dofValues(model, model.upper_limit, i),
                     dofValues(model, model.velocity_limit, i),
                     dofValues(model, model.effort_limit, i)});
  }
  std::vector<std::size_t> width(table.front().size(), 0);
  for (const auto& row : table) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : table) {
    std::string line = " ";
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += " " + row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size(), ' ');
    }
    out << line << "\n";
  }
  writeTextMassless(model, out);
  writeTextLoops(model, out);
  bool any_flexible = false;
  for (int i = 1; i < model.nbodies; ++i) any_flexible = any_flexible || model.nmodes[i] > 0;
  if (!any_flexible) return;
  out << "flexible bodies  (modal coordinates after their joint's; clamped natural frequencies)\n";
  for (int i = 1; i < model.nbodies; ++i) {
    if (model.nmodes[i] == 0) continue;
    const FlexibleBody& body = model.flexible[i];
    const Eigen::VectorXd frequencies = naturalFrequencies(body);
    std::string hz;
    for (int k = 0; k < frequencies.size(); ++k) {
      if (k > 0) hz += ' ';
      hz += readableNumber(frequencies[k] / (2.0 * M_PI));
    }
    out << "  " << model.body_names[i] << ": " << model.nmodes[i] << " modes, q "
        << range(model.idxModesQ(i), model.nmodes[i]) << ", v "
        << range(model.idxModesV(i), model.nmodes[i]) << ", " << hz << " Hz, stiffening "
        << (body.geometric_stiffening ? "on" : "off") << ", " << body.nodes.size() << " nodes\n";
  }
}

// Why a Simulator could not be built: the only large reservation is a formulation's nv × nv
// workspace, so name it and the formulations that do without.
std::string workspaceTooLarge(const Model& model, Formulation formulation) {
  const FormulationInfo& info = formulationInfo(formulation);
  if (!holds(info.workspace, DataWorkspace::kJointSpaceInertia)) return "out of memory";
  const double gigabytes = 2.0 * 8.0 * double(model.nv) * double(model.nv) / 1e9;
  std::string linear;
  int linear_count = 0;
  for (const FormulationInfo& f : formulations()) {
    if (holds(f.workspace, DataWorkspace::kJointSpaceInertia)) continue;
    linear += (linear.empty() ? "'" : ", '") + std::string(f.name) + "'";
    ++linear_count;
  }
  return "out of memory: formulation '" + std::string(info.name) + "' reserves two nv x nv " +
         "matrices (nv = " + std::to_string(model.nv) + ": " + general(gigabytes, 3) +
         " GB); " + linear + (linear_count == 1 ? " needs" : " need") + " O(n) memory";
}

}  // namespace

UrdfOptions urdfOptionsOrThrow(bool floating_base, const std::string& inertia,
                               const std::string& massless) {
  UrdfOptions options;
  options.floating_base = floating_base;
  if (!inertia.empty())
    if (const std::string why = parseInertiaPolicy(inertia, options); !why.empty())
      throw CliError("--inertia: " + why, 2);
  if (!massless.empty())
    if (const std::string why = parseMasslessPolicy(massless, options); !why.empty())
      throw CliError("--massless: " + why, 2);
  return options;
}

std::shared_ptr<const Model> loadModelOrThrow(const std::string& path_or_name,
                                              const UrdfOptions& options) {
  if (trim(path_or_name).empty()) throw CliError("--model is empty", 2);
  try {
    return std::make_shared<const Model>(loadModel(path_or_name, options));
  } catch (const ModelError& e) {
    throw CliError(oneLine(e.what()));
  } catch (const std::exception& e) {
    throw CliError("cannot load model '" + path_or_name + "': " + oneLine(e.what()));
  }
}

Formulation parseSolverOrThrow(const std::string& name) {
  if (const auto f = parseFormulation(name)) return *f;
  throw CliError("unknown solver '" + name + "' (expected " + formulationNames(", ", " or ") + ")",
                 2);
}

Integrator parseIntegratorOrThrow(const std::string& name) {
  if (const auto i = parseIntegrator(name)) return *i;
  throw CliError("unknown integrator '" + name + "' (expected euler, rk4 or imex_euler)", 2);
}

void writeModelInfo(const Model& model, bool json, std::ostream& out, const std::string& source) {
  if (json) {
    writeJsonInfo(model, source, out);
  } else {
    writeTextInfo(model, source, out);
  }
}

std::string modelSource(const std::string& path_or_name) {
  // as loadModel: a model file extension means a path, anything else may be a bundled name
  for (const char* extension : {".urdf", ".yaml", ".yml", ".URDF", ".YAML", ".YML"}) {
    if (path_or_name.ends_with(extension)) return path_or_name;
  }
  const std::string bundled = bundledModelPath(path_or_name);
  return bundled.empty() ? path_or_name : bundled;
}

void writeBundledModels(std::ostream& out) {
  const std::string default_name = defaultModelName();
  std::size_t width = 0;
  for (const auto& name : bundledModelNames()) width = std::max(width, name.size());
  for (const auto& name : bundledModelNames()) {
    const std::string path = bundledModelPath(name);
    out << name << std::string(width - name.size() + 2, ' ')
        << (path.empty() ? std::string("(not found)") : path)
        << (name == default_name ? "  (default)" : "") << "\n";
  }
}

int evalCsv(const Model& model, Formulation formulation, bool inverse,
            const std::string& input_path, const std::string& output_path) {
  const auto q_labels = coordinateLabels(model, false);
  const auto v_labels = coordinateLabels(model, true);
  const std::string in_prefix = inverse ? "qdd_" : "tau_";
  const std::string out_prefix = inverse ? "tau_" : "qdd_";
  std::vector<std::string> labels = prefixed("q_", q_labels);
  for (const auto& l : prefixed("v_", v_labels)) labels.push_back(l);
  for (const auto& l : prefixed(in_prefix, v_labels)) labels.push_back(l);

  if (!inverse) {
    if (const std::string why = checkFormulation(model, formulation); !why.empty())
      throw CliError(why, 2);
  } else if (model.nconstraints > 0) {
    throw CliError("model '" + model.name +
                       "' has loop closures: a q̈ does not determine its joint forces (the "
                       "closures carry part of the load); evaluate forward dynamics instead",
                   2);
  }
  const NumericTable table = readNumericCsv(input_path, labels);

  const int nq = model.nq;
  const int nv = model.nv;
  // inverse dynamics (rnea) needs the per-body buffers only
  Data data(model, inverse ? DataWorkspace::kPerBody : formulationInfo(formulation).workspace);
  // loops, force elements, limits, friction, contact: the constrained q̈ (docs/LOOPS.md,
  // docs/CONTACT.md)
  std::optional<ConstraintRowStage> stage;
  if (!inverse && model.needsConstraintStage())
    stage.emplace(model, formulationInfo(formulation));
  Eigen::VectorXd q(nq), v(nv), x(nv);
  std::string text;
  appendCsvHeader(text, out_prefix, v_labels);
  for (int r = 0; r < table.rows(); ++r) {
    const double* row = table.row(r);
    q = Eigen::Map<const Eigen::VectorXd>(row, nq);
    v = Eigen::Map<const Eigen::VectorXd>(row + nq, nv);
    x = Eigen::Map<const Eigen::VectorXd>(row + nq + nv, nv);
    const std::string where = input_path + ":" + std::to_string(table.line_numbers[r]) + ": ";
    checkQuaternions(model, q, where, "columns ");
    const Eigen::VectorXd& result =
        inverse ? rnea(model, data, q, v, x) : forwardDynamics(formulation, model, data, q, v, x);
    if (stage) stage->accelerations(model, data, q, v, x, data.qdd);
    if (!result.allFinite()) {
      throw CliError(where + (inverse ? "inverse" : "forward") +
                     " dynamics gave a non-finite result (singular mass matrix?)");
    }
    appendCsvRow(text, result.data(), nv);
  }

  OutputFile output(output_path);
  output.write(text);
  output.close();
  return table.rows();
}

double SimulateSummary::relativeEnergyDrift() const {
  if (std::abs(initial_energy) < 1e-12) return std::nan("");
  return (final_energy - initial_energy) / std::abs(initial_energy);
}

Eigen::VectorXd parseVectorOption(const std::string& text, int expected,
                                  const std::string& option_name) {
  std::vector<double> values;
  std::size_t start = 0;
  int index = 0;
  while (true) {
    std::size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string_view field = std::string_view(text).substr(start, end - start);
    ++index;
    const auto value = parseNumber(field);
    if (!value) {
      throw CliError(option_name + ": value " + std::to_string(index) + " is not a number: '" +
                         std::string(trim(field)) + "'",
                     2);
    }
    if (!std::isfinite(*value)) {
      throw CliError(option_name + ": value " + std::to_string(index) + " is not finite", 2);
    }
    values.push_back(*value);
    if (end == text.size()) break;
    start = end + 1;
  }
  if (static_cast<int>(values.size()) != expected) {
    throw CliError(option_name + ": expected " + std::to_string(expected) + " comma-separated values, got " +
                       std::to_string(values.size()),
                   2);
  }
  return Eigen::Map<const Eigen::VectorXd>(values.data(), expected);
}

SimulateSummary simulate(std::shared_ptr<const Model> model_ptr, const SimulateOptions& options) {
  using Clock = std::chrono::steady_clock;
  const Model& model = *model_ptr;
  if (!std::isfinite(options.dt) || options.dt <= 0.0) {
    throw CliError("--dt must be a finite number > 0, got " + formatNumber(options.dt), 2);
  }
  if (!std::isfinite(options.duration) || options.duration < 0.0) {
    throw CliError("--duration must be a finite number >= 0, got " + formatNumber(options.duration),
                   2);
  }
  const double step_count = std::round(options.duration / options.dt);
  constexpr double kMaxSteps = 1e12;
  if (step_count > kMaxSteps) {
    throw CliError("--duration / --dt gives " + general(step_count, 3) + " steps (at most " +
                       general(kMaxSteps, 3) + ")",
                   2);
  }

  Eigen::VectorXd q = model.initialConfiguration();
  Eigen::VectorXd v = Eigen::VectorXd::Zero(model.nv);
  Eigen::VectorXd tau = Eigen::VectorXd::Zero(model.nv);
  if (!options.tau.empty()) tau = parseVectorOption(options.tau, model.nv, "--tau");
  if (!options.q0.empty()) {
    q = parseVectorOption(options.q0, model.nq, "--q0");
    try {
      checkQuaternions(model, q, "--q0: ", "values ");
    } catch (const CliError& e) {
      throw CliError(e.what(), 2);
    }
  }
  if (!options.v0.empty()) v = parseVectorOption(options.v0, model.nv, "--v0");

  if (const std::string why = checkSimulatorChoice(model, options.formulation, options.integrator);
      !why.empty())
    throw CliError(why, 2);
  if (options.integrator == Integrator::kRk4) {
    // a step the joint springs and dampers make unstable diverges within steps: say which works
    const StepLimit limit = rk4StepLimit(model, q);
    if (options.dt > limit.max_dt) {
      throw CliError("--dt " + general(options.dt) + " s is above the largest step RK4 is stable at on '" +
                         model.name + "' (" + general(limit.max_dt, 3) + " s, set by joint '" +
                         (limit.joint > 0 ? model.joint_names[limit.joint] : std::string("?")) +
                         "': its damping or spring against its inertia): use --dt " +
                         general(roundStepBelow(limit.max_dt), 3) + " or less",
                     2);
    }
  }
  std::optional<Simulator> constructed;
  try {
    constructed.emplace(model_ptr, options.formulation, options.integrator, options.dt);
  } catch (const std::bad_alloc&) {
    throw CliError(workspaceTooLarge(model, options.formulation), 1);
  }
  Simulator& sim = *constructed;
  // a parallel formulation's threads, created once for the run
  std::optional<rt::WorkerPool> pool;
  if (options.threads > 1) {
    if (const std::string why = checkThreads(options.formulation, options.threads); !why.empty())
      throw CliError("--threads " + std::to_string(options.threads) + ": " + why, 2);
    pool.emplace(options.threads);
    sim.setExecutor(&*pool);
  }
  sim.setState(q, v);  // with loops: assembled onto the constraint manifold

  SimulateSummary summary;
  summary.steps = static_cast<long long>(step_count);
  summary.initial_energy = sim.energy();

  const auto wall_start = Clock::now();
  std::unique_ptr<OutputFile> output;
  std::string buffer;
  Eigen::VectorXd row(1 + model.nq + model.nv + 1);
  long long step_index = 0;
  auto appendState = [&]() {
    row[0] = static_cast<double>(step_index) * options.dt;  // exact multiples, not a running sum
    row.segment(1, model.nq) = sim.q();
    row.segment(1 + model.nq, model.nv) = sim.v();
    row[row.size() - 1] = sim.energy();
    appendCsvRow(buffer, row.data(), static_cast<int>(row.size()));
    ++summary.rows_written;
    if (buffer.size() > (1u << 20)) {
      output->write(buffer);
      buffer.clear();
    }
  };
  if (!options.output.empty()) {
    output = std::make_unique<OutputFile>(options.output);
    buffer = "t,";
    std::string header;
    appendCsvHeader(header, "q_", coordinateLabels(model, false));
    header.pop_back();
    buffer += header + ",";
    header.clear();
    appendCsvHeader(header, "v_", coordinateLabels(model, true));
    header.pop_back();
    buffer += header + ",energy\n";
    appendState();
  }

  Clock::duration stepping{};
  Progress progress("simulate", static_cast<double>(summary.steps) * options.dt, "s simulated");
  for (long long k = 0; k < summary.steps; ++k) {
    if ((k & 1023) == 0) progress.update(static_cast<double>(k) * options.dt);
    step_index = k + 1;
    const auto t0 = Clock::now();
    sim.step(tau);
    stepping += Clock::now() - t0;
    const bool failed = sim.constraintFailure().kind != ConstraintFailure::Kind::kNone;
    if (failed || !sim.q().allFinite() || !sim.v().allFinite()) {
      std::string kept;
      if (output) {
        // the rows so far (where the motion went wrong), not an empty file
        output->write(buffer);
        output->close();
        kept = "; the " + std::to_string(summary.rows_written) + " rows before it are in " +
               options.output;
      }
      const std::string at =
          " at step " + std::to_string(k + 1) + " (t = " + general(sim.time()) + " s): ";
      if (failed) {
        throw CliError("simulation stopped" + at +
                       describeConstraintFailure(model, sim.constraintFailure()) + kept);
      }
      throw CliError("simulation diverged" + at + "non-finite state; try a smaller --dt" + kept);
    }
    if (output) appendState();
  }
  if (output) {
    output->write(buffer);
    output->close();
  }
  summary.wall_time = std::chrono::duration<double>(Clock::now() - wall_start).count();
  summary.step_time = std::chrono::duration<double>(stepping).count();
  summary.simulated_time = static_cast<double>(summary.steps) * options.dt;
  summary.final_energy = sim.energy();
  summary.applied_work = sim.appliedWork();
  summary.dissipated_energy = sim.dissipatedEnergy();
  summary.q = sim.q();
  summary.v = sim.v();
  return summary;
}

void writeSimulateSummary(const Model& model, const SimulateOptions& options,
                          const SimulateSummary& summary, std::ostream& out) {
  std::ostringstream s;
  s << "model            " << model.name << " (nq " << model.nq << ", nv " << model.nv << ", "
    << model.nbodies << " bodies)\n";
  s << "solver           " << formulationName(options.formulation);
  if (options.threads > 1) s << " (" << options.threads << " threads)";
  s << "\n";
  s << "integrator       " << integratorName(options.integrator) << "\n";
  s << "dt               " << general(options.dt) << " s\n";
  s << "steps            " << summary.steps << " (" << general(summary.simulated_time)
    << " s simulated)\n";
  s << "wall time        " << fixed(summary.wall_time, 6) << " s\n";
  s << "step time        " << fixed(summary.step_time, 6) << " s, mean "
    << fixed(summary.meanStepNs(), 0) << " ns per step\n";
  s << "realtime factor  " << (summary.step_time > 0 ? fixed(summary.realtimeFactor(), 1) : "-")
    << "\n";
  const double drift = summary.relativeEnergyDrift();
  s << "energy           initial " << general(summary.initial_energy) << " J, final "
    << general(summary.final_energy) << " J, relative drift "
    << (std::isnan(drift) ? std::string("n/a") : general(drift, 3)) << "\n";
  // what changed it: E − E₀ = W − D, up to what the integration (and a loop's projection) did
  const double change = summary.final_energy - summary.initial_energy;
  const double unaccounted = change - (summary.applied_work - summary.dissipated_energy);
  s << "energy balance   applied forces did " << general(summary.applied_work, 6)
    << " J of work, dampers took out " << general(summary.dissipated_energy, 6)
    << " J; the integration changed it by " << general(unaccounted, 3) << " J more\n";
  s << "final state      |q| " << general(summary.q.norm(), 6) << ", |v| "
    << general(summary.v.norm(), 6) << "\n";
  if (!options.output.empty()) {
    s << "trajectory       " << options.output << " (" << summary.rows_written << " rows)\n";
  }
  out << s.str();
}

}  // namespace hilsim::cli
