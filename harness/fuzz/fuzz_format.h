/* fuzz_format.h — byte positions of the fuzz input format (described in fuzz.h), shared
 * by the decoder (fuzz_decode.c) and the encoder (fuzz_encode.c). Internal to harness/fuzz. */
#ifndef ATTNFUZZ_FUZZ_FORMAT_H
#define ATTNFUZZ_FUZZ_FORMAT_H

#include <stddef.h>

/* core section: one byte per field, a table index */
enum {
    C_DTYPE, C_FLAGS, C_BATCH, C_RATIO, C_HKV, C_SEQ, C_DIM, C_MASK, C_WIN_L, C_WIN_R, C_PAD, C_LAYOUT,
    C_PACKING, C_STRIDE_GAP, C_THD_GAP, C_PAGE, C_CP, C_DATA_BASE, C_DATA_MODS, C_DATA_PRESET, C_SCALE,
    C_SEED, C_PATTERN, CORE_LEN
};
/* fine section: exact offsets and overrides, then F_DATA's count of data terms of
 * DATA_TERM_BYTES each (kind, p0 and p1 as little-endian doubles) */
enum {
    F_BATCH = CORE_LEN, F_RATIO = F_BATCH + 2, F_HKV = F_RATIO + 2, F_SQ = F_HKV + 2, F_SKV = F_SQ + 2,
    F_DQK = F_SKV + 2, F_DV = F_DQK + 2, F_SEED = F_DV + 2, F_WIN_L = F_SEED + 7, F_WIN_R = F_WIN_L + 2,
    F_STRIDE_GAP = F_WIN_R + 2, F_THD_GAP = F_STRIDE_GAP + 2, F_PAGE = F_THD_GAP + 2, F_CP = F_PAGE + 1,
    F_SCALE = F_CP + 1, F_DATA = F_SCALE + 4, DATA_TERM_BYTES = 17
};

/* Where the per-sequence length overrides start (4 bytes per sequence: q, kv as 16-bit
 * length + 1, 0 = the ragged pattern's length). */
static inline size_t fz_lengths_at(unsigned n_fine_terms) { return F_DATA + 1 + (size_t)n_fine_terms * DATA_TERM_BYTES; }

#endif
