/* Fuzz target: the legacy VTK reader fmm_vtk_read_msg (rbf/vtk_io.c). The input is the file.
 * Checks: a failure is one of the codes the headers (include/fmm_rbf.h, rbf/vtk_io.h) name,
 * leaves the mesh empty and says in one line which file is wrong; a file with a NUL byte is
 * refused; a success gives a consistent mesh (offsets from 0 and non-decreasing, node indices in
 * range, cell types 1..100, finite points) that fmm_vtk_write writes and fmm_vtk_read reads back
 * unchanged; and the volume ratio of the mesh against itself is 1 (or, with no cell of non-zero
 * volume, infinite). */
#include "tests/fuzz/fuzz.h"

#include <math.h>

#include "rbf/vtk_io.h"

static void check_mesh(const fmm_vtk_mesh *m) {
    FUZZ_CHECK(m->npoints >= 0 && m->ncells >= 0, "%ld points, %ld cells", m->npoints, m->ncells);
    FUZZ_CHECK(m->offset && m->offset[0] == 0, "offsets");
    for (long i = 0; i < 3 * m->npoints; ++i) FUZZ_CHECK(isfinite(m->xyz[i]), "coordinate %ld", i);
    for (long c = 0; c < m->ncells; ++c) {
        FUZZ_CHECK(m->offset[c + 1] >= m->offset[c], "cell %ld", c);
        FUZZ_CHECK(m->types[c] >= 1 && m->types[c] <= 100, "cell %ld type %d", c, m->types[c]);
    }
    for (long j = 0; j < m->offset[m->ncells]; ++j)
        FUZZ_CHECK(m->conn[j] >= 0 && m->conn[j] < m->npoints, "node %ld: %ld", j, m->conn[j]);
}

/* n bytes at a and b equal (either may be NULL when n is 0) */
static int same_bytes(const void *a, const void *b, size_t n) {
    return !n || !memcmp(a, b, n);
}

static int same_mesh(const fmm_vtk_mesh *a, const fmm_vtk_mesh *b) {
    if (a->npoints != b->npoints || a->ncells != b->ncells) return 0;
    long nc = a->offset[a->ncells];
    return b->offset[b->ncells] == nc &&
           same_bytes(a->xyz, b->xyz, sizeof(double) * 3 * (size_t)a->npoints) &&
           same_bytes(a->offset, b->offset, sizeof(long) * (size_t)(a->ncells + 1)) &&
           same_bytes(a->conn, b->conn, sizeof(long) * (size_t)nc) &&
           same_bytes(a->types, b->types, sizeof(int) * (size_t)a->ncells);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[32];
    int fd = fuzz_file(data, size, path);
    if (fd < 0) return 0;
    fmm_vtk_mesh m;
    char msg[256];
    int rc = fmm_vtk_read_msg(path, &m, msg, sizeof msg);
    close(fd);
    if (rc) {
        FUZZ_CHECK(rc == FMM_ERR_FORMAT || rc == FMM_ERR_IO || rc == FMM_ERR_NOMEM, "status %d",
                   rc);
        FUZZ_CHECK(!m.npoints && !m.ncells && !m.xyz && !m.offset && !m.conn && !m.types,
                   "a failed read left a mesh");
        FUZZ_CHECK(!strncmp(msg, path, strlen(path)) && !strchr(msg, '\n'),
                   "message '%s' does not start with the path or is not one line", msg);
        return 0;
    }
    FUZZ_CHECK(!memchr(data, 0, size), "a file with a NUL byte was read");
    check_mesh(&m);

    const char *out = fuzz_out_path();
    if (out) {
        FUZZ_CHECK(fmm_vtk_write(out, &m, "fuzz") == 0, "cannot write %s", out);
        fmm_vtk_mesh r;
        int rc2 = fmm_vtk_read_msg(out, &r, msg, sizeof msg);
        FUZZ_CHECK(rc2 == 0, "read back: %s", msg);
        FUZZ_CHECK(same_mesh(&m, &r), "read back differs");
        fmm_vtk_free(&r);
    }

    double ratio = 0;
    rc = fmm_vtk_min_volume_ratio(&m, &m, &ratio);
    FUZZ_CHECK(rc == 0 || rc == FMM_ERR_FORMAT, "volume ratio: status %d", rc);
    if (!rc)
        FUZZ_CHECK(ratio == 1 || ratio == INFINITY, "volume ratio of a mesh to itself %g", ratio);
    fmm_vtk_free(&m);
    return 0;
}
