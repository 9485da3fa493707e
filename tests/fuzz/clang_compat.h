/* Included before every C source of the fuzz build (FMM_FUZZ, clang): glibc defines CMPLX for
 * GCC only, and without it clang takes CMPLX for an undeclared function returning int
 * (pbc/lattice.c). */
#ifndef FMM_TESTS_FUZZ_CLANG_COMPAT_H
#define FMM_TESTS_FUZZ_CLANG_COMPAT_H

#ifndef CMPLX
#define CMPLX(x, y) __builtin_complex((double)(x), (double)(y))
#endif

#endif
