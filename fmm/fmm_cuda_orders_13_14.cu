/* CUDA FMM kernels of orders 13..14: see fmm/fmm_cuda_orders.cuh */
#include "fmm/fmm_cuda_orders.cuh"

order_kernels fmm_gpu_orders_13_14(int p) { return order_kernels_in<13, 14>(p); }
