/* core/harmonics.c - the solid harmonics R_lm and I_lm (core/harmonics.h's conventions) at a
 * point, by their recurrences in l and m: in triangle storage (core/harmonics_tri.h) and as the
 * full tables m = -l..l that the translation matrices (core/harmonics_translations.c) and the
 * lattice sums (pbc/lattice.c) read. */
#include "core/harmonics.h"

#include "core/harmonics_tri.h"

#include <math.h>

void harm_regular_tri(int p, double x, double y, double z, double *re, double *im) {
    double r2 = x * x + y * y + z * z;
    re[0] = 1.0;
    im[0] = 0.0;
    for (int m = 0; m <= p; ++m) {
        int t = TRI(m, m);
        if (m > 0) {
            int s = TRI(m - 1, m - 1);
            double f = -0.5 / m;
            /* (a + ib)(x - iy) */
            re[t] = f * (re[s] * x + im[s] * y);
            im[t] = f * (im[s] * x - re[s] * y);
        }
        double pr = 0.0, pi = 0.0, cr = re[t], ci = im[t];
        for (int l = m; l < p; ++l) {
            double inv = 1.0 / ((double)(l + 1) * (l + 1) - (double)m * m);
            double a = (2 * l + 1) * z;
            double nr = (a * cr - r2 * pr) * inv, ni = (a * ci - r2 * pi) * inv;
            int u = TRI(l + 1, m);
            re[u] = nr;
            im[u] = ni;
            pr = cr;
            pi = ci;
            cr = nr;
            ci = ni;
        }
    }
}

/* Irregular harmonics I_lm(v), m >= 0, triangle storage. */
static void irregular_tri(int p, double x, double y, double z, double *re, double *im) {
    double r2 = x * x + y * y + z * z, ir2 = 1.0 / r2;
    re[0] = sqrt(ir2);
    im[0] = 0.0;
    for (int m = 0; m <= p; ++m) {
        int t = TRI(m, m);
        if (m > 0) {
            int s = TRI(m - 1, m - 1);
            double f = -(2 * m - 1) * ir2;
            /* (a + ib)(x + iy) */
            re[t] = f * (re[s] * x - im[s] * y);
            im[t] = f * (re[s] * y + im[s] * x);
        }
        double pr = 0.0, pi = 0.0, cr = re[t], ci = im[t];
        for (int l = m; l < p; ++l) {
            double a = (2 * l + 1) * z, b = (double)l * l - (double)m * m;
            double nr = (a * cr - b * pr) * ir2, ni = (a * ci - b * pi) * ir2;
            int u = TRI(l + 1, m);
            re[u] = nr;
            im[u] = ni;
            pr = cr;
            pi = ci;
            cr = nr;
            ci = ni;
        }
    }
}

static void tri_to_full(int p, const double *re, const double *im, double *fre, double *fim) {
    for (int l = 0; l <= p; ++l)
        for (int m = 0; m <= l; ++m) {
            double s = m & 1 ? -1.0 : 1.0;
            fre[harm_full(l, m)] = re[TRI(l, m)];
            fim[harm_full(l, m)] = im[TRI(l, m)];
            fre[harm_full(l, -m)] = s * re[TRI(l, m)];
            fim[harm_full(l, -m)] = -s * im[TRI(l, m)];
        }
}

void harm_regular_full(int p, const double v[3], double *fre, double *fim) {
    double re[TRI_MAX], im[TRI_MAX];
    harm_regular_tri(p, v[0], v[1], v[2], re, im);
    tri_to_full(p, re, im, fre, fim);
}

void harm_real_to_full(int p, const double *x, double *re, double *im) {
    for (int l = 0; l <= p; ++l)
        for (int m = 0; m <= l; ++m) {
            const double r = x[harm_re(l, m)], c = m ? x[harm_im(l, m)] : 0.0, sg = m & 1 ? -1 : 1;
            re[harm_full(l, m)] = r, im[harm_full(l, m)] = c;
            re[harm_full(l, -m)] = sg * r, im[harm_full(l, -m)] = -sg * c;
        }
}

void harm_irregular_full(int p, const double v[3], double *fre, double *fim) {
    double re[TRI_MAX], im[TRI_MAX];
    irregular_tri(p, v[0], v[1], v[2], re, im);
    tri_to_full(p, re, im, fre, fim);
}
