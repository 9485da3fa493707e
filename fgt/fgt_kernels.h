/* fgt_kernels.h - CPU kernels of the FGT (fgt_kernels.c), eight points at a time with GCC
 * vector extensions. Coordinates are scaled (kernel exp(-|u - v|^2)), three axes (unused
 * axes hold the box centre, so their offsets are 0). Point arrays are padded by 8 entries
 * beyond every range passed in (the kernels read, but never use, up to 7 entries past it). */
#ifndef FMM_FGT_KERNELS_H
#define FMM_FGT_KERNELS_H

/* g[i - t0] += sum_{j in [s0,s1)} q[j] exp(-|t_i - s_j|^2) for i in [t0, t1) */
void fgt_k_direct(long t0, long t1, double *const tu[3], long s0, long s1, double *const su[3],
                  const double *q, double *g);

/* Coefficients of order pe[a] per axis (1 on unused axes), tensor stride st[a] (out index
 * (a0*st1 + a1)*st2 + a2 with st = P or 1), accumulated (+=) over the points [s0, s1) about c:
 * kind 0 (Hermite):  out_alpha += q_j prod_a (u_a - c_a)^alpha_a / alpha_a!
 * kind 1 (Taylor):   out_beta  += q_j prod_a h_beta_a(u_a - c_a) / beta_a!
 * acc: scratch of 8 * pe0*pe1*pe2 doubles, 64-byte aligned. */
void fgt_k_moments(int kind, long s0, long s1, double *const su[3], const double *q,
                   const double c[3], const int pe[3], const int st[3], double *out, double *acc);

/* g[i - t0] += sum_alpha C_alpha prod_a f_alpha_a(t_a - c_a) for i in [t0, t1):
 * kind 0 (Hermite): f_n = h_n (Hermite functions), kind 1 (Taylor): f_n(t) = t^n. */
void fgt_k_eval(int kind, long t0, long t1, double *const tu[3], const double c[3], const int pe[3],
                const int st[3], const double *C, double *g);

/* B_beta += sum_alpha A_alpha prod_a M_a[beta_a][alpha_a] for orders pe (A, B stride st), with
 * the transposed 1-D matrices MT_a[alpha * P8 + beta] (P8 = P rounded up to 8, zero-padded);
 * tmp: 2 * pe0*pe1*ceil(pe2/8)*8 doubles, 64-byte aligned. */
void fgt_k_h2t(const double *A, double *B, const double *const MT[3], int P8, const int pe[3],
               const int st[3], double *tmp);

#endif
