/*
 * pointsets.c - deterministic test point sets (uniform, Plummer, sphere surface, SPC/E-like
 * water) and the "x y z q" text reader/writer. See pointsets.h.
 */
#define _POSIX_C_SOURCE 200809L /* the POSIX calls of core/textio.h */
#include "pointsets.h"

#include "../core/textio.h"

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PTS_PI 3.14159265358979323846

/* ---------------------------------------------------------------------------------------
 * PRNG: xoshiro256** (Blackman & Vigna), state seeded from splitmix64.
 * ------------------------------------------------------------------------------------- */

typedef struct {
    uint64_t s[4];
} pts_rng;

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* stream: independent sub-streams of one seed (positions, charges, ...). */
static void rng_seed(pts_rng *r, uint64_t seed, uint64_t stream) {
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);
    /* Mix the stream in once more so that (seed, stream) pairs do not alias trivially. */
    x = splitmix64(&x) + stream;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl64(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(pts_rng *r) {
    uint64_t *s = r->s;
    const uint64_t result = rotl64(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl64(s[3], 45);
    return result;
}

/* Uniform in [0, 1), 53 random bits. */
static double rng_u01(pts_rng *r) {
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in the open interval (0, 1). */
static double rng_open01(pts_rng *r) {
    return ((double)(rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

/* Uniform in [0, n) for n >= 1 (Lemire's multiply-shift with rejection, unbiased). */
static uint64_t rng_below(pts_rng *r, uint64_t n) {
    /* n is at most a few 1e7 here, so a 64-bit rejection loop is simple and exact. */
    uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
    uint64_t x;
    do {
        x = rng_next(r);
    } while (x >= limit);
    return x % n;
}

/* Uniform random unit vector. */
static void rng_unit_vector(pts_rng *r, double v[3]) {
    double z = 2.0 * rng_u01(r) - 1.0;
    double phi = 2.0 * PTS_PI * rng_u01(r);
    double s = sqrt(fmax(0.0, 1.0 - z * z));
    v[0] = s * cos(phi);
    v[1] = s * sin(phi);
    v[2] = z;
}

enum { STREAM_POS = 1, STREAM_CHARGE = 2, STREAM_SITES = 3, STREAM_ORIENT = 4 };

/* ---------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------- */

const char *pts_strerror(int status) {
    switch (status) {
    case PTS_OK:
        return "success";
    case PTS_ERR_ARG:
        return "invalid argument";
    case PTS_ERR_NOMEM:
        return "out of memory";
    case PTS_ERR_IO:
        return "cannot open, read or write file";
    case PTS_ERR_PARSE:
        return "malformed line (not a number, a wrong count, or a NUL byte)";
    case PTS_ERR_NONFINITE:
        return "number not finite (nan, inf) or out of the range of a double";
    case PTS_ERR_EMPTY:
        return "no particles";
    case PTS_ERR_PLACE:
        return "could not place water molecule without overlap";
    default:
        return "unknown error";
    }
}

/* n particles fit in size_t-indexed arrays of 3n doubles. */
static int count_ok(long n, long atoms_per_item) {
    if (n < 1) return 0;
    if ((unsigned long)n > (unsigned long)(LONG_MAX / (3 * atoms_per_item))) return 0;
    if ((uint64_t)n * (uint64_t)(3 * atoms_per_item) > (uint64_t)(SIZE_MAX / sizeof(double)))
        return 0;
    return 1;
}

/* Charges uniform in [-1, 1], shifted to zero sum. Two correction passes with a long double
 * accumulator leave |sum q| at the rounding level of the individual charges. */
static void neutral_charges(long n, uint64_t seed, double *q) {
    pts_rng r;
    rng_seed(&r, seed, STREAM_CHARGE);
    for (long i = 0; i < n; i++) q[i] = 2.0 * rng_u01(&r) - 1.0;
    if (n == 1) {
        q[0] = 0.0; /* the only neutral single charge */
        return;
    }
    for (int pass = 0; pass < 2; pass++) {
        long double sum = 0.0L;
        for (long i = 0; i < n; i++) sum += q[i];
        double mean = (double)(sum / (long double)n);
        for (long i = 0; i < n; i++) q[i] -= mean;
    }
}

/* ---------------------------------------------------------------------------------------
 * Generators
 * ------------------------------------------------------------------------------------- */

int pts_uniform(long n, uint64_t seed, double *xyz, double *q) {
    if (!xyz || !q || !count_ok(n, 1)) return PTS_ERR_ARG;
    pts_rng r;
    rng_seed(&r, seed, STREAM_POS);
    for (long i = 0; i < 3 * n; i++) xyz[i] = rng_u01(&r);
    neutral_charges(n, seed, q);
    return PTS_OK;
}

int pts_plummer(long n, uint64_t seed, double *xyz, double *q) {
    if (!xyz || !q || !count_ok(n, 1)) return PTS_ERR_ARG;
    const double a = 1.0, rmax = 100.0 * a;
    pts_rng r;
    rng_seed(&r, seed, STREAM_POS);
    for (long i = 0; i < n; i++) {
        double rad;
        do {
            /* Inverse of the enclosed-mass fraction M(r) = r^3 / (r^2 + a^2)^(3/2). */
            double u = rng_open01(&r);
            rad = a / sqrt(pow(u, -2.0 / 3.0) - 1.0);
        } while (!(rad <= rmax)); /* also redraws inf/nan from u rounding to 1 */
        double v[3];
        rng_unit_vector(&r, v);
        for (int d = 0; d < 3; d++) xyz[3 * i + d] = rad * v[d];
    }
    neutral_charges(n, seed, q);
    return PTS_OK;
}

int pts_sphere_surface(long n, uint64_t seed, double *xyz, double *q) {
    if (!xyz || !q || !count_ok(n, 1)) return PTS_ERR_ARG;
    pts_rng r;
    rng_seed(&r, seed, STREAM_POS);
    for (long i = 0; i < n; i++) rng_unit_vector(&r, xyz + 3 * i);
    neutral_charges(n, seed, q);
    return PTS_OK;
}

int pts_ball(long n, uint64_t seed, double *xyz, double *q) {
    if (!xyz || !q || !count_ok(n, 1)) return PTS_ERR_ARG;
    pts_rng r;
    rng_seed(&r, seed, STREAM_POS);
    for (long i = 0; i < n; i++) {
        double *v = xyz + 3 * i, r2;
        do { /* the cube [-1, 1)^3, drawn again outside the ball */
            r2 = 0.0;
            for (int d = 0; d < 3; d++) v[d] = 2.0 * rng_u01(&r) - 1.0, r2 += v[d] * v[d];
        } while (r2 > 1.0);
    }
    neutral_charges(n, seed, q);
    return PTS_OK;
}

/* SPC/E geometry and charges. */
#define WATER_DENSITY 33.4 /* molecules per nm^3 */
#define WATER_QO (-0.8476)
#define WATER_QH 0.4238
#define WATER_ROH 0.1                                    /* nm */
#define WATER_HALF_ANGLE (0.5 * 109.47 * PTS_PI / 180.0) /* half of H-O-H */
#define WATER_MIN_DIST 0.05                              /* nm, enforced between molecules */
#define WATER_MAX_TRIES 1000

static double wrap_coord(double x, double box) {
    x = fmod(x, box);
    if (x < 0.0) x += box;
    if (x >= box) x = nextafter(box, 0.0); /* x was a tiny negative number */
    return x;
}

/* Squared minimum-image distance in a cubic box. */
static double dist2_pbc(const double *a, const double *b, double box) {
    double s = 0.0;
    for (int d = 0; d < 3; d++) {
        double t = a[d] - b[d];
        t -= box * nearbyint(t / box);
        s += t * t;
    }
    return s;
}

/* 1 if the 3 atoms of molecule `mol` (at xyz + 9*mol) keep WATER_MIN_DIST from molecule `other`. */
static int molecules_apart(const double *xyz, long mol, long other, double box) {
    const double dmin2 = WATER_MIN_DIST * WATER_MIN_DIST;
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            if (dist2_pbc(xyz + 9 * mol + 3 * a, xyz + 9 * other + 3 * b, box) < dmin2) return 0;
    return 1;
}

int pts_water(long nmol, uint64_t seed, double *xyz, double *q, double *box_edge) {
    if (!xyz || !q || !count_ok(nmol, 3)) return PTS_ERR_ARG;

    const double box = cbrt((double)nmol / WATER_DENSITY);
    long m = (long)ceil(cbrt((double)nmol));
    while (m > 1 && (m - 1) * (m - 1) * (m - 1) >= nmol) m--;
    while (m * m * m < nmol) m++;
    const long nsites = m * m * m;
    const double spacing = box / (double)m;
    const double jitter = 0.1 * spacing; /* per axis, uniform in [-jitter, jitter] */

    /* occ[site] = molecule index or -1. Molecules are numbered in site order, so when
     * molecule k is placed, every molecule with a smaller index is already in place. */
    long *occ = malloc((size_t)nsites * sizeof *occ);
    if (!occ) return PTS_ERR_NOMEM;

    /* Choose nmol of the m^3 sites at random (vacancies spread over the box). */
    if (nmol == nsites) {
        for (long s = 0; s < nsites; s++) occ[s] = 1;
    } else {
        long *perm = malloc((size_t)nsites * sizeof *perm);
        if (!perm) {
            free(occ);
            return PTS_ERR_NOMEM;
        }
        pts_rng rs;
        rng_seed(&rs, seed, STREAM_SITES);
        for (long s = 0; s < nsites; s++) perm[s] = s;
        for (long s = 0; s < nmol; s++) { /* partial Fisher-Yates */
            long j = s + (long)rng_below(&rs, (uint64_t)(nsites - s));
            long t = perm[s];
            perm[s] = perm[j];
            perm[j] = t;
        }
        for (long s = 0; s < nsites; s++) occ[s] = 0;
        for (long s = 0; s < nmol; s++) occ[perm[s]] = 1;
        free(perm);
    }
    {
        long k = 0;
        for (long s = 0; s < nsites; s++) occ[s] = occ[s] ? k++ : -1;
    }

    /* Molecule frame: O at the origin, H in the xz plane, symmetric about z. */
    const double hx = WATER_ROH * sin(WATER_HALF_ANGLE), hz = WATER_ROH * cos(WATER_HALF_ANGLE);
    const double frame[3][3] = {{0.0, 0.0, 0.0}, {hx, 0.0, hz}, {-hx, 0.0, hz}};

    pts_rng rp, ro;
    rng_seed(&rp, seed, STREAM_POS);
    rng_seed(&ro, seed, STREAM_ORIENT);
    int status = PTS_OK;

    for (long site = 0; site < nsites && status == PTS_OK; site++) {
        const long k = occ[site];
        if (k < 0) continue;
        const long ix = site / (m * m), iy = (site / m) % m, iz = site % m;
        const double c0[3] = {((double)ix + 0.5) * spacing, ((double)iy + 0.5) * spacing,
                              ((double)iz + 0.5) * spacing};
        int placed = 0;
        for (int attempt = 0; attempt < WATER_MAX_TRIES && !placed; attempt++) {
            double c[3];
            for (int d = 0; d < 3; d++) c[d] = c0[d] + jitter * (2.0 * rng_u01(&rp) - 1.0);
            /* Uniform random rotation from a uniform unit quaternion (Shoemake 1992). */
            double u1 = rng_u01(&ro), u2 = rng_u01(&ro), u3 = rng_u01(&ro);
            double a = sqrt(1.0 - u1), b = sqrt(u1);
            double qw = a * sin(2.0 * PTS_PI * u2), qx = a * cos(2.0 * PTS_PI * u2);
            double qy = b * sin(2.0 * PTS_PI * u3), qz = b * cos(2.0 * PTS_PI * u3);
            double R[3][3] = {
                {1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw)},
                {2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw)},
                {2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy)}};
            for (int at = 0; at < 3; at++)
                for (int d = 0; d < 3; d++) {
                    double p = c[d] + R[d][0] * frame[at][0] + R[d][1] * frame[at][1] +
                               R[d][2] * frame[at][2];
                    xyz[9 * k + 3 * at + d] = wrap_coord(p, box);
                }

            /* Check against molecules already placed. With m >= 3 the 27 sites around this
             * one are distinct and atoms from sites two apart are always >= 0.15 nm apart
             * (spacing >= 0.21 nm, jitter + bond <= 0.1 + 0.17 spacing); with m <= 2 there
             * are at most 8 molecules, so check them all. */
            placed = 1;
            if (m <= 2) {
                for (long o = 0; o < k && placed; o++) placed = molecules_apart(xyz, k, o, box);
            } else {
                for (long dx = -1; dx <= 1 && placed; dx++)
                    for (long dy = -1; dy <= 1 && placed; dy++)
                        for (long dz = -1; dz <= 1 && placed; dz++) {
                            long jx = (ix + dx + m) % m, jy = (iy + dy + m) % m,
                                 jz = (iz + dz + m) % m;
                            long o = occ[(jx * m + jy) * m + jz];
                            if (o >= 0 && o < k) placed = molecules_apart(xyz, k, o, box);
                        }
            }
        }
        if (!placed) status = PTS_ERR_PLACE;
        q[3 * k] = WATER_QO;
        q[3 * k + 1] = WATER_QH;
        q[3 * k + 2] = WATER_QH;
    }
    free(occ);
    if (status == PTS_OK && box_edge) *box_edge = box;
    return status;
}

/* ---------------------------------------------------------------------------------------
 * Text I/O
 * ------------------------------------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int pts_box_comment(const char *line, double box[9]) {
    const char *s = line;
    while (text_is_space(*s)) ++s;
    if (*s++ != '#') return 0;
    while (text_is_space(*s)) ++s;
    if (strncmp(s, "box", 3) || (s[3] && !text_is_space(s[3]))) return 0;
    s += 3;
    int count = 0;
    for (;;) {
        while (text_is_space(*s)) ++s;
        if (!*s) break;
        double v;
        if (count == 9 || text_parse_double(s, &s, &v)) return -1;
        box[count++] = v;
    }
    return count == 3 || count == 9 ? count : -1;
}

int pts_read_rows(const char *path, const char *layout, int min_cols, int max_cols, int *cols,
                  long *n, double **rows, double **last, long **lines, double *box, int *nbox,
                  char *err, size_t errlen) {
    if (err && errlen > 0) err[0] = '\0';
    if (nbox) *nbox = 0;
    if (n) *n = 0;
    if (rows) *rows = NULL;
    if (last) *last = NULL;
    if (lines) *lines = NULL;
    if (!path || !layout || !n || !rows || min_cols < (last ? 2 : 1) || (nbox && !box) ||
        (max_cols && max_cols < min_cols)) {
        set_err(err, errlen, "pts_read_rows: invalid argument");
        return PTS_ERR_ARG;
    }
    text_reader r;
    int rl = text_open(&r, path);
    if (rl) {
        text_describe(&r, rl, path, err, errlen);
        return rl == TEXT_ERR_NOMEM ? PTS_ERR_NOMEM : PTS_ERR_IO;
    }
    double *v = NULL, *w = NULL;
    long *ln = NULL;
    size_t nv = 0, vcap = 0, wcap = 0, lcap = 0, nrow = 0;
    int c = 0, status = PTS_OK;
    int box_seen = 0;
    while (status == PTS_OK && (rl = text_next(&r)) == TEXT_LINE) {
        const char *p = r.line;
        int k = 0;
        if (nbox && !box_seen && (*nbox = pts_box_comment(p, box)) != 0) box_seen = 1;
        for (;;) {
            while (text_is_space(*p)) ++p;
            if (!*p || *p == '#') break;
            double x;
            int nr = text_parse_double(p, &p, &x);
            if (nr) {
                status = nr == TEXT_NUM_SYNTAX ? PTS_ERR_PARSE : PTS_ERR_NONFINITE;
                set_err(err, errlen, "%s:%ld: column %d: '%.*s' %s", path, r.lineno, k + 1,
                        text_token_len(p), p, text_num_what(nr));
                break;
            }
            double *g = text_grow(v, &vcap, nv + 1, sizeof *v);
            if (!g) {
                status = PTS_ERR_NOMEM;
                break;
            }
            v = g;
            v[nv++] = x, ++k;
        }
        if (status != PTS_OK || !k) continue;
        if (c ? k != c : k < min_cols || (max_cols && k > max_cols)) {
            char want[64];
            if (min_cols == max_cols)
                snprintf(want, sizeof want, "%d", min_cols);
            else if (c)
                snprintf(want, sizeof want, "%d like the first row", c);
            else if (!max_cols)
                snprintf(want, sizeof want, "at least %d", min_cols);
            else
                snprintf(want, sizeof want, "%d to %d", min_cols, max_cols);
            set_err(err, errlen, "%s:%ld: %d number%s, expected %s (%s)", path, r.lineno, k,
                    k == 1 ? "" : "s", want, layout);
            status = PTS_ERR_PARSE;
            continue;
        }
        c = k;
        double *gw = last ? text_grow(w, &wcap, nrow + 1, sizeof *w) : NULL;
        if (gw) w = gw;
        long *gl = lines ? text_grow(ln, &lcap, nrow + 1, sizeof *ln) : NULL;
        if (gl) ln = gl;
        if ((last && !gw) || (lines && !gl) || nrow >= LONG_MAX) {
            status = PTS_ERR_NOMEM;
            continue;
        }
        if (last) w[nrow] = v[--nv];
        if (lines) ln[nrow] = r.lineno;
        ++nrow;
    }
    if (status == PTS_ERR_NOMEM) set_err(err, errlen, "%s:%ld: out of memory", path, r.lineno);
    if (status == PTS_OK && rl < 0) {
        status = rl == TEXT_ERR_NOMEM ? PTS_ERR_NOMEM
                 : rl == TEXT_ERR_NUL ? PTS_ERR_PARSE
                                      : PTS_ERR_IO;
        text_describe(&r, rl, path, err, errlen);
    }
    text_close(&r);
    if (status == PTS_OK && !nrow) {
        status = PTS_ERR_EMPTY;
        set_err(err, errlen, "%s: no rows of numbers (expected lines '%s')", path, layout);
    }
    if (status != PTS_OK) {
        free(v), free(w), free(ln);
        return status;
    }
    if (cols) *cols = c;
    *n = (long)nrow, *rows = v;
    if (last) *last = w;
    if (lines) *lines = ln;
    return PTS_OK;
}

int pts_read_xyzq(const char *path, long *n, double **xyz, double **q, char *err, size_t errlen) {
    return pts_read_rows(path, "x y z q", 4, 4, NULL, n, xyz, q, NULL, NULL, NULL, err, errlen);
}

int pts_write_xyzq(const char *path, long n, const double *xyz, const double *q) {
    if (!path || !xyz || !q || !count_ok(n, 1)) return PTS_ERR_ARG;
    for (long i = 0; i < n; i++)
        if (!isfinite(xyz[3 * i]) || !isfinite(xyz[3 * i + 1]) || !isfinite(xyz[3 * i + 2]) ||
            !isfinite(q[i]))
            return PTS_ERR_NONFINITE;
    text_out o;
    if (text_out_open(&o, path)) return PTS_ERR_IO;
    for (long i = 0; i < n; i++)
        text_out_printf(&o, "%.17g %.17g %.17g %.17g\n", xyz[3 * i], xyz[3 * i + 1], xyz[3 * i + 2],
                        q[i]);
    return text_out_commit(&o) ? PTS_ERR_IO : PTS_OK;
}
