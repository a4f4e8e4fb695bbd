// Loading models from files: URDF, MJCF and the native YAML format (docs/MODEL_FORMAT.md).
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model.h"

namespace hilsim {

/// Bounds on the work one model text may ask of a loader. Model text is outside input (a file, or
/// a client's CreateSession): each bound is checked before the allocation or the computation it
/// guards, and exceeding one is a ModelError naming the limit. The defaults suit files on disk
/// (10⁵-body chains load); hilsim-server passes tighter ones from its `limits` (docs/SERVER.md).
/// Documented in docs/MODEL_FORMAT.md ("Limits").
struct ModelLimits {
  /// Bytes of one model file or text. The YAML reader holds two more counts to this bound, each
  /// on its own: the bytes it parses (the text and its included files) and the bytes of the
  /// scalars it reads (each use of an alias again).
  std::size_t max_text_bytes = std::size_t{256} << 20;
  int max_bodies = 200'000;          ///< links (URDF) or bodies (YAML), welded ones included
  int max_modes = 64;                ///< assumed modes of one flexible body
  int max_beam_elements = 1000;      ///< finite elements of one generated beam
  int max_flexible_entries = 4096;   ///< lumped masses or nodes of one flexible body
  /// Degrees of freedom of the whole model (nv: joint DoFs plus modes), checked before the model
  /// is built (the YAML reader: before each body's flexible data is read or generated, so it
  /// bounds how many flexible bodies a model can ask for). No bound of its own by default;
  /// hilsim-server passes 128.
  int max_dofs = std::numeric_limits<int>::max();
  /// Constraint rows of the loops (Σ rows of each closure type), checked before each loop is
  /// added: the constraint stage holds m × m matrices and factorises one per evaluation (O(m³)),
  /// and assembly does so up to 100 times at load. hilsim-server passes 256.
  int max_constraint_rows = 4096;
  /// YAML: a `urdf` or `flexible.file` must be a relative path that stays inside the base
  /// directory (none at all when it is empty), so that a text never makes its reader open other
  /// files (hilsim-server: its model directory).
  bool files_inside_base_directory = false;
};

/// Loads a model from `path_or_name`: a path to a .urdf, .sdf, .xml/.mjcf (MJCF) or .yaml/.yml
/// file, or the name of a bundled model (see bundledModelNames()). Throws ModelError with one
/// clear line naming the file
/// and element on any problem (missing file, parse error, invalid inertia, unknown parent, cycle,
/// duplicate name, NaN/Inf, unsupported joint type, a limit exceeded, ...). Never crashes, leaks
/// or writes to stderr on bad input.
Model loadModel(const std::string& path_or_name, const ModelLimits& limits = {});

/// What a URDF link's inertia may be (docs/MODEL_FORMAT.md, "Inertia policy"). Vendor files
/// often give principal moments that break the triangle inequality by a few percent; the dynamics
/// are defined all the same while the inertia is positive (semi-)definite.
enum class InertiaPolicy {
  kAsGiven,  ///< loaded as written, one Model::load_warnings line per such link (the default)
  kBalance,  ///< the two smaller principal moments raised until they keep it (Inertia::balanced),
             ///< one warning line per link saying by how much
  kStrict,   ///< refused, naming the link (the rigid-body condition)
};

/// "as_given", "balance", "strict".
const char* inertiaPolicyName(InertiaPolicy policy);

/// What becomes of a moving joint whose motion a URDF leaves without inertia: a gripper's finger
/// links without <inertial> (docs/MODEL_FORMAT.md, "Massless links"). Such motion is undetermined,
/// so by default the model is refused with the options named.
enum class MasslessPolicy {
  kRefuse,    ///< refused, naming the joint and these options (the default)
  kWeld,      ///< a moving joint whose child link and everything beyond it have no mass becomes
              ///< fixed (its links stay frames); one Model::load_warnings line per joint
  kArmature,  ///< UrdfOptions::massless_armature added to each joint left without inertia
};

/// "refuse", "weld", "armature".
const char* masslessPolicyName(MasslessPolicy policy);

/// How a URDF is read beyond its own text.
struct UrdfOptions {
  bool floating_base = false;  ///< a free joint between the world and the root link
  InertiaPolicy inertia = InertiaPolicy::kAsGiven;
  MasslessPolicy massless = MasslessPolicy::kRefuse;
  double massless_armature = 0.0;  ///< [kg·m² or kg] with kArmature: finite, > 0

