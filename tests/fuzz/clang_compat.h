/* Included before every source of the fuzz build (FMM_FUZZ, clang): two GCC features that the
 * library uses and clang 14 lacks. Without the first, clang takes CMPLX for an undeclared
 * function returning int (pbc/lattice.c, core/harmonics.c); without the second, core/panel.c does
 * not compile. */
#ifndef FMM_TESTS_FUZZ_CLANG_COMPAT_H
#define FMM_TESTS_FUZZ_CLANG_COMPAT_H

/* glibc defines CMPLX for GCC only */
#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

/* GCC's two-vector shuffle with a mask vector: element i of the result is element mask[i] of
 * the concatenation of a and b (clang's __builtin_shufflevector takes constant indices only). */
#define __builtin_shuffle(a, b, mask)                                                              \
    __extension__({                                                                                \
        __typeof__(a) sh_a_ = (a), sh_b_ = (b), sh_r_;                                             \
        const int sh_n_ = (int)(sizeof sh_a_ / sizeof sh_a_[0]);                                   \
        for (int sh_i_ = 0; sh_i_ < sh_n_; ++sh_i_) {                                              \
            const int sh_k_ = (int)((mask)[sh_i_] & (2 * sh_n_ - 1));                              \
            sh_r_[sh_i_] = sh_k_ < sh_n_ ? sh_a_[sh_k_] : sh_b_[sh_k_ - sh_n_];                    \
        }                                                                                          \
        sh_r_;                                                                                     \
    })

#endif
