/* core/harmonics_rotations.c - rotations of expansions into other frames: per degree the real
 * blocks of a proper rotation, from one quadrature of the rotation that turns z onto y and the
 * Euler angles of each frame (harm_rotation_matrices); and the Gauss-Legendre rule that the
 * quadrature and the lattice sums (pbc/lattice.c) use. */
#include "core/harmonics.h"

#include "core/harmonics_tri.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void harm_gauss_legendre(int n, double *t, double *w) {
    for (int i = 0; i < n; ++i) {
        double x = cos(3.14159265358979323846 * (i + 0.75) / (n + 0.5)), dp = 1.0;
        for (int it = 0; it < 100; ++it) {
            double p0 = 1.0, p1 = x;
            for (int k = 2; k <= n; ++k) {
                double p2 = ((2 * k - 1) * x * p1 - (k - 1) * p0) / k;
                p0 = p1, p1 = p2;
            }
            dp = n * (x * p1 - p0) / (x * x - 1.0);
            double dx = p1 / dp;
            x -= dx;
            if (fabs(dx) < 1e-16) break;
        }
        t[i] = x;
        w[i] = 2.0 / ((1.0 - x * x) * dp * dp);
    }
}

/* Real-layout block (2l+1)^2 of the degree-l map out_m = sum_{k=-l..l} c_mk in_k, using
 * in_{-k} = (-1)^k conj(in_k); c given as (2l+1)^2 arrays indexed (m+l)(2l+1) + (k+l). */
static void block_to_real(int l, const double *cr, const double *ci, double *out) {
    int w = 2 * l + 1;
    memset(out, 0, sizeof(double) * (size_t)w * w);
    for (int m = 0; m <= l; ++m)
        for (int k = 0; k <= l; ++k) {
            int a1 = (m + l) * w + (k + l), a2 = (m + l) * w + (l - k);
            double s = k & 1 ? -1.0 : 1.0;
            double c1r = cr[a1], c1i = ci[a1];
            double c2r = k > 0 ? s * cr[a2] : 0.0, c2i = k > 0 ? s * ci[a2] : 0.0;
            int rm = m == 0 ? 0 : 2 * m - 1, rk = k == 0 ? 0 : 2 * k - 1;
            out[rm * w + rk] += c1r + c2r;
            if (k > 0) out[rm * w + 2 * k] += c2i - c1i;
            if (m > 0) {
                out[2 * m * w + rk] += c1i + c2i;
                if (k > 0) out[2 * m * w + 2 * k] += c1r - c2r;
            }
        }
}

/* Per degree l, R_lm(Q x) = sum_k a_mk R_lk(x); the a_mk are projections computed by a
 * quadrature on the unit sphere that is exact for degree-2l products (Gauss-Legendre with
 * l+1 nodes in cos(theta), trapezoid with 2l+1 nodes in phi). Multipoles then transform as
 * w' = a w and locals as u_k = sum_m a_mk u'_m. */
/* t_m = sqrt((l+m)! (l-m)!) / l!, m = -l..l at index m + l: the R_lm times t_m are orthonormal over
 * the sphere up to a factor per degree, so the rotations are unitary in that basis */
static void unitary_scales(int l, double *t) {
    t[l] = 1.0;
    for (int j = l + 1; j <= 2 * l; ++j)
        t[j] = t[j - 1] * sqrt((double)j / (2 * l - j + 1)), t[2 * l - j] = t[j];
}

/* Complex block of degree l of the rotation x -> Qx, R_lm(Qx) = sum_k a_mk R_lk(x), rows and
 * columns m, k = -l..l at (m + l)(2l + 1) + k + l, by quadrature of the projections onto the R_lk
 * over the unit sphere (Gauss-Legendre in cos t, trapezoid in phi: exact for these polynomials).
 * O(l^4). */
