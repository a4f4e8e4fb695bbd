// The bounds the model fuzz targets pass to the loaders: those hilsim-server applies to the model
// text of a CreateSession (the defaults of its `limits`, server/server_config.h, and the
// session's 128 coordinates), the path by which text from outside reaches a loader.
//
// Not the loaders' own defaults, which suit trusted files: they allow a 1000-element beam, whose
// modes take a second to generate in a release build and more than -timeout under the
// sanitizers, so a run would report the cost the bounds allow rather than a parser's bug.
#pragma once

#include "engine/io/model_loader.h"

namespace hilsim::fuzz {

inline ModelLimits serverModelLimits() {
  ModelLimits limits;
  limits.max_text_bytes = 512 << 10;
  limits.max_bodies = 2000;
  limits.max_modes = 32;
  limits.max_beam_elements = 100;
  limits.max_flexible_entries = 512;
  limits.max_dofs = 128;
  limits.files_inside_base_directory = true;  // a text never opens other files
  return limits;
}

}  // namespace hilsim::fuzz
