// tests/test_env.h - what the test binaries take from the environment.
//
// FMM_TEST_SEED=N replays a run: every run draws a fresh seed from std::random_device unless
// it is set, and each test that takes a seed prints it and records it as the gtest property "seed".
//
// FMM_TEST_SANITIZE=1 (any value but empty or 0): the run is under compute-sanitizer
// (tests/gpu_sanitize.sh), where the kernels run 10-100x slower. The GPU tests then take
// test_size's second value: fewer particles and fewer repetitions of the same path, never a
// kernel path less (every order group, depth, precision and route of the plain run) and never a
// looser tolerance: each result is still checked as in the plain run.
//
// FMM_TEST_SANITIZE=racecheck: under racecheck, which tracks every shared-memory access and at
// the sizes above took minutes per case (a kernel's cost there grows with its blocks, i.e. the
// tree's boxes, more than with the particles). The tests take test_size's third value where they
// give one (else the second): the fewest particles, depths and repetitions that still reach every
// kernel and path (trees of depth 2 and more, open and periodic, double and mixed, the virial,
// exclusions, depth 5's halo M2L once), each result checked as in the plain run.
#ifndef FMM_TESTS_TEST_ENV_H
#define FMM_TESTS_TEST_ENV_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <random>
#include <string>

// The run's seed: FMM_TEST_SEED (decimal, or 0x hexadecimal) or a fresh 64-bit one.
inline uint64_t test_base_seed() {
    static const uint64_t seed = [] {
        const char *env = std::getenv("FMM_TEST_SEED");
        if (env && *env) return (uint64_t)std::strtoull(env, nullptr, 0);
        std::random_device rd;
        return ((uint64_t)rd() << 32) ^ (uint64_t)rd();
    }();
    return seed;
}

// The seed of one test: the run's seed plus the test's fixed offset (so that tests of one run
// draw different sets), printed and recorded.
inline uint64_t test_seed(uint64_t offset = 0) {
    const uint64_t s = test_base_seed() + offset;
    std::cout << "seed " << test_base_seed() << " (this test: " << s
              << "; replay with FMM_TEST_SEED=" << test_base_seed() << ")" << std::endl;
    ::testing::Test::RecordProperty("seed", std::to_string(test_base_seed()));
    return s;
}

inline bool test_sanitize_mode() {
    static const bool on = [] {
        const char *e = std::getenv("FMM_TEST_SANITIZE");
        return e && *e && std::strcmp(e, "0") != 0;
    }();
    return on;
}

inline bool test_racecheck_mode() {
    static const bool on = [] {
        const char *e = std::getenv("FMM_TEST_SANITIZE");
        return e && std::strcmp(e, "racecheck") == 0;
    }();
    return on;
}

// plain in a plain run, sanitized under compute-sanitizer (a size, a count, or a list to loop over)
template <class T> T test_size(T plain, T sanitized) {
    return test_sanitize_mode() ? sanitized : plain;
}

// the same, with racecheck's own value (FMM_TEST_SANITIZE=racecheck)
template <class T> T test_size(T plain, T sanitized, T racecheck) {
    return test_racecheck_mode() ? racecheck : test_size(plain, sanitized);
}

#endif
