#include "engine/model/names.h"

namespace hilsim {

bool isValidUtf8(std::string_view text) {
  std::size_t k = 0;
  while (k < text.size()) {
    const unsigned char c = static_cast<unsigned char>(text[k]);
    if (c < 0x80) {
      ++k;
      continue;
    }
    // the length of the sequence and the range of its second byte (RFC 3629, Table 3-7 of The
    // Unicode Standard): the ranges exclude overlong forms, surrogates and code points > U+10FFFF
    int length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (k + length > text.size()) return false;
    const unsigned char second = static_cast<unsigned char>(text[k + 1]);
    if (second < low || second > high) return false;
    for (int j = 2; j < length; ++j) {
      const unsigned char next = static_cast<unsigned char>(text[k + j]);
      if (next < 0x80 || next > 0xBF) return false;
    }
    k += length;
  }
  return true;
}

std::string nameProblem(std::string_view name) {
  if (name.empty()) return "empty name";
  if (name.size() > kMaxNameBytes)
    return "name of " + std::to_string(name.size()) + " bytes, more than the limit of " +
           std::to_string(kMaxNameBytes);
  for (const char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return "name contains a control character";
  }
  if (!isValidUtf8(name)) return "name is not valid UTF-8";
  return {};
}

}  // namespace hilsim
