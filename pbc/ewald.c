/* Plain Ewald sum, the reference for the periodic FMM (tin-foil, neutralising background). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/reduce.h"
#include "core/scale.h"
#include "fmm.h"

#define PI 3.14159265358979323846

/* Box, charges and positions checked; the positions wrapped into [0, L) and, with the charges,
 * brought to units of 2^el (lengths) and 2^eq (charges) (core/scale.h): w (3n), qs (n), bs (3). */
static int prepare(long n, const double *xyz, const double *q, const double box[3], double *w,
                   double *qs, double bs[3], int *el, int *eq) {
    double bmax = 0, qmax = 0;
    for (int d = 0; d < 3; ++d) {
        if (!(isfinite(box[d]) && box[d] > 0)) return FMM_ERR_BOX;
        bmax = fmax(bmax, box[d]);
    }
    for (long i = 0; i < n; ++i) {
        if (!isfinite(q[i])) return FMM_ERR_NONFINITE;
        qmax = fmax(qmax, fabs(q[i]));
        for (int d = 0; d < 3; ++d) {
            double v = xyz[3 * i + d];
            if (!isfinite(v)) return FMM_ERR_NONFINITE;
            v -= box[d] * floor(v / box[d]);
            w[3 * i + d] = v < box[d] ? v : 0.0;
        }
    }
    /* wrapped, no coordinate exceeds its edge */
    *el = fmm_length_exponent(bmax, 0.0), *eq = fmm_scale_exponent(qmax);
    const double fl = ldexp(1.0, -*el), fq = ldexp(1.0, -*eq);
    for (int d = 0; d < 3; ++d) bs[d] = fmm_pow2(box[d], fl, -*el);
    for (long i = 0; i < n; ++i) {
        qs[i] = fmm_pow2(q[i], fq, -*eq);
        for (int d = 0; d < 3; ++d) w[3 * i + d] = fmm_pow2(w[3 * i + d], fl, -*el);
    }
    return FMM_OK;
}

/* the k-space grid: wave vector kk <-> integer components m in [-kmax, kmax]^3 */
typedef struct kgrid {
    int kmax[3], w[3];
    const double *tab[3]; /* per axis [n][w] (cos, sin) of 2 pi m_d x_d / L_d */
} kgrid;

static void k_components(const kgrid *g, long kk, int m[3]) {
    m[0] = (int)(kk / ((long)g->w[2] * g->w[1])) - g->kmax[0];
    m[1] = (int)((kk / g->w[2]) % g->w[1]) - g->kmax[1];
    m[2] = (int)(kk % g->w[2]) - g->kmax[2];
}

/* exp(i k.x_j) = (*re, *im) as the product of the three axes' tables */
static void k_phase(const kgrid *g, long j, const int m[3], double *re, double *im) {
    const double *p[3];
    for (int d = 0; d < 3; ++d) p[d] = g->tab[d] + 2 * ((size_t)j * g->w[d] + m[d] + g->kmax[d]);
    const double ar = p[0][0] * p[1][0] - p[0][1] * p[1][1],
                 ai = p[0][0] * p[1][1] + p[0][1] * p[1][0];
    *re = ar * p[2][0] - ai * p[2][1], *im = ar * p[2][1] + ai * p[2][0];
}

