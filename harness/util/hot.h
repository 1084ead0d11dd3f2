/* util/hot.h — AF_HOT: a hot loop compiled twice, for x86-64 with FMA (and the AVX it
 * implies) and for the baseline, the loader picking one at start (GCC / Clang
 * target_clones, an ifunc). The two give the same number for every result: the tree
 * builds with -ffp-contract=off, so a multiply and an add stay two roundings in either
 * clone, and an explicit fma() is one rounding in both (the baseline calls libm's, the FMA
 * clone emits the instruction). Only a NaN's sign and payload, which IEEE 754 leaves to
 * the operand order, may differ. What changes is speed: fma() inline instead of a call,
 * and 8-wide vector loops instead of 4-wide. Elsewhere (other CPUs, compilers without
 * target_clones, sanitizer builds, where ifuncs and instrumentation do not mix) AF_HOT is
 * empty. */
#ifndef ATTNFUZZ_UTIL_HOT_H
#define ATTNFUZZ_UTIL_HOT_H

#if defined(__x86_64__) && defined(__ELF__) && !defined(__SANITIZE_ADDRESS__) &&                                       \
    (defined(__clang__) ? __clang_major__ >= 14 : defined(__GNUC__) && __GNUC__ >= 8)
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AF_HOT_OFF 1
#endif
#endif
#ifndef AF_HOT_OFF
#define AF_HOT __attribute__((target_clones("fma", "default")))
#endif
#endif
#ifndef AF_HOT
#define AF_HOT
#endif

#endif
