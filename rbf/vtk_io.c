/* Legacy VTK (ASCII) unstructured grids: reader, writer, and the cell-volume check used
 * for mesh deformation. The reader and the writer use core/textio.h, as every reader and writer
 * of the project. */
#define _POSIX_C_SOURCE 200809L /* the POSIX calls of core/textio.h */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/textio.h"
#include "fmm_rbf.h"
#include "rbf/vtk_io.h"

void fmm_vtk_free(fmm_vtk_mesh *m) {
    if (!m) return;
    free(m->xyz), free(m->offset), free(m->conn), free(m->types);
    memset(m, 0, sizeof *m);
}

/* Tokens of a file read line by line (core/textio.h). The first error sets the message. */
typedef struct {
    text_reader r;
    const char *path;
    char *p;    /* the next unread character of r.line */
    char *back; /* a token given back (still valid: the line has not changed since) */
    int err;    /* after a read error, a NUL byte or no memory: its status (message set) */
    int eof;    /* no tokens left */
    char *msg;
    size_t msglen;
} lexer;

static int fail(lexer *L, int rc, const char *fmt, ...) {
    if (L->msg && L->msglen && !L->msg[0]) {
        int k = L->r.lineno ? snprintf(L->msg, L->msglen, "%s:%ld: ", L->path, L->r.lineno)
                            : snprintf(L->msg, L->msglen, "%s: ", L->path);
        if (k > 0 && (size_t)k < L->msglen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(L->msg + k, L->msglen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

/* a status of text_next (line, end or error): 0 for a line or the end, else the mesh status,
 * with the message set */
static int line_status(lexer *L, int rl) {
    if (rl >= 0) return 0;
    text_describe(&L->r, rl, L->path, L->msg, L->msglen);
    return rl == TEXT_ERR_NOMEM ? FMM_ERR_NOMEM : rl == TEXT_ERR_READ ? FMM_ERR_IO : FMM_ERR_FORMAT;
}

/* the next whitespace-separated token (NUL-terminated in place), or NULL at the end of the file
 * or on an error (L->err) */
static char *next_tok(lexer *L) {
    if (L->back) {
        char *t = L->back;
        L->back = NULL;
        return t;
    }
    for (;;) {
        while (text_is_space(*L->p)) ++L->p;
        if (*L->p) break;
        if (L->eof) return NULL;
        int rl = text_next(&L->r);
        if (rl != TEXT_LINE) {
            L->eof = 1;
            L->err = line_status(L, rl);
            return NULL;
        }
        L->p = L->r.line;
    }
    char *s = L->p;
    while (*L->p && !text_is_space(*L->p)) ++L->p;
    if (*L->p) *L->p++ = '\0';
    return s;
}

/* the next token, which must be want (NULL: any); else NULL, with a message naming what */
static char *expect_tok(lexer *L, const char *want, const char *what) {
    char *t = next_tok(L);
    if (!t && !L->err) fail(L, FMM_ERR_FORMAT, "the file ends where %s was expected", what);
    if (t && want && strcmp(t, want)) {
        fail(L, FMM_ERR_FORMAT, "expected %s, got '%.40s'", what, t);
        return NULL;
    }
    return t;
}

/* the status after expect_tok returned NULL */
static int lex_error(const lexer *L) {
    return L->err ? L->err : FMM_ERR_FORMAT;
}

static int tok_long(lexer *L, long *v, const char *what) {
    char *t = expect_tok(L, NULL, what);
    if (!t) return lex_error(L);
    const char *e;
    int nr = text_parse_long(t, &e, v);
    if (!nr && *e) nr = TEXT_NUM_SYNTAX;
    if (nr)
        return fail(L, FMM_ERR_FORMAT, "%s: '%.40s' %s", what, t,
                    nr == TEXT_NUM_SYNTAX ? "is not an integer" : text_num_what(nr));
    return 0;
}

static int tok_double(lexer *L, double *v, const char *what) {
    char *t = expect_tok(L, NULL, what);
    if (!t) return lex_error(L);
    const char *e;
    int nr = text_parse_double(t, &e, v);
    if (!nr && *e) nr = TEXT_NUM_SYNTAX;
    if (nr) return fail(L, FMM_ERR_FORMAT, "%s: '%.40s' %s", what, t, text_num_what(nr));
    return 0;
}

/* counts above this are refused: arrays are indexed by long, with room for sums of counts */
#define VTK_COUNT_MAX (LONG_MAX / 4)

/* an integer that must lie in [lo, hi] */
static int tok_count(lexer *L, long *v, long lo, long hi, const char *what) {
    int rc = tok_long(L, v, what);
    if (!rc && (*v < lo || *v > hi))
        rc = fail(L, FMM_ERR_FORMAT, "%s must be in %ld..%ld, got %ld", what, lo, hi, *v);
    return rc;
}

static int is_section(const char *t) {
    static const char *k[] = {"POINTS",    "CELLS", "CELL_TYPES", "POINT_DATA",
                              "CELL_DATA", "FIELD", "METADATA",   NULL};
    for (int i = 0; k[i]; ++i)
        if (!strcmp(t, k[i])) return 1;
    return 0;
}

/* room for need elements in the array a (capacity cap); the file's counts are not trusted
 * for the allocation, which grows with what is read */
#define VTK_GROW(L, a, cap, need)                                                                  \
    do {                                                                                           \
        void *g_ = text_grow((a), &(cap), (size_t)(need), sizeof *(a));                            \
        if (!g_) return fail((L), FMM_ERR_NOMEM, "out of memory");                                 \
        (a) = g_;                                                                                  \
    } while (0)

static int read_points(lexer *L, fmm_vtk_mesh *m) {
    long n;
    int rc = tok_count(L, &n, 0, VTK_COUNT_MAX / 3, "the POINTS count");
    if (rc) return rc;
    if (!expect_tok(L, NULL, "the POINTS data type")) return lex_error(L);
    size_t cap = 0;
    VTK_GROW(L, m->xyz, cap, 1);
    for (long i = 0; i < 3 * n; ++i) {
        VTK_GROW(L, m->xyz, cap, i + 1);
        if ((rc = tok_double(L, &m->xyz[i], "a POINTS coordinate"))) return rc;
    }
    m->npoints = n;
    return 0;
}

static int read_cells(lexer *L, fmm_vtk_mesh *m) {
    long a, b;
    int rc = tok_count(L, &a, 0, VTK_COUNT_MAX, "the CELLS count");
    if (!rc) rc = tok_count(L, &b, 0, VTK_COUNT_MAX, "the CELLS size");
    if (rc) return rc;
    size_t ocap = 0, ccap = 0;
    VTK_GROW(L, m->offset, ocap, 1);
    VTK_GROW(L, m->conn, ccap, 1);
    char *u = next_tok(L);
    if (L->err) return L->err;
    if (u && !strcmp(u, "OFFSETS")) {
        /* VTK 5.1: a offsets (ncells + 1), then CONNECTIVITY with b entries */
        if (!expect_tok(L, NULL, "the OFFSETS data type")) return lex_error(L);
        if (a < 1) return fail(L, FMM_ERR_FORMAT, "the CELLS count must be >= 1 with OFFSETS");
        for (long i = 0; i < a; ++i) {
            VTK_GROW(L, m->offset, ocap, i + 1);
            if ((rc = tok_long(L, &m->offset[i], "an OFFSETS entry"))) return rc;
        }
        if (!expect_tok(L, "CONNECTIVITY", "'CONNECTIVITY'") ||
            !expect_tok(L, NULL, "the CONNECTIVITY data type"))
            return lex_error(L);
        for (long i = 0; i < b; ++i) {
            VTK_GROW(L, m->conn, ccap, i + 1);
            if ((rc = tok_long(L, &m->conn[i], "a CONNECTIVITY entry"))) return rc;
        }
        if (m->offset[0] != 0 || m->offset[a - 1] != b)
            return fail(L, FMM_ERR_FORMAT, "OFFSETS must run from 0 to the CONNECTIVITY size %ld",
                        b);
        for (long i = 0; i + 1 < a; ++i) /* every cell has a node: as the classic form needs */
            if (m->offset[i + 1] <= m->offset[i])
                return fail(L, FMM_ERR_FORMAT,
                            "OFFSETS entry %ld is not larger than the one before (a cell with no "
                            "nodes)",
                            i + 1);
        m->ncells = a - 1;
        return 0;
    }
    /* classic: a cells, b numbers in all (each cell: its node count, then its nodes) */
    L->back = u;
    long used = 0, k = 0;
    m->offset[0] = 0;
    for (long c = 0; c < a; ++c) {
        long cnt;
        if ((rc = tok_count(L, &cnt, 1, VTK_COUNT_MAX, "a cell's node count"))) return rc;
        if (cnt > b - used - 1)
            return fail(L, FMM_ERR_FORMAT, "the cells hold more numbers than the CELLS size %ld",
                        b);
        used += 1 + cnt;
        for (long j = 0; j < cnt; ++j, ++k) {
            VTK_GROW(L, m->conn, ccap, k + 1);
            if ((rc = tok_long(L, &m->conn[k], "a cell's node index"))) return rc;
        }
        VTK_GROW(L, m->offset, ocap, c + 2);
        m->offset[c + 1] = k;
    }
    if (used != b)
        return fail(L, FMM_ERR_FORMAT, "the cells hold %ld numbers, the CELLS size is %ld", used,
                    b);
    m->ncells = a;
    return 0;
}

static int read_types(lexer *L, fmm_vtk_mesh *m, long *ntypes) {
    int rc = tok_count(L, ntypes, 0, VTK_COUNT_MAX, "the CELL_TYPES count");
    if (rc) return rc;
    size_t cap = 0;
    VTK_GROW(L, m->types, cap, 1);
    for (long i = 0; i < *ntypes; ++i) {
        long v;
        VTK_GROW(L, m->types, cap, i + 1);
        if ((rc = tok_count(L, &v, 1, 100, "a cell type"))) return rc;
        m->types[i] = (int)v;
    }
    return 0;
}

static int read_mesh(lexer *L, fmm_vtk_mesh *m) {
    /* header: line 1 "# vtk DataFile Version x.y", line 2 title */
    int rl = text_next(&L->r);
    if (rl == TEXT_LINE && strncmp(L->r.line, "# vtk DataFile Version", 22))
        return fail(L, FMM_ERR_FORMAT, "not a legacy VTK file (no '# vtk DataFile Version')");
    if (rl == TEXT_LINE) rl = text_next(&L->r);
    if (rl == TEXT_EOF) return fail(L, FMM_ERR_FORMAT, "the file ends inside the VTK header");
    if (rl < 0) return line_status(L, rl);
    L->p = L->r.line + L->r.len;
    if (!expect_tok(L, "ASCII", "'ASCII' (BINARY files are not supported)") ||
        !expect_tok(L, "DATASET", "'DATASET'") ||
        !expect_tok(L, "UNSTRUCTURED_GRID", "'UNSTRUCTURED_GRID' (the only dataset supported)"))
        return lex_error(L);
    int have_pts = 0, have_cells = 0, have_types = 0, rc;
    long ntypes = -1;
    char *t = next_tok(L);
    while (t) {
        if (!strcmp(t, "POINTS")) {
            if (have_pts++) return fail(L, FMM_ERR_FORMAT, "a second POINTS section");
            if ((rc = read_points(L, m))) return rc;
        } else if (!strcmp(t, "CELLS")) {
            if (have_cells++) return fail(L, FMM_ERR_FORMAT, "a second CELLS section");
            if ((rc = read_cells(L, m))) return rc;
        } else if (!strcmp(t, "CELL_TYPES")) {
            if (have_types++) return fail(L, FMM_ERR_FORMAT, "a second CELL_TYPES section");
            if ((rc = read_types(L, m, &ntypes))) return rc;
        } else if (!strcmp(t, "POINT_DATA") || !strcmp(t, "CELL_DATA")) {
            /* attribute data follows the geometry: ignored, but read through (a NUL byte there is
               an error as anywhere else) */
            int rl = 0;
            while (!L->eof && (rl = text_next(&L->r)) == TEXT_LINE) continue;
            if (!L->eof) L->eof = 1, L->err = line_status(L, rl);
            break;
        } else if (!is_section(t) && (have_pts || have_cells || have_types)) {
            return fail(L, FMM_ERR_FORMAT, "unexpected '%.40s' inside the geometry", t);
        } else {
            /* FIELD / METADATA blocks or unknown leading sections: skip to the next section */
            do t = next_tok(L);
            while (t && !(!strcmp(t, "POINTS") || !strcmp(t, "CELLS") || !strcmp(t, "CELL_TYPES") ||
                          !strcmp(t, "POINT_DATA") || !strcmp(t, "CELL_DATA")));
            continue;
        }
        t = next_tok(L);
    }
    if (L->err) return L->err;
    if (!have_pts) return fail(L, FMM_ERR_FORMAT, "no POINTS section");
    if (have_cells != have_types)
        return fail(L, FMM_ERR_FORMAT, "%s without %s", have_cells ? "CELLS" : "CELL_TYPES",
                    have_cells ? "CELL_TYPES" : "CELLS");
    if (have_cells && ntypes != m->ncells)
        return fail(L, FMM_ERR_FORMAT, "%ld CELL_TYPES for %ld CELLS", ntypes, m->ncells);
    for (long i = 0; have_cells && i < m->offset[m->ncells]; ++i)
        if (m->conn[i] < 0 || m->conn[i] >= m->npoints)
            return fail(L, FMM_ERR_FORMAT, "node index %ld out of range 0..%ld", m->conn[i],
                        m->npoints - 1);
    if (!have_cells) {
        m->offset = malloc(sizeof(long));
        if (!m->offset) return fail(L, FMM_ERR_NOMEM, "out of memory");
        m->offset[0] = 0;
    }
    return 0;
}

int fmm_vtk_read_msg(const char *path, fmm_vtk_mesh *mesh, char *msg, size_t msglen) {
    if (msg && msglen) msg[0] = '\0';
    if (mesh) memset(mesh, 0, sizeof *mesh);
    if (!path || !mesh) {
        if (msg && msglen) snprintf(msg, msglen, "fmm_vtk_read: NULL argument");
        return FMM_ERR_ARG;
    }
    lexer L = {.path = path, .msg = msg, .msglen = msglen};
    int rl = text_open(&L.r, path);
    if (rl) {
        text_describe(&L.r, rl, path, msg, msglen);
        return rl == TEXT_ERR_NOMEM ? FMM_ERR_NOMEM : FMM_ERR_IO;
    }
    fmm_vtk_mesh m;
    memset(&m, 0, sizeof m);
    int rc = read_mesh(&L, &m);
    text_close(&L.r);
    if (rc)
        fmm_vtk_free(&m);
    else
        *mesh = m;
    return rc;
}

int fmm_vtk_read(const char *path, fmm_vtk_mesh *mesh) {
    return fmm_vtk_read_msg(path, mesh, NULL, 0);
}

int fmm_vtk_write(const char *path, const fmm_vtk_mesh *m, const char *title) {
    if (!path || !m || m->npoints < 0 || m->ncells < 0 || (m->npoints > 0 && !m->xyz) ||
        (m->ncells > 0 && (!m->offset || !m->conn || !m->types)))
        return FMM_ERR_ARG;
    text_out f;
    if (text_out_open(&f, path)) return FMM_ERR_IO;
    char tt[256];
    snprintf(tt, sizeof tt, "%s", title ? title : "fmm rbf mesh");
    for (char *c = tt; *c; ++c)
        if (*c == '\n' || *c == '\r') *c = ' ';
    text_out_printf(&f, "# vtk DataFile Version 3.0\n%s\nASCII\nDATASET UNSTRUCTURED_GRID\n", tt);
    text_out_printf(&f, "POINTS %ld double\n", m->npoints);
    for (long i = 0; i < m->npoints; ++i)
        text_out_printf(&f, "%.17g %.17g %.17g\n", m->xyz[3 * i], m->xyz[3 * i + 1],
                        m->xyz[3 * i + 2]);
    long tot = m->ncells > 0 ? m->offset[m->ncells] + m->ncells : 0;
    text_out_printf(&f, "CELLS %ld %ld\n", m->ncells, tot);
    for (long c = 0; c < m->ncells; ++c) {
        text_out_printf(&f, "%ld", m->offset[c + 1] - m->offset[c]);
        for (long j = m->offset[c]; j < m->offset[c + 1]; ++j)
            text_out_printf(&f, " %ld", m->conn[j]);
        text_out_printf(&f, "\n");
    }
    text_out_printf(&f, "CELL_TYPES %ld\n", m->ncells);
    for (long c = 0; c < m->ncells; ++c) text_out_printf(&f, "%d\n", m->types[c]);
    return text_out_commit(&f) ? FMM_ERR_IO : 0;
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
    if (!a || !b || !ratio || a->npoints != b->npoints || a->ncells != b->ncells)
        return FMM_ERR_ARG;
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
        case 10:
            T = tet, nt = 1, need = 4;
            break;
        case 12:
            T = hex, nt = 8, need = 8;
            break;
        case 13:
            T = wedge, nt = 6, need = 6;
            break;
        case 14:
            T = pyr, nt = 4, need = 5;
            break;
        default:
            continue;
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
