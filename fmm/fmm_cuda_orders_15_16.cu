/* CUDA FMM kernels of orders 15..16: see fmm/fmm_cuda_orders.cuh */
#include "fmm/fmm_cuda_orders.cuh"

order_kernels fmm_gpu_orders_15_16(int p) { return order_kernels_in<15, 16>(p); }
