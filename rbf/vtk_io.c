/* Legacy VTK (ASCII) unstructured grids: reader, writer, and the cell-volume check used
 * for mesh deformation. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmm_rbf.h"

void fmm_vtk_free(fmm_vtk_mesh *m) {
    if (!m) return;
    free(m->xyz), free(m->offset), free(m->conn), free(m->types);
    memset(m, 0, sizeof *m);
}

typedef struct {
    char *buf, *p, *end;
} lexer;

/* next whitespace-separated token (NUL-terminated in place), NULL at the end */
static char *next_tok(lexer *L) {
    char *p = L->p;
    while (p < L->end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v' || *p == '\0')) ++p;
    if (p >= L->end) {
        L->p = p;
        return NULL;
    }
    char *s = p;
    while (p < L->end && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v' || *p == '\0')) ++p;
    if (p < L->end) *p++ = '\0';
    L->p = p;
    return s;
}

static int tok_long(lexer *L, long *v) {
    char *t = next_tok(L), *e;
    if (!t) return FMM_ERR_FORMAT;
    errno = 0;
    *v = strtol(t, &e, 10);
    return (*e || errno) ? FMM_ERR_FORMAT : 0;
}

static int tok_double(lexer *L, double *v) {
    char *t = next_tok(L), *e;
    if (!t) return FMM_ERR_FORMAT;
    *v = strtod(t, &e);
    return (*e || !isfinite(*v)) ? FMM_ERR_FORMAT : 0;
}

static int is_section(const char *t) {
    static const char *k[] = {"POINTS", "CELLS", "CELL_TYPES", "POINT_DATA", "CELL_DATA", "FIELD", "METADATA", NULL};
    for (int i = 0; k[i]; ++i)
        if (!strcmp(t, k[i])) return 1;
    return 0;
}

int fmm_vtk_read(const char *path, fmm_vtk_mesh *mesh) {
    if (!path || !mesh) return FMM_ERR_ARG;
    memset(mesh, 0, sizeof *mesh);
    FILE *f = fopen(path, "rb");
    if (!f) return FMM_ERR_IO;
    if (fseek(f, 0, SEEK_END)) {
        fclose(f);
        return FMM_ERR_IO;
    }
    long sz = ftell(f);
    if (sz < 0 || fseek(f, 0, SEEK_SET)) {
        fclose(f);
        return FMM_ERR_IO;
    }
    char *buf = malloc((size_t)sz + 1);
    if (!buf) {
        fclose(f);
        return FMM_ERR_NOMEM;
    }
    size_t got = fread(buf, 1, (size_t)sz, f);
    int rerr = ferror(f);
    fclose(f);
    if (got != (size_t)sz || rerr) {
        free(buf);
        return FMM_ERR_IO;
    }
    buf[sz] = '\0';
    int rc = FMM_ERR_FORMAT;
    fmm_vtk_mesh m;
    memset(&m, 0, sizeof m);
    /* header: line 1 "# vtk DataFile Version x.y", line 2 title */
    char *nl = strchr(buf, '\n');
    if (strncmp(buf, "# vtk DataFile Version", 22) != 0 || !nl) goto done;
    char *title_end = strchr(nl + 1, '\n');
    if (!title_end) goto done;
    lexer L = {buf, title_end + 1, buf + sz};
    char *t = next_tok(&L);
    if (!t || strcmp(t, "ASCII")) goto done; /* BINARY is not supported */
    t = next_tok(&L);
    if (!t || strcmp(t, "DATASET")) goto done;
    t = next_tok(&L);
    if (!t || strcmp(t, "UNSTRUCTURED_GRID")) goto done;
    int have_pts = 0, have_cells = 0, have_types = 0;
    long ntypes = -1;
    t = next_tok(&L);
    while (t) {
        if (!strcmp(t, "POINTS")) {
            long n;
            if (have_pts || tok_long(&L, &n) || n < 0 || !next_tok(&L)) goto done;
            if (n > (long)(sz / 2)) goto done; /* cannot fit in the file */
            m.npoints = n;
            m.xyz = malloc(sizeof(double) * 3 * (n > 0 ? n : 1));
            if (!m.xyz) {
                rc = FMM_ERR_NOMEM;
                goto done;
            }
            for (long i = 0; i < 3 * n; ++i)
                if (tok_double(&L, &m.xyz[i])) goto done;
            have_pts = 1;
        } else if (!strcmp(t, "CELLS")) {
            long a, b;
            if (have_cells || tok_long(&L, &a) || tok_long(&L, &b) || a < 0 || b < 0) goto done;
            if (a > (long)(sz / 2) + 1 || b > (long)(sz / 2) + 1) goto done;
            char *save = L.p;
            char *u = next_tok(&L);
            if (u && !strcmp(u, "OFFSETS")) {
                /* VTK 5.1: a offsets (ncells + 1), then CONNECTIVITY with b entries */
                if (!next_tok(&L) || a < 1) goto done;
                m.ncells = a - 1;
                m.offset = malloc(sizeof(long) * a);
                m.conn = malloc(sizeof(long) * (b > 0 ? b : 1));
                if (!m.offset || !m.conn) {
                    rc = FMM_ERR_NOMEM;
                    goto done;
                }
                for (long i = 0; i < a; ++i)
                    if (tok_long(&L, &m.offset[i])) goto done;
                u = next_tok(&L);
                if (!u || strcmp(u, "CONNECTIVITY") || !next_tok(&L)) goto done;
                for (long i = 0; i < b; ++i)
                    if (tok_long(&L, &m.conn[i])) goto done;
                if (m.offset[0] != 0 || m.offset[a - 1] != b) goto done;
                for (long i = 0; i + 1 < a; ++i)
                    if (m.offset[i + 1] < m.offset[i]) goto done;
            } else {
                /* classic: a cells, b numbers in all (each cell: count, then its nodes) */
                L.p = save;
                if (u && u + strlen(u) < L.end) u[strlen(u)] = ' '; /* undo the peeked token's NUL */
                m.ncells = a;
                m.offset = malloc(sizeof(long) * (a + 1));
                m.conn = malloc(sizeof(long) * (b > a ? b - a : 1));
                if (!m.offset || !m.conn) {
                    rc = FMM_ERR_NOMEM;
                    goto done;
                }
                long used = 0, k = 0;
                m.offset[0] = 0;
                for (long c = 0; c < a; ++c) {
                    long cnt;
                    if (tok_long(&L, &cnt) || cnt < 1 || used + 1 + cnt > b) goto done;
                    used += 1 + cnt;
                    for (long j = 0; j < cnt; ++j)
                        if (tok_long(&L, &m.conn[k++])) goto done;
                    m.offset[c + 1] = k;
                }
                if (used != b) goto done;
            }
            have_cells = 1;
        } else if (!strcmp(t, "CELL_TYPES")) {
            if (have_types || tok_long(&L, &ntypes) || ntypes < 0 || ntypes > (long)(sz / 2) + 1) goto done;
            m.types = malloc(sizeof(int) * (ntypes > 0 ? ntypes : 1));
            if (!m.types) {
                rc = FMM_ERR_NOMEM;
                goto done;
            }
            for (long i = 0; i < ntypes; ++i) {
                long v;
                if (tok_long(&L, &v) || v < 1 || v > 100) goto done;
                m.types[i] = (int)v;
            }
            have_types = 1;
        } else if (!strcmp(t, "POINT_DATA") || !strcmp(t, "CELL_DATA")) {
            break; /* attribute data follows the geometry: ignored */
        } else if (!is_section(t) && (have_pts || have_cells || have_types)) {
            goto done; /* stray token inside the geometry */
        } else {
            /* FIELD / METADATA blocks or unknown leading sections: skip to the next section */
            do t = next_tok(&L);
            while (t && !(!strcmp(t, "POINTS") || !strcmp(t, "CELLS") || !strcmp(t, "CELL_TYPES") ||
                          !strcmp(t, "POINT_DATA") || !strcmp(t, "CELL_DATA")));
            continue;
        }
        t = next_tok(&L);
    }
    if (!have_pts || have_cells != have_types) goto done;
    if (have_cells && ntypes != m.ncells) goto done;
    for (long i = 0; have_cells && i < m.offset[m.ncells]; ++i)
        if (m.conn[i] < 0 || m.conn[i] >= m.npoints) goto done;
    if (!have_cells) {
        m.offset = malloc(sizeof(long));
        if (!m.offset) {
            rc = FMM_ERR_NOMEM;
            goto done;
        }
        m.offset[0] = 0;
    }
    rc = 0;
done:
    free(buf);
    if (rc) fmm_vtk_free(&m);
    else *mesh = m;
    return rc;
}

int fmm_vtk_write(const char *path, const fmm_vtk_mesh *m, const char *title) {
    if (!path || !m || m->npoints < 0 || m->ncells < 0 || (m->npoints > 0 && !m->xyz) ||
        (m->ncells > 0 && (!m->offset || !m->conn || !m->types)))
        return FMM_ERR_ARG;
    FILE *f = fopen(path, "w");
    if (!f) return FMM_ERR_IO;
    char tt[256];
    snprintf(tt, sizeof tt, "%s", title ? title : "fmm rbf mesh");
    for (char *c = tt; *c; ++c)
        if (*c == '\n' || *c == '\r') *c = ' ';
    fprintf(f, "# vtk DataFile Version 3.0\n%s\nASCII\nDATASET UNSTRUCTURED_GRID\n", tt);
    fprintf(f, "POINTS %ld double\n", m->npoints);
    for (long i = 0; i < m->npoints; ++i)
        fprintf(f, "%.17g %.17g %.17g\n", m->xyz[3 * i], m->xyz[3 * i + 1], m->xyz[3 * i + 2]);
    long tot = m->ncells > 0 ? m->offset[m->ncells] + m->ncells : 0;
    fprintf(f, "CELLS %ld %ld\n", m->ncells, tot);
    for (long c = 0; c < m->ncells; ++c) {
        fprintf(f, "%ld", m->offset[c + 1] - m->offset[c]);
        for (long j = m->offset[c]; j < m->offset[c + 1]; ++j) fprintf(f, " %ld", m->conn[j]);
        fputc('\n', f);
    }
    fprintf(f, "CELL_TYPES %ld\n", m->ncells);
    for (long c = 0; c < m->ncells; ++c) fprintf(f, "%d\n", m->types[c]);
    int bad = ferror(f);
    if (fclose(f) || bad) return FMM_ERR_IO;
    return 0;
}

static double tet6(const double *X, long v, long a, long b, long c) {
    const double *p = X + 3 * v, *A = X + 3 * a, *B = X + 3 * b, *C = X + 3 * c;
    double u[3] = {A[0] - p[0], A[1] - p[1], A[2] - p[2]};
    double s[3] = {B[0] - p[0], B[1] - p[1], B[2] - p[2]};
    double w[3] = {C[0] - p[0], C[1] - p[1], C[2] - p[2]};
    return u[0] * (s[1] * w[2] - s[2] * w[1]) - u[1] * (s[0] * w[2] - s[2] * w[0]) +
           u[2] * (s[0] * w[1] - s[1] * w[0]);
}

int fmm_vtk_min_volume_ratio(const fmm_vtk_mesh *a, const fmm_vtk_mesh *b, double *ratio) {
    if (!a || !b || !ratio || a->npoints != b->npoints || a->ncells != b->ncells) return FMM_ERR_ARG;
    for (long c = 0; c <= a->ncells; ++c)
        if (a->offset[c] != b->offset[c]) return FMM_ERR_ARG;
    /* corner tetrahedra (vertex; three neighbours) per cell type */
    static const int hex[8][4] = {{0, 1, 3, 4}, {1, 2, 0, 5}, {2, 3, 1, 6}, {3, 0, 2, 7},
                                  {4, 7, 5, 0}, {5, 4, 6, 1}, {6, 5, 7, 2}, {7, 6, 4, 3}};
    static const int wedge[6][4] = {{0, 1, 2, 3}, {1, 2, 0, 4}, {2, 0, 1, 5},
                                    {3, 5, 4, 0}, {4, 3, 5, 1}, {5, 4, 3, 2}};
    static const int pyr[4][4] = {{0, 1, 3, 4}, {1, 2, 0, 4}, {2, 3, 1, 4}, {3, 0, 2, 4}};
    static const int tet[1][4] = {{0, 1, 2, 3}};
    double best = INFINITY;
    long n3 = 0;
    for (long c = 0; c < a->ncells; ++c) {
        if (a->types[c] != b->types[c]) return FMM_ERR_ARG;
        const long *nd = a->conn + a->offset[c];
        long len = a->offset[c + 1] - a->offset[c];
        for (long j = 0; j < len; ++j)
            if (nd[j] != b->conn[a->offset[c] + j]) return FMM_ERR_ARG;
        const int(*T)[4] = NULL;
        int nt = 0, need = 0;
        switch (a->types[c]) {
        case 10: T = tet, nt = 1, need = 4; break;
        case 12: T = hex, nt = 8, need = 8; break;
        case 13: T = wedge, nt = 6, need = 6; break;
        case 14: T = pyr, nt = 4, need = 5; break;
        default: continue;
        }
        if (len != need) return FMM_ERR_FORMAT;
        ++n3;
        for (int k = 0; k < nt; ++k) {
            double v0 = tet6(a->xyz, nd[T[k][0]], nd[T[k][1]], nd[T[k][2]], nd[T[k][3]]);
            double v1 = tet6(b->xyz, nd[T[k][0]], nd[T[k][1]], nd[T[k][2]], nd[T[k][3]]);
            if (v0 == 0) continue;
            if (v1 / v0 < best) best = v1 / v0;
        }
    }
    if (n3 == 0) return FMM_ERR_FORMAT;
    *ratio = best;
    return 0;
}
