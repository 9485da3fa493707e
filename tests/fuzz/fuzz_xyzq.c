/* Fuzz target: the reader of number files, pts_read_rows (systems/pointsets.c), through its
 * three entries: pts_read_rows itself (any count of columns, and 2 or 3 with the last apart),
 * pts_read_xyzq (4 columns) and the CLI's cli_read_rows (cli/args.c). The input is the file.
 * Checks: a failure leaves nothing behind and says in one line which file is wrong; a success
 * gives finite numbers, rows with increasing line numbers, and a file without NUL bytes (always
 * an error, systems/pointsets.h); pts_write_xyzq writes what pts_read_xyzq read and it reads back
 * bit for bit; and the entries agree with each other: the same file is valid for a column range
 * exactly when its rows have a count in that range, with the same numbers. */
#include "tests/fuzz/fuzz.h"

#include <math.h>

#include "cli/commands.h"
#include "systems/pointsets.h"

static void check_failure(int rc, const char *path, const char *err, long n, const void *a,
                          const void *b) {
    FUZZ_CHECK(rc > 0 && rc < PTS_STATUS_COUNT, "status %d", rc);
    FUZZ_CHECK(n == 0 && !a && !b, "failure %d left n %ld or arrays", rc, n);
    FUZZ_CHECK(!strncmp(err, path, strlen(path)) && !strchr(err, '\n'),
               "message '%s' does not start with the path or is not one line", err);
}

static void check_finite(size_t m, const double *v) {
    for (size_t i = 0; i < m; ++i) FUZZ_CHECK(isfinite(v[i]), "value %zu is %g", i, v[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[32], err[256];
    int fd = fuzz_file(data, size, path);
    if (fd < 0) return 0;
    const int has_nul = memchr(data, 0, size) != NULL;

    /* any count of columns, with each row's line */
    long n = -1, *lines = NULL;
    double *rows = NULL;
    int cols = 0, nbox = -2;
    double box[9];
    int rc = pts_read_rows(path, "c1 c2 ...", 1, 0, &cols, &n, &rows, NULL, &lines, box, &nbox, err,
                           sizeof err);
    FUZZ_CHECK(nbox == -1 || nbox == 0 || nbox == 3 || nbox == 9, "a box line of %d numbers", nbox);
    if (nbox > 0) check_finite((size_t)nbox, box);
    if (rc) {
        check_failure(rc, path, err, n, rows, lines);
    } else {
        FUZZ_CHECK(!has_nul, "a file with a NUL byte was read");
        FUZZ_CHECK(n >= 1 && cols >= 1 && rows && lines, "success with %ld rows of %d", n, cols);
        check_finite((size_t)n * (size_t)cols, rows);
        for (long i = 0; i < n; ++i)
            FUZZ_CHECK(lines[i] >= 1 && (i == 0 || lines[i] > lines[i - 1]), "row %ld: line %ld", i,
                       lines[i]);
    }

    /* 2 or 3 columns, the last apart: valid exactly when the rows above have 2 or 3 */
    long m = -1;
    double *r23 = NULL, *last = NULL;
    int c23 = 0;
    int rc23 = pts_read_rows(path, "a b [c]", 2, 3, &c23, &m, &r23, &last, NULL, NULL, NULL, err,
                             sizeof err);
    if (rc23) check_failure(rc23, path, err, m, r23, last);
    FUZZ_CHECK(!rc23 == (!rc && cols >= 2 && cols <= 3), "2-3 columns: %d, any: %d with %d", rc23,
               rc, cols);
    if (!rc23) {
        FUZZ_CHECK(m == n && c23 == cols, "%ld rows of %d, expected %ld of %d", m, c23, n, cols);
        for (long i = 0; i < n; ++i)
            FUZZ_CHECK(!memcmp(r23 + (c23 - 1) * i, rows + cols * i, sizeof(double) * (c23 - 1)) &&
                           !memcmp(last + i, rows + cols * i + cols - 1, sizeof(double)),
                       "row %ld differs", i);
    }
    free(r23), free(last);

    /* x y z q: pts_read_xyzq and the CLI's reader, valid exactly when the rows have 4 */
    long nq = -1;
    double *xyz = NULL, *q = NULL;
    int rq = pts_read_xyzq(path, &nq, &xyz, &q, err, sizeof err);
    if (rq) check_failure(rq, path, err, nq, xyz, q);
    FUZZ_CHECK(!rq == (!rc && cols == 4), "x y z q: %d, any: %d with %d", rq, rc, cols);
    long nc = -1;
    double *cx = NULL, *cq = NULL;
    int cc = 0;
    int rcli = cli_read_rows("fuzz", path, "x y z q", 4, 4, &cc, &nc, &cx, &cq);
    FUZZ_CHECK(rcli == 0 || rcli == 1, "cli_read_rows returned %d", rcli);
    FUZZ_CHECK(!rcli == !rq, "cli_read_rows %d, pts_read_xyzq %d", rcli, rq);
    if (!rq) {
        FUZZ_CHECK(nq == n && nc == n && cc == 4, "%ld and %ld particles, expected %ld", nq, nc, n);
        for (long i = 0; i < n; ++i)
            FUZZ_CHECK(!memcmp(xyz + 3 * i, rows + 4 * i, sizeof(double) * 3) &&
                           q[i] == rows[4 * i + 3] &&
                           !memcmp(cx + 3 * i, xyz + 3 * i, sizeof(double) * 3) &&
                           !memcmp(cq + i, q + i, sizeof(double)),
                       "particle %ld differs", i);
        const char *out = fuzz_out_path();
        if (out) {
            FUZZ_CHECK(pts_write_xyzq(out, nq, xyz, q) == PTS_OK, "cannot write %s", out);
            long n2;
            double *xyz2, *q2;
            int rc2 = pts_read_xyzq(out, &n2, &xyz2, &q2, err, sizeof err);
            FUZZ_CHECK(rc2 == PTS_OK && n2 == nq, "read back: %s", err);
            FUZZ_CHECK(!memcmp(xyz, xyz2, sizeof(double) * 3 * (size_t)nq) &&
                           !memcmp(q, q2, sizeof(double) * (size_t)nq),
                       "read back differs");
            free(xyz2), free(q2);
        }
    }
    free(cx), free(cq), free(xyz), free(q), free(rows), free(lines);
    close(fd);
    return 0;
}
