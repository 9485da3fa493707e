/* CUDA FMM kernels of orders 1..12: see fmm/fmm_cuda_orders.cuh */
#include "fmm/fmm_cuda_orders.cuh"

order_kernels fmm_gpu_orders_1_12(int p) { return order_kernels_in<1, 12>(p); }
