#include "core/p2p.h"

#include <math.h>

void p2p(long nt, const double *tx, const double *ty, const double *tz, long ns,
         const double *sx, const double *sy, const double *sz, const double *sq,
         const double shift[3], double *phi, double *ex, double *ey, double *ez) {
    for (long i = 0; i < nt; ++i) {
        const double xi = tx[i] - shift[0], yi = ty[i] - shift[1], zi = tz[i] - shift[2];
        double p = 0.0, fx = 0.0, fy = 0.0, fz = 0.0;
#pragma omp simd reduction(+ : p, fx, fy, fz)
        for (long j = 0; j < ns; ++j) {
            double dx = xi - sx[j], dy = yi - sy[j], dz = zi - sz[j];
            double r2 = dx * dx + dy * dy + dz * dz;
            double rinv = r2 > 0.0 ? 1.0 / sqrt(r2) : 0.0;
            double qr = sq[j] * rinv, qr3 = qr * rinv * rinv;
            p += qr;
            fx += qr3 * dx;
            fy += qr3 * dy;
            fz += qr3 * dz;
        }
        phi[i] += p;
        ex[i] += fx;
        ey[i] += fy;
        ez[i] += fz;
    }
}