int fmm_ewald(long n, const double *xyz, const double *q_in, const double box_in[3], double tol,
              double *phi, double *field, double *energy, double *virial, int threads) {
    if (n < 1) return FMM_ERR_NPTS;
    if (!xyz || !q_in || !box_in) return FMM_ERR_ARG;
    if (!(tol >= FMM_TOL_MIN && tol <= FMM_TOL_MAX)) return FMM_ERR_TOLERANCE;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    const int nt = threads > 0 ? threads : omp_get_max_threads();
    /* x, q: the wrapped positions and the charges in the sum's units; out: [n][4] phi and E;
       slots: the real-space virial per thread (core/reduce.h) */
    double *x = malloc(sizeof(double) * 4 * (size_t)n),
           *out = calloc(4 * (size_t)n, sizeof(double));
    double *slots = calloc(9 * (size_t)nt, sizeof(double));
    if (!x || !out || !slots) {
        free(x), free(out), free(slots);
        return FMM_ERR_NOMEM;
    }
    double *q = x + 3 * (size_t)n, box[3];
    int el, eq, rc = prepare(n, xyz, q_in, box_in, x, q, box, &el, &eq);
    if (rc) {
        free(x), free(out), free(slots);
        return rc;
    }
    const double V = box[0] * box[1] * box[2], Lmin = fmin(box[0], fmin(box[1], box[2]));
    /* erfc(a rc) ~ exp(-(a rc)^2) = tol and exp(-k^2/4a^2) = tol at the k cut-off, with a
     * margin: s = sqrt(-ln(tol / 10)) */
    const double s = sqrt(-log(0.1 * tol)), rc_ = 0.5 * Lmin, a = s / rc_, kc = 2 * a * s;
    kgrid g;
    for (int d = 0; d < 3; ++d)
        g.kmax[d] = (int)ceil(kc * box[d] / (2 * PI)), g.w[d] = 2 * g.kmax[d] + 1;
    double Q = 0;
    for (long i = 0; i < n; ++i) Q += q[i];
    const double c2 = 2 * a / sqrt(PI);
    /* real space: the cut-off is half the shortest edge, so only the minimum image of each
     * pair can lie within it */
#pragma omp parallel num_threads(nt)
    {
        double *Wl = slots + 9 * omp_get_thread_num();
#pragma omp for schedule(static)
        for (long i = 0; i < n; ++i) {
            double p = 0, e[3] = {0, 0, 0};
            for (long j = 0; j < n; ++j) {
                double r[3];
                for (int c = 0; c < 3; ++c) {
                    r[c] = x[3 * i + c] - x[3 * j + c];
                    r[c] -= box[c] * nearbyint(r[c] / box[c]);
                }
                double r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
                if (r2 == 0.0 || r2 > rc_ * rc_) continue;
                double d = sqrt(r2), ef = erfc(a * d) / d;
                double gr = (ef + c2 * exp(-a * a * r2)) / r2;
                p += q[j] * ef;
                for (int c = 0; c < 3; ++c) e[c] += q[j] * gr * r[c];
                for (int u = 0; u < 3; ++u)
                    for (int v = 0; v < 3; ++v)
                        Wl[3 * u + v] += 0.5 * q[i] * q[j] * gr * r[u] * r[v];
            }
            out[4 * i] = p - c2 * q[i] - PI * Q / (V * a * a);
            for (int c = 0; c < 3; ++c) out[4 * i + 1 + c] = e[c];
        }
    }
    double Wr[9];
    fmm_sum_slots(slots, nt, 9, Wr);
    free(slots);
    /* reciprocal space: structure factors S(k) = sum q_j exp(i k.x_j), k = 2 pi m / L, first for
     * every k, then each particle's sum over k in the order of k: no sum depends on which
     * thread did what */
    const long nk = (long)g.w[0] * g.w[1] * g.w[2];
    double *ec = malloc(sizeof(double) * 2 * (size_t)n * (g.w[0] + g.w[1] + g.w[2]));
    double *sk =
        malloc(sizeof(double) * 3 * (size_t)nk); /* [nk]: f(k) (0: not summed), Re S, Im S */
    if (!ec || !sk) {
        free(x), free(out), free(ec), free(sk);
        return FMM_ERR_NOMEM;
    }
    double *tab[3] = {ec, ec + 2 * (size_t)n * g.w[0], ec + 2 * (size_t)n * (g.w[0] + g.w[1])};
    for (int d = 0; d < 3; ++d) {
        g.tab[d] = tab[d];
        for (long i = 0; i < n; ++i)
            for (int m = -g.kmax[d]; m <= g.kmax[d]; ++m) {
                double ph = 2 * PI * m * x[3 * i + d] / box[d];
                tab[d][2 * ((size_t)i * g.w[d] + m + g.kmax[d])] = cos(ph);
                tab[d][2 * ((size_t)i * g.w[d] + m + g.kmax[d]) + 1] = sin(ph);
            }
    }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 4)
    for (long kk = 0; kk < nk; ++kk) {
        int m[3];
        k_components(&g, kk, m);
        const double k[3] = {2 * PI * m[0] / box[0], 2 * PI * m[1] / box[1],
                             2 * PI * m[2] / box[2]};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
        double *o = sk + 3 * kk, sr = 0, si = 0;
        o[0] = o[1] = o[2] = 0.0;
        if ((!m[0] && !m[1] && !m[2]) || k2 > kc * kc) continue;
        for (long j = 0; j < n; ++j) {
            double c, sn;
            k_phase(&g, j, m, &c, &sn);
            sr += q[j] * c, si += q[j] * sn;
        }
        o[0] = exp(-k2 / (4 * a * a)) / k2, o[1] = sr, o[2] = si;
    }
