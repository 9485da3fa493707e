/* The Coulomb FMM's periodic corrections and virial (fmm/fmm_internal.h, docs/periodic-cells.md).
 */
#include "fmm/fmm_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/harmonics.h"
#include "core/mathconst.h"
#include "pbc/lattice.h"

/* The moments about the root cube's centre of the plan's particles with charges q (tree order):
 * m = {Q, sum |q|, dipole D (3), second moment S2}. On a distributed rank q is its home charges,
 * and fmm/dist.c sums m over ranks before fmm_periodic_apply. */
void fmm_charge_moments(const fmm_plan *P, const double *q, double m[6]) {
    const octree *t = &P->tree;
    const double *c = t->box[0].c;
    for (int k = 0; k < 6; ++k) m[k] = 0;
    /* summed in m itself: a scalar loop in the particles' order, whose multiply-adds the
       compiler fuses as in the one loop before the split (the same bits) */
    for (long i = 0; i < t->n; ++i) {
        const double Y[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
        m[0] += q[i], m[1] += fabs(q[i]);
        for (int d = 0; d < 3; ++d) m[2 + d] += q[i] * Y[d];
        m[5] += q[i] * (Y[0] * Y[0] + Y[1] * Y[1] + Y[2] * Y[2]);
    }
}

/* Periodic cube: from the cube-ordered lattice sum of the neutralised cell to Ewald's
 * conventions (recipe 2 and 4): background of the 27 near cells for a net charge Q, then
 * tin-foil (dipole D and second moment S2 of the wrapped charges about the centre), from the
 * moments m of fmm_charge_moments. */
void fmm_periodic_apply(fmm_plan *P, const double m[6]) {
    const octree *t = &P->tree;
    const long n = t->n;
    const double L = t->side, V = L * L * L, pi = 3.14159265358979323846;
    const double *c = t->box[0].c, Q = m[0], *D = m + 2, S2 = m[5];
    const int tinfoil = P->opts.boundary == FMM_BOUNDARY_TINFOIL;
    const double kd = 4 * pi / (3 * V), k0 = 2 * pi / (3 * V) * (S2 - Q * L * L / 4);
    const int charged = PBC_CHARGED(Q, m[1]);
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        double Y[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
        if (charged) {
            double pb, gb[3];
            pbc_cube_potential(1.5 * L, Y, &pb, gb);
            P->phi[i] -= Q / V * pb;
            P->ex[i] += Q / V * gb[0], P->ey[i] += Q / V * gb[1], P->ez[i] += Q / V * gb[2];
        }
        if (tinfoil) {
            P->phi[i] += k0 - kd * (D[0] * Y[0] + D[1] * Y[1] + D[2] * Y[2]);
            P->ex[i] += kd * D[0], P->ey[i] += kd * D[1], P->ez[i] += kd * D[2];
        }
    }
}

void fmm_periodic_corrections(fmm_plan *P) {
    double m[6];
    fmm_charge_moments(P, P->q, m);
    fmm_periodic_apply(P, m);
}

/* A cell plan's corrections (docs/periodic-cells.md section 2): the isotropic quadratic of the far
 * pair potential, (2 pi / 3V) sum_j q_j |Y_i - Y_j|^2, and for the vacuum boundary (neutral) the
 * dipole term of U_vac = U_tf + (2 pi / 3V)|D|^2 (section 4), phi in the cube's vacuum convention
 * (periodic_corrections: the tin-foil terms without their constant (2 pi / 3V) S2). */
void fmm_cell_corrections(fmm_plan *P) {
    const octree *t = &P->tree;
    const long n = t->n;
    const double *c = t->box[0].c, k = 2 * FMM_PI / (3 * P->cell.volume);
    double m[6];
    fmm_charge_moments(P, P->q, m);
    const double Q = m[0], *D = m + 2, S2 = m[5];
    const double tf = P->opts.boundary == FMM_BOUNDARY_TINFOIL ? 1.0 : 0.0;
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) {
        const double Y[3] = {t->x[i] - c[0], t->y[i] - c[1], t->z[i] - c[2]};
        P->phi[i] += k * (Q * (Y[0] * Y[0] + Y[1] * Y[1] + Y[2] * Y[2]) +
                          tf * (S2 - 2 * (Y[0] * D[0] + Y[1] * D[1] + Y[2] * D[2])));
        P->ex[i] += 2 * k * (tf * D[0] - Q * Y[0]), P->ey[i] += 2 * k * (tf * D[1] - Q * Y[1]),
            P->ez[i] += 2 * k * (tf * D[2] - Q * Y[2]);
    }
}

