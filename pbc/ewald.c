/* Plain Ewald sum, the reference for the periodic FMM (tin-foil, neutralising background). */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "fmm.h"

#define PI 3.14159265358979323846

/* box lengths valid, particles wrapped into [0, L) */
static int prepare(long n, const double *xyz, const double *q, const double box[3], double *w) {
    for (int d = 0; d < 3; ++d)
        if (!(isfinite(box[d]) && box[d] > 0)) return FMM_ERR_BOX;
    for (long i = 0; i < n; ++i) {
        if (!isfinite(q[i])) return FMM_ERR_NONFINITE;
        for (int d = 0; d < 3; ++d) {
            double v = xyz[3 * i + d];
            if (!isfinite(v)) return FMM_ERR_NONFINITE;
            v -= box[d] * floor(v / box[d]);
            w[3 * i + d] = v < box[d] ? v : 0.0;
        }
    }
    return FMM_OK;
}

int fmm_ewald(long n, const double *xyz, const double *q, const double box[3], double tol,
              double *phi, double *field, double *energy, double *virial, int threads) {
    if (n < 1) return FMM_ERR_NPTS;
    if (!xyz || !q || !box) return FMM_ERR_ARG;
    if (!(tol >= FMM_TOL_MIN && tol <= FMM_TOL_MAX)) return FMM_ERR_TOLERANCE;
    if (threads < 0 || threads > FMM_THREADS_MAX) return FMM_ERR_THREADS;
    double *x = malloc(sizeof(double) * 3 * (size_t)n), *out = calloc(4 * (size_t)n, sizeof(double));
    if (!x || !out) {
        free(x), free(out);
        return FMM_ERR_NOMEM;
    }
    int rc = prepare(n, xyz, q, box, x);
    if (rc) {
        free(x), free(out);
        return rc;
    }
    const double V = box[0] * box[1] * box[2], Lmin = fmin(box[0], fmin(box[1], box[2]));
    /* erfc(a rc) ~ exp(-(a rc)^2) = tol and exp(-k^2/4a^2) = tol at the k cut-off, with a
     * margin: s = sqrt(-ln(tol / 10)) */
    const double s = sqrt(-log(0.1 * tol)), rc_ = 0.5 * Lmin, a = s / rc_, kc = 2 * a * s;
    int kmax[3];
    for (int d = 0; d < 3; ++d) kmax[d] = (int)ceil(kc * box[d] / (2 * PI));
    double Q = 0;
    for (long i = 0; i < n; ++i) Q += q[i];
    double Wr[9] = {0};
    int nt = threads > 0 ? threads : omp_get_max_threads();
    const double c2 = 2 * a / sqrt(PI);
    /* real space: the cut-off is half the shortest edge, so only the minimum image of each
     * pair can lie within it */
#pragma omp parallel num_threads(nt)
    {
        double Wl[9] = {0};
#pragma omp for schedule(dynamic, 8)
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
                double g = (ef + c2 * exp(-a * a * r2)) / r2;
                p += q[j] * ef;
                for (int c = 0; c < 3; ++c) e[c] += q[j] * g * r[c];
                for (int u = 0; u < 3; ++u)
                    for (int v = 0; v < 3; ++v) Wl[3 * u + v] += 0.5 * q[i] * q[j] * g * r[u] * r[v];
            }
            out[4 * i] = p - c2 * q[i] - PI * Q / (V * a * a);
            for (int c = 0; c < 3; ++c) out[4 * i + 1 + c] = e[c];
        }
#pragma omp critical
        for (int k = 0; k < 9; ++k) Wr[k] += Wl[k];
    }
    /* reciprocal space: structure factors S(k) = sum q_j exp(i k.x_j), k = 2 pi m / L; the
     * phases exp(i k.x) are products of per-axis tables exp(i 2 pi m_d x_d / L_d) */
    double Wk[9] = {0};
    int w[3] = {2 * kmax[0] + 1, 2 * kmax[1] + 1, 2 * kmax[2] + 1};
    double *ec = malloc(sizeof(double) * 2 * (size_t)n * (w[0] + w[1] + w[2]));
    if (!ec) {
        free(x), free(out);
        return FMM_ERR_NOMEM;
    }
    double *tab[3] = {ec, ec + 2 * (size_t)n * w[0], ec + 2 * (size_t)n * (w[0] + w[1])};
    for (int d = 0; d < 3; ++d)
        for (long i = 0; i < n; ++i)
            for (int m = -kmax[d]; m <= kmax[d]; ++m) {
                double ph = 2 * PI * m * x[3 * i + d] / box[d];
                tab[d][2 * ((size_t)i * w[d] + m + kmax[d])] = cos(ph);
                tab[d][2 * ((size_t)i * w[d] + m + kmax[d]) + 1] = sin(ph);
            }
    long nk = (long)w[0] * w[1] * w[2];
    int fail = 0;
