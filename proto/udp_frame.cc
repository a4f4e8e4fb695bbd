#include "proto/udp_frame.h"

#include <sodium.h>

#include <cstring>

namespace hilsim::udp {

namespace {

constexpr char kCommandMagic[kMagicBytes + 1] = "HSC1";
constexpr char kStateMagic[kMagicBytes + 1] = "HSS1";

void putCounter(std::uint64_t counter, std::uint8_t* out) {
  for (std::size_t k = 0; k < 8; ++k) out[k] = static_cast<std::uint8_t>(counter >> (8 * k));
}

std::uint64_t getCounter(const std::uint8_t* in) {
  std::uint64_t counter = 0;
  for (std::size_t k = 0; k < 8; ++k) counter |= static_cast<std::uint64_t>(in[k]) << (8 * k);
  return counter;
}

}  // namespace

std::string_view magic(Direction direction) {
  return {direction == Direction::kCommand ? kCommandMagic : kStateMagic, kMagicBytes};
}

bool initialize() {
  // sodium_init is itself thread-safe and idempotent (0: started now, 1: already running)
  static const bool ok = sodium_init() >= 0;
  return ok;
}

Key::Key(std::span<const std::uint8_t, kKeyBytes> bytes) {
  std::memcpy(bytes_.data(), bytes.data(), kKeyBytes);
}

Key& Key::operator=(const Key& other) {
  if (this != &other) std::memcpy(bytes_.data(), other.bytes_.data(), kKeyBytes);
  return *this;
}

Key::~Key() { sodium_memzero(bytes_.data(), bytes_.size()); }

Key Key::random() {
  Key key;
  randombytes_buf(key.bytes_.data(), key.bytes_.size());
  return key;
}

bool Key::fromBytes(std::string_view bytes, Key* out) {
  if (bytes.size() != kKeyBytes) return false;
  std::memcpy(out->bytes_.data(), bytes.data(), kKeyBytes);
  return true;
}

void computeTag(const Key& key, std::span<const std::uint8_t> data,
                std::span<std::uint8_t, kTagBytes> tag) {
  crypto_generichash(tag.data(), tag.size(), data.data(), data.size(), key.data(), key.size());
}

std::size_t seal(const Key& key, Direction direction, std::uint64_t counter,
                 std::span<std::uint8_t> buffer, std::size_t payload_bytes) {
  if (buffer.size() < kFrameOverheadBytes || payload_bytes > buffer.size() - kFrameOverheadBytes) {
    return 0;
  }
  std::memcpy(buffer.data(), magic(direction).data(), kMagicBytes);
  putCounter(counter, buffer.data() + kMagicBytes);
  const std::size_t tagged = kHeaderBytes + payload_bytes;
  computeTag(key, buffer.first(tagged), buffer.subspan(tagged).first<kTagBytes>());
  return tagged + kTagBytes;
}

Check open(const Key& key, Direction direction, std::span<const std::uint8_t> frame, Opened* out) {
  if (frame.size() < kMinFrameBytes) return Check::kTooShort;
  // the magic is public: no need to compare it in constant time
  if (std::memcmp(frame.data(), magic(direction).data(), kMagicBytes) != 0) {
    return Check::kBadMagic;
  }
  const std::size_t tagged = frame.size() - kTagBytes;
  std::array<std::uint8_t, kTagBytes> expected;
  computeTag(key, frame.first(tagged), expected);
  const bool ok = crypto_verify_16(expected.data(), frame.data() + tagged) == 0;
  sodium_memzero(expected.data(), expected.size());  // no valid tag left on the stack
  if (!ok) return Check::kBadTag;
  out->counter = getCounter(frame.data() + kMagicBytes);
  out->payload = frame.subspan(kHeaderBytes, tagged - kHeaderBytes);
  return Check::kOk;
}

ReplayWindow::Verdict ReplayWindow::check(std::uint64_t counter) const {
  if (counter == 0) return Verdict::kStale;  // below every counter a sender may use
  if (counter > newest_) return Verdict::kFresh;
  if (counter == newest_) return Verdict::kReplayed;
  const std::uint64_t behind = newest_ - counter - 1;  // 0: just below the newest
  if (behind < kWidth && ((seen_ >> behind) & 1U) != 0) return Verdict::kReplayed;
  return Verdict::kStale;
}

void ReplayWindow::accept(std::uint64_t counter) {
  if (counter <= newest_) return;
  const std::uint64_t shift = counter - newest_;
  // the old newest becomes bit shift − 1; the map slides by `shift`
  if (newest_ == 0) {
    seen_ = 0;
  } else if (shift > kWidth) {
    seen_ = 0;
  } else {
    seen_ = (shift == kWidth ? 0 : seen_ << shift) | (std::uint64_t{1} << (shift - 1));
  }
  newest_ = counter;
}

}  // namespace hilsim::udp
