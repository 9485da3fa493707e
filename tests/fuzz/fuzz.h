/* Helpers shared by the libFuzzer targets of tests/fuzz (README.md there). */
#ifndef FMM_TESTS_FUZZ_H
#define FMM_TESTS_FUZZ_H

#define _GNU_SOURCE /* memfd_create */
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

#endif
