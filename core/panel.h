/*
 * Batched translations in factored ("point-and-shoot") form, shared by the M2L, M2M and L2L.
 *
 * Every translation along an offset d can be written as R2 Z R1: rotate the expansion into
 * a frame where d lies on +z (R1, block diagonal in the degree), translate along z (Z, which
 * couples only equal orders m; Re and Im rows separately), rotate back (R2). That is O(p^3)
 * per translation instead of the O(p^4) of the dense operator. A reflection f of the
 * offset only flips signs of coefficients (sign pattern S_f), so T(f d) = S_f T(d) S_f and one
 * factored operator serves all reflections of d.
 *
 * Translations are applied PANEL_NB at a time: a panel is [npad rows][PANEL_NB columns], row
 * k holding coefficient k of PANEL_NB expansions, so that every step is a vector operation
 * over the columns. Expansions live in arrays of stride npad (64-byte aligned, zero padding).
 */
#ifndef FMM_CORE_PANEL_H
#define FMM_CORE_PANEL_H

#ifdef __cplusplus
extern "C" {
#endif

#define PANEL_NB 64

typedef struct factored_op {
    int p;
    const double *r1, *r2;   /* rotation blocks per degree (harm_rotation_matrices layout) */
    const double *zre, *zim; /* z-translation per order m: block m at zoff[m], (p+1-m)^2 */
    const int *zoff;         /* [p+2] */
} factored_op;

/* Number of doubles of the z blocks for order p, and their offsets (zoff[p+2]). */
int panel_zsize(int p, int *zoff);
/* Extract the z blocks from the dense real-layout operator of a translation along z. */
void panel_zblocks(int p, const double *dense, const int *zoff, double *zre, double *zim);

/* Gather nc (<= PANEL_NB) expansions src[j] * S_flag[j] into the columns of panel P; the
 * other columns are zero. sign: [8][npad] patterns; X: [*][npad] expansions. */
void panel_gather(int npad, const double *X, int nc, const int *src, const unsigned char *flag,
                  const double *sign, double *P);
/* Y[dst[j]] += S_flag[j] * column j of P, in order (dst may repeat). */
void panel_scatter_add(int npad, const double *P, int nc, const int *dst, const unsigned char *flag,
                       const double *sign, double *Y);

/* P <- R2 Z R1 P, using T as scratch; both panels [npad][PANEL_NB], 64-byte aligned. */
void panel_apply(const factored_op *op, double *P, double *T);

#ifdef __cplusplus
}
#endif

#endif
