// The authenticated UDP frame (docs/PROTOCOL.md "Authentication", udp.proto): what a session's
// port and a controller put around each datagram's protobuf under the MAC scheme, and the replay
// window that keeps a captured frame from being accepted twice. Pure functions and fixed-size
// state, shared by the server (server/udp_screen.h), the C++ controller and the fuzz target.
//
// A frame, both directions, little-endian:
//
//   offset  size  field
//   0       4     magic: "HSC1" controller → server (a command), "HSS1" server → controller
//   4       8     counter: u64, strictly increasing per key and direction
//   12      n     payload: a serialized UdpCommand without token, or a UdpState
//   12 + n  16    tag: BLAKE2b-128 keyed with the session's 32-byte key over bytes [0, 12 + n)
//
// The tag is libsodium's crypto_generichash (BLAKE2b, RFC 7693) with a 32-byte key and a 16-byte
// output: the same as Python's hashlib.blake2b(data, key=key, digest_size=16). No allocation, no
// exception, no lock: every function may sit on a network thread's per-datagram path.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace hilsim::udp {

inline constexpr std::size_t kKeyBytes = 32;    ///< the session key
inline constexpr std::size_t kTagBytes = 16;    ///< BLAKE2b-128
inline constexpr std::size_t kMagicBytes = 4;
inline constexpr std::size_t kHeaderBytes = 12;  ///< magic and counter, before the payload
/// Bytes a frame adds to its payload: header and tag (28).
inline constexpr std::size_t kFrameOverheadBytes = kHeaderBytes + kTagBytes;
/// The shortest frame: an empty payload.
inline constexpr std::size_t kMinFrameBytes = kFrameOverheadBytes;

/// Which way a frame goes; each has its own magic, so that a state is never taken for a command.
enum class Direction : std::uint8_t {
  kCommand,  ///< controller → server, magic "HSC1"
  kState,    ///< server → controller, magic "HSS1"
};

/// The four magic bytes of `direction`.
std::string_view magic(Direction direction);

/// Starts libsodium (sodium_init) once per process; later calls return at once. False when it
/// cannot start (no entropy source): then nothing here may be used. Thread-safe.
bool initialize();

/// A session key. Zeroed (sodium_memzero) when destroyed or overwritten, never printed.
class Key {
 public:
  Key() = default;
  explicit Key(std::span<const std::uint8_t, kKeyBytes> bytes);
  Key(const Key& other) : bytes_(other.bytes_) {}
  Key& operator=(const Key& other);
  ~Key();

  /// kKeyBytes bytes from the kernel's CSPRNG (randombytes_buf). Call initialize() first.
  static Key random();
  /// The key of a string holding exactly kKeyBytes bytes (the proto `bytes` field); false and
  /// `out` unchanged otherwise.
  static bool fromBytes(std::string_view bytes, Key* out);

  const std::uint8_t* data() const { return bytes_.data(); }
  static constexpr std::size_t size() { return kKeyBytes; }
  /// The bytes as a string (for CreateSessionResponse.udp_key).
  std::string_view view() const {
    return {reinterpret_cast<const char*>(bytes_.data()), bytes_.size()};
  }

 private:
  std::array<std::uint8_t, kKeyBytes> bytes_{};
};

/// Writes BLAKE2b-128(key, data) into `tag`.
void computeTag(const Key& key, std::span<const std::uint8_t> data,
                std::span<std::uint8_t, kTagBytes> tag);

/// Completes a frame in `buffer` whose payload of `payload_bytes` bytes already sits at
/// buffer[kHeaderBytes]: writes the magic, the counter and the tag. Returns the frame's size
/// (payload_bytes + kFrameOverheadBytes), or 0 when `buffer` is too small for it.
std::size_t seal(const Key& key, Direction direction, std::uint64_t counter,
                 std::span<std::uint8_t> buffer, std::size_t payload_bytes);

/// What open() found.
enum class Check : std::uint8_t {
  kOk,
  kTooShort,  ///< fewer than kMinFrameBytes bytes
  kBadMagic,  ///< not this direction's magic
  kBadTag,    ///< the tag does not match (compared in constant time)
};

/// A frame that passed open(): its counter and its payload (a view into the frame).
struct Opened {
  std::uint64_t counter = 0;
  std::span<const std::uint8_t> payload;
};

/// Checks a received frame: length, magic, then the tag (crypto_verify_16, constant time) before
/// anything else is read. On kOk `*out` holds the counter and the payload.
Check open(const Key& key, Direction direction, std::span<const std::uint8_t> frame, Opened* out);

/// The counters accepted under one key in one direction: the newest, and a 64-bit map of the 64
/// counters below it (bit k set: newest − 1 − k was accepted). A counter is fresh only when it is
/// above the newest: an older frame is refused even if it never arrived (a command older than one
/// applied is of no use), and told apart as a replay (accepted before) or stale (not).
class ReplayWindow {
 public:
  enum class Verdict : std::uint8_t {
    kFresh,     ///< above the newest: accept
    kReplayed,  ///< accepted before (the newest or one the map remembers)
    kStale,     ///< below the newest and not remembered: never accepted, or more than 64 older
  };
  static constexpr std::uint64_t kWidth = 64;

  Verdict check(std::uint64_t counter) const;
  /// Records a fresh counter (check() said kFresh); does nothing for any other.
  void accept(std::uint64_t counter);
  /// The newest accepted counter; 0 before the first.
  std::uint64_t newest() const { return newest_; }

 private:
  std::uint64_t newest_ = 0;
  std::uint64_t seen_ = 0;  // bit k: newest_ − 1 − k accepted
};

}  // namespace hilsim::udp
