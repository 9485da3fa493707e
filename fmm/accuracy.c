#include "fmm/accuracy.h"

#include <math.h>

/* Placeholder calibration, to be replaced by measured values. */
int fmm_order_for_tolerance(double tol) {
    int p = (int)ceil(log(tol) / log(0.35));
    return p < 1 ? 1 : (p > 30 ? 30 : p);
}

int fmm_leaf_for_order(int p) {
    (void)p;
    return 64;
}
