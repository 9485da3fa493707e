// tests/test_env.h - what the test binaries take from the environment besides FMM_TEST_SEED.
//
// FMM_TEST_SANITIZE=1 (any value but empty or 0): the run is under compute-sanitizer
// (tests/gpu_sanitize.sh), where the kernels run 10-100x slower. The GPU tests then take
// test_size's second value: fewer particles and fewer repetitions of the same path, never a
// kernel path less (every order group, depth, precision and route of the plain run) and never a
// looser tolerance: each result is still checked as in the plain run.
#ifndef FMM_TESTS_TEST_ENV_H
#define FMM_TESTS_TEST_ENV_H

#include <cstdlib>
#include <cstring>

inline bool test_sanitize_mode() {
    static const bool on = [] {
        const char *e = std::getenv("FMM_TEST_SANITIZE");
        return e && *e && std::strcmp(e, "0") != 0;
    }();
    return on;
}

// plain in a plain run, sanitized under compute-sanitizer (a size, a count, or a list to loop over)
template <class T> T test_size(T plain, T sanitized) {
    return test_sanitize_mode() ? sanitized : plain;
}

#endif