static int rotation_block_quadrature(int l, const double Q[9], double *ar, double *ai) {
    const double pi = 3.14159265358979323846;
    const int w = 2 * l + 1, nt = l + 1, nphi = 2 * l + 1;
    double *t = malloc(sizeof(double) * 2 * nt), *wt = t + nt;
    double *re0 = malloc(sizeof(double) * TRI_MAX * 4), *im0 = re0 + TRI_MAX, *re1 = im0 + TRI_MAX,
           *im1 = re1 + TRI_MAX;
    double *norm = calloc(w, sizeof(double));
    if (!t || !re0 || !norm) {
        free(t), free(re0), free(norm);
        return 1;
    }
    harm_gauss_legendre(nt, t, wt);
    memset(ar, 0, sizeof(double) * (size_t)w * w);
    memset(ai, 0, sizeof(double) * (size_t)w * w);
    for (int it = 0; it < nt; ++it)
        for (int ip = 0; ip < nphi; ++ip) {
            double ph = 2 * pi * ip / nphi, st = sqrt(1 - t[it] * t[it]);
            double x[3] = {st * cos(ph), st * sin(ph), t[it]}, y[3];
            for (int r = 0; r < 3; ++r)
                y[r] = Q[3 * r] * x[0] + Q[3 * r + 1] * x[1] + Q[3 * r + 2] * x[2];
            double g = wt[it] * 2 * pi / nphi;
            harm_regular_tri(l, x[0], x[1], x[2], re0, im0);
            harm_regular_tri(l, y[0], y[1], y[2], re1, im1);
            /* degree-l values for m = -l..l */
            double xr[2 * HARM_PMAX + 1], xi[2 * HARM_PMAX + 1], yr[2 * HARM_PMAX + 1],
                yi[2 * HARM_PMAX + 1];
            for (int m = 0; m <= l; ++m) {
                double s = m & 1 ? -1.0 : 1.0;
                xr[l + m] = re0[TRI(l, m)], xi[l + m] = im0[TRI(l, m)];
                xr[l - m] = s * xr[l + m], xi[l - m] = -s * xi[l + m];
                yr[l + m] = re1[TRI(l, m)], yi[l + m] = im1[TRI(l, m)];
            }
            for (int k = 0; k < w; ++k) {
                /* g * conj(R_lk(x)); rows m >= 0 only, the others follow below */
                double cr = g * xr[k], ci = -g * xi[k];
                norm[k] += g * (xr[k] * xr[k] + xi[k] * xi[k]);
                for (int m = l; m < w; ++m) {
                    ar[m * w + k] += yr[m] * cr - yi[m] * ci;
                    ai[m * w + k] += yr[m] * ci + yi[m] * cr;
                }
            }
        }
    for (int m = l; m < w; ++m)
        for (int k = 0; k < w; ++k) ar[m * w + k] /= norm[k], ai[m * w + k] /= norm[k];
    /* X_{l,-m} = (-1)^m conj(X_lm) at real points gives a_{-m,-k} = (-1)^(m+k) conj(a_mk) */
    for (int m = 0; m < l; ++m)
        for (int k = 0; k < w; ++k) {
            double s = (m + k) & 1 ? -1.0 : 1.0;
            int src = (w - 1 - m) * w + (w - 1 - k);
            ar[m * w + k] = s * ar[src], ai[m * w + k] = -s * ai[src];
        }
    free(t), free(re0), free(norm);
    return 0;
}

/* Q = Rz(a) Ry(b) Rz(c) (z-y-z Euler angles, Rz(t) turning x towards y); 1 if Q is not a proper
 * rotation or not finite */
static int euler_zyz(const double Q[9], double *a, double *b, double *c) {
    const double sb = sqrt(Q[6] * Q[6] + Q[7] * Q[7]);
    *b = atan2(sb, Q[8]);
    if (sb > 1e-12) {
        *a = atan2(Q[5], Q[2]), *c = atan2(Q[7], -Q[6]);
    } else { /* b = 0: Q = Rz(a); b = pi: Q = Rz(a) Ry(pi) */
        *c = 0.0;
        *a = Q[8] > 0 ? atan2(Q[3], Q[0]) : atan2(-Q[3], Q[4]);
    }
    const double ca = cos(*a), sa = sin(*a), cb = cos(*b), s = sin(*b), cc = cos(*c), sc = sin(*c);
    const double R[9] = {ca * cb * cc - sa * sc,
                         -ca * cb * sc - sa * cc,
                         ca * s,
                         sa * cb * cc + ca * sc,
                         -sa * cb * sc + ca * cc,
                         sa * s,
                         -s * cc,
                         s * sc,
                         cb};
    for (int i = 0; i < 9; ++i) /* (written so that a NaN fails too) */
        if (!(fabs(R[i] - Q[i]) <= 1e-10)) return 1;
    return 0;
}