#pragma omp parallel num_threads(nt) reduction(| : fail)
    {
        double *acc = calloc(4 * (size_t)n, sizeof(double)), *cs = malloc(sizeof(double) * 2 * (size_t)n);
        double Wl[9] = {0};
        if (!acc || !cs) fail = 1;
#pragma omp for schedule(dynamic, 4)
        for (long kk = 0; kk < nk; ++kk) {
            if (fail) continue;
            int mz = (int)(kk % w[2]) - kmax[2], my = (int)((kk / w[2]) % w[1]) - kmax[1];
            int mx = (int)(kk / ((long)w[2] * w[1])) - kmax[0];
            if (!mx && !my && !mz) continue;
            double k[3] = {2 * PI * mx / box[0], 2 * PI * my / box[1], 2 * PI * mz / box[2]};
            double k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
            if (k2 > kc * kc) continue;
            double f = exp(-k2 / (4 * a * a)) / k2, sr = 0, si = 0;
            for (long j = 0; j < n; ++j) {
                const double *px = tab[0] + 2 * ((size_t)j * w[0] + mx + kmax[0]);
                const double *py = tab[1] + 2 * ((size_t)j * w[1] + my + kmax[1]);
                const double *pz = tab[2] + 2 * ((size_t)j * w[2] + mz + kmax[2]);
                double ar = px[0] * py[0] - px[1] * py[1], ai = px[0] * py[1] + px[1] * py[0];
                double c = ar * pz[0] - ai * pz[1], sn = ar * pz[1] + ai * pz[0];
                cs[2 * j] = c, cs[2 * j + 1] = sn;
                sr += q[j] * c, si += q[j] * sn;
            }
            for (long i = 0; i < n; ++i) {
                double c = cs[2 * i], sn = cs[2 * i + 1];
                /* Re and Im of S(k) exp(-i k.x_i) */
                double re = sr * c + si * sn, im = si * c - sr * sn;
                acc[4 * i] += 4 * PI / V * f * re;
                for (int d = 0; d < 3; ++d) acc[4 * i + 1 + d] -= 4 * PI / V * f * im * k[d];
            }
            double S2 = sr * sr + si * si;
            for (int u = 0; u < 3; ++u)
                for (int v = 0; v < 3; ++v)
                    Wl[3 * u + v] += 2 * PI / V * f * S2 *
                                     ((u == v) - 2 * k[u] * k[v] * (1 / k2 + 1 / (4 * a * a)));
        }
        if (acc && cs) {
#pragma omp critical
            {
                for (long i = 0; i < 4 * n; ++i) out[i] += acc[i];
                for (int c = 0; c < 9; ++c) Wk[c] += Wl[c];
            }
        }
        free(acc), free(cs);
    }
    free(ec);
    if (fail) {
        free(x), free(out);
        return FMM_ERR_NOMEM;
    }
    double U = 0;
    for (long i = 0; i < n; ++i) U += 0.5 * q[i] * out[4 * i];
    if (phi)
        for (long i = 0; i < n; ++i) phi[i] = out[4 * i];
    if (field)
        for (long i = 0; i < n; ++i)
            for (int d = 0; d < 3; ++d) field[3 * i + d] = out[4 * i + 1 + d];
    if (energy) *energy = U;
    if (virial)
        for (int u = 0; u < 3; ++u)
            for (int v = 0; v < 3; ++v)
                virial[3 * u + v] = Wr[3 * u + v] + Wk[3 * u + v] - (u == v) * PI * Q * Q / (2 * V * a * a);
    free(x), free(out);
    return FMM_OK;
}
