/* Error control: the expansion order and leaf size that meet a requested tolerance. */
#ifndef FMM_FMM_ACCURACY_H
#define FMM_FMM_ACCURACY_H

#ifdef __cplusplus
extern "C" {
#endif

int fmm_order_for_tolerance(double tolerance, int periodic);
int fmm_leaf_for_order(int p);

#ifdef __cplusplus
}
#endif

#endif