  /// True when any option differs from the defaults.
  bool any() const;
};

/// Reads the text form of the options shared by the CLI and the YAML wrapper: an inertia policy
/// ("as_given", "balance", "strict") or a massless policy ("refuse", "weld", "armature=<value>").
/// Return the error ("" when `text` is valid), naming what is accepted.
std::string parseInertiaPolicy(std::string_view text, UrdfOptions& options);
std::string parseMasslessPolicy(std::string_view text, UrdfOptions& options);

/// loadModel with URDF options (a free joint at the root, the inertia policy) for a URDF file or a
/// bundled URDF; a YAML model sets them in its wrapper, and is refused with options beside it.
Model loadModel(const std::string& path_or_name, const UrdfOptions& options,
                const ModelLimits& limits = {});

/// Loads a URDF file. `floating_base` puts a free joint between the world and the root link.
Model loadUrdf(const std::string& path, bool floating_base = false,
               const ModelLimits& limits = {});
Model loadUrdf(const std::string& path, const UrdfOptions& options,
               const ModelLimits& limits = {});

/// Parses URDF text; `source_name` is used in error messages.
Model loadUrdfString(const std::string& urdf_xml, bool floating_base = false,
                     const std::string& source_name = "<string>",
                     const ModelLimits& limits = {});
Model loadUrdfString(const std::string& urdf_xml, const UrdfOptions& options,
                     const std::string& source_name = "<string>",
                     const ModelLimits& limits = {});

/// Loads an SDFormat file (.sdf: one <model>, or a <world> with one robot model) through
/// libsdformat; docs/MODEL_FORMAT.md, "SDFormat". `options` as for URDF: floating_base gives a
/// model the file welds to the world (a `fixed` joint to `world`, or <static>) a free joint
/// instead; the inertia policy applies to every moving body. <include> resolves relative paths in
/// the file's directory only. Joint graphs that are not trees become a spanning tree and loop
/// closures.
Model loadSdf(const std::string& path, const UrdfOptions& options = {},
              const ModelLimits& limits = {});

/// Parses SDFormat text; `source_name` is used in error messages. Never reads a file: <include>
/// is refused.
Model loadSdfString(const std::string& xml, const UrdfOptions& options = {},
                    const std::string& source_name = "<string>",
                    const ModelLimits& limits = {});

/// Loads a native YAML model file.
Model loadYaml(const std::string& path, const ModelLimits& limits = {});

/// Parses YAML text; relative paths inside it resolve against `base_directory`.
Model loadYamlString(const std::string& yaml_text, const std::string& base_directory = ".",
                     const std::string& source_name = "<string>",
                     const ModelLimits& limits = {});

/// Loads an MJCF (MuJoCo XML) file: MuJoCo's compiler reads it (its includes and asset files
/// resolved beside it) and the compiled model is converted (docs/MODEL_FORMAT.md, "MJCF"); what
/// hilsim cannot represent is refused or named in Model::load_warnings.
Model loadMjcf(const std::string& path, const ModelLimits& limits = {});

/// Parses MJCF text; `source_name` is used in messages. A text never makes its reader open a
/// file: <include> and file attributes (meshes, textures, height fields, skins) are refused.
Model loadMjcfString(const std::string& xml, const std::string& source_name = "<string>",
                     const ModelLimits& limits = {});

/// Names of the bundled models (config/models), default first.
std::vector<std::string> bundledModelNames();

/// The default bundled model's name (the 7-DoF arm).
std::string defaultModelName();

/// Path of a bundled model file, or empty if `name` is not bundled. Looks in $HILSIM_MODEL_PATH,
/// then the source tree's config/models, then ../share/hilsim/models next to the executable.
std::string bundledModelPath(const std::string& name);

/// The extensions of the model files a name can stand for, in the order a name is looked up:
/// ".yaml", ".yml", ".urdf", ".sdf", ".xml" (MJCF).
std::span<const std::string_view> modelFileExtensions();

/// `directory`/<name> with the first of modelFileExtensions() that exists, or empty when there is
/// none or `name` is not a plain file stem (no path, no leading dot).
std::string modelFileIn(const std::string& directory, const std::string& name);

}  // namespace hilsim
