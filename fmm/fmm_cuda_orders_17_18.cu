/* CUDA FMM kernels of orders 17..18: see fmm/fmm_cuda_orders.cuh */
#include "fmm/fmm_cuda_orders.cuh"

order_kernels fmm_gpu_orders_17_18(int p) { return order_kernels_in<17, 18>(p); }