/* Periodic virial (recipe 5, lattice-sum form, extended to a net charge):
 *   W = sym[sum_i F_i (x) Y_i - 1/2 sum_n F_(0<-n) (x) nL] + W_lat,
 * F_(0<-n) the total force of image n (|n|_inf <= 1) on the cell, gathered through the tree.
 * W_lat is minus the explicit strain derivative of the far part of the pair potential, which
 * near r = 0 is psi_far(r) = c0 + (2 pi / 3V)|r|^2 + sum_{L >= 4} A_L R_L(r) (zero-mean
 * Ewald potential minus the 27 nearest images; its Laplacian is 4 pi / V, so only the
 * quadratic term is not harmonic, and the cube makes it isotropic):
 *   W_lat = -1/(2L) Re sum_LM V_LM C_LM + (2 pi / 3V)(Q S2 - |D|^2) I + Q^2 c0 / (6L) I,
 * C_LM = sum (-1)^j w_lm w_jk over (lm) + (jk) = (LM) of the scaled root multipole, charge
 * term included; V the strain derivatives of the lattice sums (degree 2: of the traceless
 * Ewald far Hessian); the isotropic terms from 1/V and c0 / L (c0: the unit cube's, a scalar
 * of the cube, so its strain derivative is -c0/3 I). Vacuum boundary (neutral only): U_vac = U_tf +
 * (2 pi / 3V)|D|^2 with D -> (I + e)D and V -> V(1 + tr e) under strain, so W_vac = W_tf - (2 pi /
 * 3V)(2 D D^T - |D|^2 I); the vacuum forces F_tf - (4 pi / 3V) q D already carry the D D^T part
 * through sum F (x) Y, which leaves W_lat without its |D|^2 term. */
/* The general form, for cells too (docs/periodic-cells.md section 4): the root's side L (the
 * scale of w and of the unit tables vtab), volume V, the image forces fshift[3k] of the nimg near
 * images at shift[3k], and iso0, the isotropic term of a table without c0 (the cube's). */
static void lattice_virial(int p, double L, double V, int tinfoil, const double *w,
                           const double *vtab, double iso0, const double FY[9], int nimg,
                           const double *fshift, const double *shift, const double D[3], double S2,
                           double *Wout) {
    const double pi = 3.14159265358979323846, Q = w[0];
    const int n2 = harm_ncoef(2 * p);
    double W[9];
    memcpy(W, FY, sizeof W);
    for (int k = 0; k < nimg; ++k)
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) W[3 * a + b] -= 0.5 * fshift[3 * k + a] * shift[3 * k + b];
    /* C_LM from the full complex root multipole */
    double wr[HARM_NPAD_MAX], wi[HARM_NPAD_MAX];
    harm_real_to_full(p, w, wr, wi);
    double *cr = calloc(2 * (size_t)n2, sizeof(double));
    if (cr) {
        double *ci = cr + n2;
        for (int l = 0; l <= p; ++l)
            for (int j = 0; j <= p; ++j)
                for (int m = -l; m <= l; ++m)
                    for (int k = -j; k <= j; ++k) {
                        int a = harm_full(l, m), b = harm_full(j, k), o = harm_full(l + j, m + k);
                        double sg = j & 1 ? -1.0 : 1.0;
                        cr[o] += sg * (wr[a] * wr[b] - wi[a] * wi[b]);
                        ci[o] += sg * (wr[a] * wi[b] + wi[a] * wr[b]);
                    }
        for (int ab = 0; ab < 9; ++ab) {
            const double *vr = vtab + (size_t)ab * n2, *vi = vtab + (size_t)(9 + ab) * n2;
            double sum = 0;
            for (int k = 0; k < n2; ++k) sum += vr[k] * cr[k] - vi[k] * ci[k];
            W[ab] += -0.5 / L * sum;
        }
        free(cr);
    }
    const double iso =
        tinfoil ? 2 * pi / (3 * V) * (Q * S2 - D[0] * D[0] - D[1] * D[1] - D[2] * D[2]) + iso0
                : 0.0;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            Wout[3 * a + b] = 0.5 * (W[3 * a + b] + W[3 * b + a]) + (a == b ? iso : 0.0);
}