int harm_rotation_matrices(int p, int nq, const double *Q, double *Aw, double *Au, size_t stride) {
    /* a(Q) = Dz(a) a(P) Dz(b) a(P^-1) Dz(c) for Q = Rz(a) Ry(b) Rz(c): Ry(b) = P Rz(b) P^-1 with
     * P = Rx(-pi/2) (z onto y), a(Rz(t)) = Dz(t) = diag(e^{-i m t}), and P^-1 = Rz(pi) P Rz(pi),
     * so a(P^-1)_jk = (-1)^(j+k) a(P)_jk. Only a(P) needs the quadrature (O(p^5)); each rotation
     * is then O(p^4) (the 56 M2L classes at p 28 took 2.6 s with a quadrature each). The product
     * runs in the unitary basis (unitary_scales), U = T a T^-1: in the R_lm themselves the entries
     * span factorial ratios, and the sum over j lost all digits of the local rotations above
     * degree ~28. */
    const double P[9] = {1, 0, 0, 0, 0, 1, 0, -1, 0};
    size_t nb = 0;
    for (int l = 0; l <= p; ++l) nb += (size_t)(2 * l + 1) * (2 * l + 1);
    double *pr = malloc(sizeof(double) * 2 * nb), *pim = pr ? pr + nb : NULL;
    int fail = !pr;
    for (int l = 0, off = 0; l <= p && !fail; off += (2 * l + 1) * (2 * l + 1), ++l) {
        const int w = 2 * l + 1;
        double t[2 * HARM_PMAX + 1];
        fail = rotation_block_quadrature(l, P, pr + off, pim + off);
        unitary_scales(l, t);
        for (int m = 0; m < w; ++m)
            for (int k = 0; k < w; ++k)
                pr[off + m * w + k] *= t[m] / t[k], pim[off + m * w + k] *= t[m] / t[k];
    }
#pragma omp parallel for schedule(dynamic, 1) reduction(| : fail)
    for (int q = 0; q < nq; ++q) {
        double a, b, c;
        const int w2 = (2 * p + 1) * (2 * p + 1);
        double *ar = malloc(sizeof(double) * 4 * (size_t)w2), *ai = ar ? ar + w2 : NULL,
               *tr = ai ? ai + w2 : NULL, *ti = tr ? tr + w2 : NULL;
        double *Lr = malloc(sizeof(double) * 2 * (size_t)w2), *Li = Lr ? Lr + w2 : NULL;
        double eb[2 * (2 * HARM_PMAX + 1)], ec[2 * (2 * HARM_PMAX + 1)];
        if (fail || !ar || !Lr || euler_zyz(Q + 9 * q, &a, &b, &c)) {
            free(ar), free(Lr);
            fail = 1;
            continue;
        }
        double *bw = Aw + (size_t)q * stride, *bu = Au + (size_t)q * stride;
        for (int l = 0, off = 0; l <= p; off += (2 * l + 1) * (2 * l + 1), ++l) {
            const int w = 2 * l + 1;
            const double *Ar = pr + off, *Ai = pim + off;
            double t[2 * HARM_PMAX + 1];
            unitary_scales(l, t);
            /* L_jk = e^{-i j b} (-1)^(j+k) a(P)_jk e^{-i k c}, then a_mk = e^{-i m a} sum_j a(P)_mj
             * L_jk */
            for (int j = 0; j < w; ++j) {
                const double sg = (j & 1) ? -1.0 : 1.0; /* (-1)^(j - l + l) with the k part below */
                eb[2 * j] = sg * cos((j - l) * b), eb[2 * j + 1] = -sg * sin((j - l) * b);
                ec[2 * j] = sg * cos((j - l) * c), ec[2 * j + 1] = -sg * sin((j - l) * c);
            }
            for (int j = 0; j < w; ++j)
                for (int k = 0; k < w; ++k) {
                    const double pr2 = eb[2 * j] * ec[2 * k] - eb[2 * j + 1] * ec[2 * k + 1],
                                 pi2 = eb[2 * j] * ec[2 * k + 1] + eb[2 * j + 1] * ec[2 * k];
                    const double xr = Ar[j * w + k], xi = Ai[j * w + k];
                    Lr[j * w + k] = pr2 * xr - pi2 * xi, Li[j * w + k] = pr2 * xi + pi2 * xr;
                }
            for (int m = 0; m < w; ++m) {
                double *sr = ar + m * w, *si = ai + m * w;
                for (int k = 0; k < w; ++k) sr[k] = si[k] = 0.0;
                for (int j = 0; j < w; ++j) {
                    const double xr = Ar[m * w + j], xi = Ai[m * w + j];
                    const double *lr = Lr + j * w, *li = Li + j * w;
#pragma omp simd
                    for (int k = 0; k < w; ++k)
                        sr[k] += xr * lr[k] - xi * li[k], si[k] += xr * li[k] + xi * lr[k];
                }
                const double cr = cos((m - l) * a), ci = -sin((m - l) * a);
                for (int k = 0; k < w;
                     ++k) { /* back from the unitary basis: a_mk = U_mk t_k / t_m */
                    const double r = sr[k], i2 = si[k], f = t[k] / t[m];
                    sr[k] = f * (cr * r - ci * i2), si[k] = f * (cr * i2 + ci * r);
                }
            }
            block_to_real(l, ar, ai, bw);
            for (int m = 0; m < w; ++m) /* transpose for the locals */
                for (int k = 0; k < w; ++k)
                    tr[k * w + m] = ar[m * w + k], ti[k * w + m] = ai[m * w + k];
            block_to_real(l, tr, ti, bu);
            bw += w * w;
            bu += w * w;
        }
        free(ar), free(Lr);
    }
    free(pr);
    return fail;
}
