// 3-vectors four lanes wide (AVX2 and FMA): a 3-vector is one register, lanes x, y, z, and a
// fourth lane that holds whatever follows the vector in memory (zero after load3). That lane is
// carried and overwritten, never kept: sums read the first three lanes, stores of a lone
// 3-vector are masked. Used by the hand-vectorised steps of aba (aba_steps.cc) and the distance
// rows of the loop closures (closure_kinematics.cc); docs/PERFORMANCE.md says why by hand.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#define HILSIM_HAVE_LANES 1
#include <immintrin.h>

namespace hilsim::detail::lanes {

using Lanes = __m256d;

inline __m256i firstThreeLanes() { return _mm256_setr_epi64x(-1, -1, -1, 0); }
inline Lanes load3(const double* p) { return _mm256_maskload_pd(p, firstThreeLanes()); }
inline void store3(double* p, Lanes x) { _mm256_maskstore_pd(p, firstThreeLanes(), x); }
inline Lanes load4(const double* p) { return _mm256_loadu_pd(p); }
inline void store4(double* p, Lanes x) { _mm256_storeu_pd(p, x); }
inline Lanes broadcast(const double* p) { return _mm256_broadcast_sd(p); }
inline Lanes add(Lanes a, Lanes b) { return _mm256_add_pd(a, b); }
inline Lanes mul(Lanes a, Lanes b) { return _mm256_mul_pd(a, b); }
inline Lanes fma(Lanes a, Lanes b, Lanes c) { return _mm256_fmadd_pd(a, b, c); }
inline Lanes negate(Lanes a) { return _mm256_sub_pd(_mm256_setzero_pd(), a); }
template <int K>
inline Lanes splat(Lanes a) {
  return _mm256_permute4x64_pd(a, _MM_SHUFFLE(K, K, K, K));
}
inline Lanes yzx(Lanes a) { return _mm256_permute4x64_pd(a, _MM_SHUFFLE(3, 0, 2, 1)); }
/// a × b = (a ⊙ b_yzx − a_yzx ⊙ b)_yzx
inline Lanes cross(Lanes a, Lanes b) {
  return yzx(_mm256_fmsub_pd(a, yzx(b), mul(yzx(a), b)));
}
/// x + y + z of the first three lanes.
inline double sum3(Lanes a) {
  const __m128d xy = _mm256_castpd256_pd128(a);
  const __m128d z = _mm256_extractf128_pd(a, 1);
  return _mm_cvtsd_f64(_mm_add_sd(_mm_add_sd(xy, _mm_unpackhi_pd(xy, xy)), z));
}
/// A · b for a column-major 3 × 3 A held as columns a0, a1, a2 and b read from memory.
inline Lanes times(Lanes a0, Lanes a1, Lanes a2, const double* b) {
  return fma(a2, broadcast(b + 2), fma(a1, broadcast(b + 1), mul(a0, broadcast(b))));
}

}  // namespace hilsim::detail::lanes

#endif