/* The cube: its 27 image codes, c0 outside the table (pbc/lattice.h) */
void fmm_periodic_virial(int p, double L, int tinfoil, const double *w, const double *vtab,
                         double c0, const double FY[9], const double fshift[81], const double D[3],
                         double S2, double *Wout) {
    double shift[81];
    for (int code = 0; code < 27; ++code) {
        int s[3];
        oct_shift_vec(code, s);
        for (int b = 0; b < 3; ++b) shift[3 * code + b] = s[b] * L;
    }
    lattice_virial(p, L, L * L * L, tinfoil, w, vtab, w[0] * w[0] * c0 / (6 * L), FY, 27, fshift,
                   shift, D, S2, Wout);
}

/* sum_i F_i = 0 (Ewald's forces), so sum F_i (x) Y_i may take Y about any point g. About the
   cell's centre c its terms are |Y| / extent times larger than the sum, and lose as many digits
   where the charges fill a small part of a large cell: there (more than 2^16 of the charges'
   extent lo..hi away) g is their middle, elsewhere the centre. The GPU makes the same choice
   (fmm/fmm_cuda_outputs.cu, k_virial_far), so the two virials agree to rounding: with the FMM's
   truncation error sum_i F_i is not quite 0, and the choices differ by (sum F) (x) g. */
void fmm_virial_origin(const double lo[3], const double hi[3], const double c[3], double g[3]) {
    double off = 0.0, ext = 0.0;
    for (int d = 0; d < 3; ++d) {
        g[d] = 0.5 * (lo[d] + hi[d]);
        off = fmax(off, fabs(g[d] - c[d])), ext = fmax(ext, hi[d] - lo[d]);
    }
    if (!(off > 0x1p16 * ext))
        for (int d = 0; d < 3; ++d) g[d] = c[d];
}

void fmm_virial_point(const fmm_plan *P, double g[3]) {
    const octree *t = &P->tree;
    const double *c = t->box[0].c, *xs[3] = {t->x, t->y, t->z};
    if (!P->opts.periodic) {
        memcpy(g, c, 3 * sizeof(double));
        return;
    }
    double lo[3], hi[3];
    for (int d = 0; d < 3; ++d) {
        lo[d] = hi[d] = xs[d][0];
        for (long i = 1; i < t->n; ++i)
            lo[d] = fmin(lo[d], xs[d][i]), hi[d] = fmax(hi[d], xs[d][i]);
    }
    fmm_virial_origin(lo, hi, c, g);
}

/* The far field's part of sum_i F_i (x) (x_i - g): per box A and far pair A <- C (M2L, P2L, M2P)
 * it holds F(A <- C) (x) (c_A - g) plus box-relative terms. The pair form of the virial takes
 * F(A <- C) (x) (c_A - c_C) / 2 instead, which agrees where F(C <- A) = -F(A <- C) but is not
 * multiplied by the lever |c_A - g| / |c_A - c_C| where the expansions' forces miss Newton's
 * third law by their truncation error (a close pair of deep boxes). The difference, summed over
 * the pairs, is vpair (m2l/m2l_cpu.h); its image shifts cancel against the image forces' term of
 * the periodic virial, so the same vpair serves the open and periodic virials. */
void fmm_virial_sum(const fmm_plan *P, const double *q, double FY[9]) {
    const octree *t = &P->tree;
    const double *g = P->vorg, *xs[3] = {t->x, t->y, t->z};
    for (int k = 0; k < 9; ++k) FY[k] = -P->vpair[k];
    for (long i = 0; i < t->n; ++i) {
        const double F[3] = {q[i] * P->ex[i], q[i] * P->ey[i], q[i] * P->ez[i]};
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) FY[3 * a + b] += F[a] * (xs[b][i] - g[b]);
    }
}

/* CPU pieces of the periodic virial: sum_i F_i (x) (x_i - g) - vpair and the moments about the
   centre */
int fmm_periodic_virial_cpu(fmm_plan *P, double *Wout) {
    const octree *t = &P->tree;
    double FY[9], m[6];
    fmm_virial_sum(P, P->q, FY);
    fmm_charge_moments(P, P->q, m);
    const double *D = m + 2, S2 = m[5];
    const int tinfoil = P->opts.boundary == FMM_BOUNDARY_TINFOIL;
    if (P->is_cell) {
        lattice_virial(P->p, t->side, P->cell.volume, tinfoil, P->W, P->vtab, 0.0, FY, P->nimg,
                       P->fimg, P->img.shift, D, S2, Wout);
        return FMM_OK;
    }
    if (P->compact && pbc_near_image_forces(P->p, t->side, P->W, P->fshift)) return FMM_ERR_NOMEM;
    fmm_periodic_virial(P->p, t->side, tinfoil, P->W, P->vtab, P->far_c0, FY, P->fshift, D, S2,
                        Wout);
    return FMM_OK;
}
