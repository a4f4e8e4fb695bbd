// Helpers shared by the model loaders (internal to engine/io; not part of the public API).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "engine/builder/model_builder.h"
#include "engine/io/model_loader.h"
#include "engine/model/model.h"
#include "engine/spatial/transform.h"

namespace hilsim::io_detail {

/// The whole content of a text file of at most `max_bytes` bytes. Throws ModelError
/// "cannot open 'path': reason", or one naming the limit for a larger file (checked while reading,
/// so that an endless file stops within one block of it).
std::string readTextFile(const std::string& path, std::size_t max_bytes);

/// What an XML model text must be before tinyxml2 (ours, or MuJoCo's) parses it: at most
/// `max_bytes` bytes, and no start tag with more than 64 attributes. tinyxml2 looks up every
/// attribute among those of its element already read (to refuse duplicates), so one element with
/// n attributes costs n²: 512 KiB of them would take seconds; a model element has a handful, and
/// one linear scan refuses the rest. ModelError "source:line: an element with more than 64
/// attributes", or naming the size limit.
void checkXmlShape(std::string_view xml, std::size_t max_bytes, const std::string& source);

/// Text of a model file quoted in a message: control bytes and bytes that are not part of valid
/// UTF-8 escaped as \xNN (a message is one line, and valid UTF-8), and anything past `max_bytes`
/// cut with "..." (never inside a character), so that no content can shape a message.
std::string printable(std::string_view text, std::size_t max_bytes = 80);

/// A loader's final message: control bytes escaped as printable() does, at most 2 KiB.
std::string oneLine(std::string_view message);

/// Line (1-based) of the first start tag of `xml` with more than `max_attributes` attributes, or 0
/// when there is none. One linear scan, run before tinyxml2 parses an XML model: tinyxml2 checks
/// each attribute against those of its element already read, so n attributes cost n².
int tagWithTooManyAttributes(std::string_view xml, int max_attributes);

/// Directory part of a path ("." when there is none).
std::string directoryOf(const std::string& path);

/// Rotation R = Rz(yaw) Ry(pitch) Rx(roll): URDF's fixed-axis roll-pitch-yaw convention.
Matrix3 rotationFromRpy(double roll, double pitch, double yaw);

/// What the inertia policy made of one moving body's composite inertia (docs/MODEL_FORMAT.md,
/// "Inertia policy"): a reason to refuse it, or a warning line's tail, or neither.
struct InertiaCheck {
  std::string error;    ///< undefined dynamics (any policy), a broken triangle inequality (strict)
  std::string warning;  ///< "principal moments break the triangle inequality by …; …"
};

/// Applies `policy` to `body` (its inertia with the welded links merged): balances the inertia
/// (kBalance) or marks it BodySpec::inertia_as_given (kAsGiven) when its principal moments break
/// the triangle inequality.
InertiaCheck applyInertiaPolicy(BodySpec& body, InertiaPolicy policy);

/// Rethrows a ModelBuilder error for a file: "<source>: <message>", with the builder's
/// "body '…'" rewritten as `element_word` ("link" for URDF) so that it names the file's element.
[[noreturn]] void rethrowBuildError(const ModelError& error, const std::string& source,
                                    const std::string& element_word);

}  // namespace hilsim::io_detail
