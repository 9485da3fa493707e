/* Helpers shared by the libFuzzer targets of tests/fuzz (README.md there). */
#ifndef FMM_TESTS_FUZZ_H
#define FMM_TESTS_FUZZ_H

#define _GNU_SOURCE /* memfd_create */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A finding: says what is wrong (on stderr, which the fuzzer's -close_fd_mask=2 silences; the
 * replay of the saved input shows it) and traps, so that libFuzzer saves the input. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz check failed (%s:%d): %s: ", __FILE__, __LINE__, #cond);         \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

/* An anonymous in-memory file holding size bytes of data, and a path that fopen opens
 * (/proc/self/fd/N): the readers under test take paths. Returns the descriptor (close it when
 * done) or -1 if the file could not be made, which is no finding. */
static inline int fuzz_file(const uint8_t *data, size_t size, char path[32]) {
    int fd = memfd_create("fuzz", 0);
    if (fd < 0) return -1;
    for (size_t done = 0; done < size;) {
        ssize_t w = write(fd, data + done, size - done);
        if (w <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)w;
    }
    snprintf(path, 32, "/proc/self/fd/%d", fd);
    return fd;
}

/* Where a writer under test may put its file: a path in a directory of this process's own
 * (made at the first call, removed at exit), since a writer may create a temporary file beside
 * its output and rename it, which /proc/self/fd does not allow. NULL if there is no such
 * directory, which is no finding. */
static char fuzz_dir[64];
static char fuzz_out[96];
static void fuzz_dir_remove(void) {
    remove(fuzz_out);
    rmdir(fuzz_dir);
}
static inline const char *fuzz_out_path(void) {
    if (!fuzz_dir[0]) {
        const char *t = getenv("TMPDIR");
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/fmm-fuzz-XXXXXX", t && strlen(t) < 40 ? t : "/tmp");
        if (!mkdtemp(fuzz_dir)) {
            fuzz_dir[0] = '\0';
            return NULL;
        }
        snprintf(fuzz_out, sizeof fuzz_out, "%s/out", fuzz_dir);
        atexit(fuzz_dir_remove);
    }
    return fuzz_out;
}

/* Takes bytes from the front of the fuzz input: next byte, or 0 when it is used up. */
typedef struct {
    const uint8_t *p;
    size_t n;
} fuzz_bytes;

static inline unsigned fuzz_u8(fuzz_bytes *b) {
    if (!b->n) return 0;
    --b->n;
    return *b->p++;
}

static inline unsigned fuzz_u16(fuzz_bytes *b) {
    unsigned lo = fuzz_u8(b);
    return lo | fuzz_u8(b) << 8;
}

/* ---- shared by the plan targets (fuzz_fmm_plan.c, fuzz_bldtt_plan.c) */

/* A power-of-two scale exponent: mostly 0, sometimes small, sometimes near the ends of the double
 * range (where the libraries must compute in units of their own or refuse with FMM_ERR_RANGE). */
static inline int fuzz_scale(fuzz_bytes *b) {
    static const int menu[16] = {0, 0, 0, 0, 0, 0, 0, 0, 3, -5, 40, -40, 300, -300, 990, -990};
    return menu[fuzz_u8(b) % 16];
}

/* A coordinate in [0, 1] from 16 bits, around the cube's centre at one of 48 scales (zoom): sets
 * of such points hold clusters within clusters (deep adaptive trees). */
static inline double fuzz_coordinate(unsigned u16, unsigned zoom) {
    return 0.5 + ldexp(u16 / 65536.0 - 0.5, -(int)(zoom % 48));
}

/* ||a 2^e - ref||_2 / norm over m values: a is a library's output, 2^e brings it to the scale of
 * the reference ref */
static inline double fuzz_rel_error(long m, const double *a, int e, const double *ref,
                                    double norm) {
    double s = 0;
    for (long i = 0; i < m; ++i) {
        double d = ldexp(a[i], e) - ref[i];
        s += d * d;
    }
    return sqrt(s) / norm;
}

static inline int fuzz_all_finite(long m, const double *a) {
    for (long i = 0; i < m; ++i)
        if (!isfinite(a[i])) return 0;
    return 1;
}

/* log2 of the largest |a_i| (-inf if all are 0) */
static inline double fuzz_top(long m, const double *a) {
    double t = 0;
    for (long i = 0; i < m; ++i) t = fmax(t, fabs(a[i]));
    return t > 0 ? log2(t) : -INFINITY;
}

/* One output of a plan's execute against its reference: the library's values, the reference's
 * (the true values are 2^shift times them), the norm of the error check and the largest value of
 * the output's absolute sums (both at the reference's scale), and the allowed relative error. */
typedef struct {
    const char *name;
    int want; /* asked for */
    long count;
    const double *got, *ref;
    int shift;
    double norm, abs_max, bound;
} fuzz_output;

/* Checks an execute's status rc, FMM_OK or FMM_ERR_RANGE (fmm.h, fmm_bldtt.h: an output asked for
 * that is not representable), and its outputs. FMM_OK: the outputs are finite, none of them is
 * one that must be refused (a true value beyond the largest double, or all of an output below the
 * smallest normal one), and each one whose size lies well inside the double range is within its
 * bound. FMM_ERR_RANGE: the largest value of some output asked for, or of its absolute sums, lies
 * near or beyond the ends of the range (nonzero), or `justified` (a reason of the caller's).
 * context goes into the messages. */
static inline void fuzz_check_outputs(int rc, const fuzz_output *c, int nc, int justified,
                                      const char *context) {
    for (int i = 0; i < nc; ++i) {
        if (!c[i].want) continue;
        const double t_val = fuzz_top(c[i].count, c[i].ref) + c[i].shift;
        const double t_abs = (c[i].abs_max > 0 ? log2(c[i].abs_max) : -INFINITY) + c[i].shift;
        if (rc != 0) { /* FMM_ERR_RANGE */
            justified |= t_val > 1015 || (t_val < -1015 && t_val > -INFINITY) ||
                         (t_abs < -1015 && t_abs > -INFINITY);
            continue;
        }
        FUZZ_CHECK(fuzz_all_finite(c[i].count, c[i].got), "%s not finite (%s)", c[i].name, context);
        FUZZ_CHECK(t_val <= 1025, "%s: status OK for values up to 2^%.0f", c[i].name, t_val);
        FUZZ_CHECK(t_abs >= -1030 || t_abs == -INFINITY, "%s: status OK for values below 2^%.0f",
                   c[i].name, t_abs);
        if (!(c[i].norm > 0) || fabs(log2(c[i].norm) + c[i].shift) > 1000) continue;
        double e = fuzz_rel_error(c[i].count, c[i].got, -c[i].shift, c[i].ref, c[i].norm);
        FUZZ_CHECK(e <= c[i].bound, "%s error %.3e > %.3e (%s)", c[i].name, e, c[i].bound, context);
    }
    FUZZ_CHECK(rc == 0 || justified, "FMM_ERR_RANGE for outputs well inside the range (%s)",
               context);
}

#endif