#pragma omp parallel for num_threads(nt) schedule(dynamic, 8)
    for (long i = 0; i < n; ++i) {
        double acc[4] = {0, 0, 0, 0};
        for (long kk = 0; kk < nk; ++kk) {
            const double *o = sk + 3 * kk;
            if (o[0] == 0.0) continue;
            int m[3];
            double c, sn;
            k_components(&g, kk, m);
            k_phase(&g, i, m, &c, &sn);
            /* Re and Im of S(k) exp(-i k.x_i) */
            const double re = o[1] * c + o[2] * sn, im = o[2] * c - o[1] * sn;
            acc[0] += o[0] * re;
            for (int d = 0; d < 3; ++d) acc[1 + d] -= o[0] * im * (2 * PI * m[d] / box[d]);
        }
        for (int c = 0; c < 4; ++c) out[4 * i + c] += 4 * PI / V * acc[c];
    }
    double Wk[9] = {0};
    for (long kk = 0; kk < nk; ++kk) {
        const double *o = sk + 3 * kk;
        if (o[0] == 0.0) continue;
        int m[3];
        k_components(&g, kk, m);
        const double k[3] = {2 * PI * m[0] / box[0], 2 * PI * m[1] / box[1],
                             2 * PI * m[2] / box[2]};
        const double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2], S2 = o[1] * o[1] + o[2] * o[2];
        for (int u = 0; u < 3; ++u)
            for (int v = 0; v < 3; ++v)
                Wk[3 * u + v] += 2 * PI / V * o[0] * S2 *
                                 ((u == v) - 2 * k[u] * k[v] * (1 / k2 + 1 / (4 * a * a)));
    }
    free(ec), free(sk);
    double U = 0;
    for (long i = 0; i < n; ++i) U += 0.5 * q[i] * out[4 * i];
    /* outputs in the caller's units: phi x 2^(eq-el), E x 2^(eq-2el), U and W x 2^(2eq-el) */
    rc = FMM_OK;
    if (phi) {
        for (long i = 0; i < n; ++i) phi[i] = out[4 * i];
        rc = fmm_scale_output(n, phi, 0, phi, 0, eq - el, threads);
    }
    if (field && !rc) {
        for (long i = 0; i < n; ++i)
            for (int d = 0; d < 3; ++d) field[3 * i + d] = out[4 * i + 1 + d];
        rc = fmm_scale_output(3 * n, field, 0, field, 0, eq - 2 * el, threads);
    }
    if (energy && !rc) {
        *energy = U;
        rc = fmm_scale_output(1, energy, 0, energy, 0, 2 * eq - el, threads);
    }
    if (virial && !rc) {
        for (int u = 0; u < 3; ++u)
            for (int v = 0; v < 3; ++v)
                virial[3 * u + v] =
                    Wr[3 * u + v] + Wk[3 * u + v] - (u == v) * PI * Q * Q / (2 * V * a * a);
        rc = fmm_scale_output(9, virial, 0, virial, 0, 2 * eq - el, threads);
    }
    free(x), free(out);
    return rc;
}
