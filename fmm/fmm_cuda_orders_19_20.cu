/* CUDA FMM kernels of orders 19..20: see fmm/fmm_cuda_orders.cuh */
#include "fmm/fmm_cuda_orders.cuh"

order_kernels fmm_gpu_orders_19_20(int p) { return order_kernels_in<19, 20>(p); }
