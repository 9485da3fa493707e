/*
 * graph_launch_probe.cu - the host's time in cudaGraphLaunch (and cudaLaunchKernel) under the
 * conditions of an MD step: the GPU idle; the launch stream of high priority; the launch stream
 * waiting (cudaStreamWaitEvent) for another stream's unfinished kernel; the GPU busy on another
 * stream without a dependency; and the graph's previous launch still running. Why: inside mdrun
 * the FMM's route launch holds the host 0.011-0.016 ms per step, standalone 0.002
 * (bench/results/gromacs_gpu/README.md, "The host's launch of the FMM").
 *
 *   nvcc -O2 -std=c++17 -arch=sm_90 bench/trace/graph_launch_probe.cu -o graph_launch_probe
 *   ./graph_launch_probe
 *
 * Graphs: "wide", 15 nodes captured over three streams like the route (two memsets, a fork to
 * two side lanes, a join), and "one", a single kernel. Medians over 200 launches, us. Also: the
 * main thread's kernel launches while a second thread launches graphs, and alone. On an H200
 * (bench/results/gromacs_gpu/graph_launch_probe_h200.txt) every condition gave 3.3-3.4 us for
 * the wide graph: none of them explains mdrun's figure.
 */
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                          \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

__global__ void k_small(float *a, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = a[i] * 0.5f + 1.0f;
}
__global__ void k_spin(long long ns) {
    long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

static double now_us() {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

int main() {
    const int n = 1 << 16, reps = 200;
    float *a;
    CK(cudaMalloc(&a, sizeof(float) * n * 4));
    int lo, hi;
    CK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
    cudaStream_t s0, s1, s2, st, sth, sb;
    CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithPriority(&sth, cudaStreamNonBlocking, hi));
    CK(cudaStreamCreateWithFlags(&sb, cudaStreamNonBlocking));
    cudaEvent_t f1, j1, f2, j2, xr;
    for (cudaEvent_t *e : {&f1, &j1, &f2, &j2, &xr})
        CK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    const int b = (n + 255) / 256;

    cudaGraph_t gw, g1;
    cudaGraphExec_t wide, one;
    CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
    CK(cudaMemsetAsync(a + 3 * n, 0, 64, s0));
    k_small<<<b, 256, 0, s0>>>(a, n);
    k_small<<<b, 256, 0, s0>>>(a, n);
    CK(cudaEventRecord(f1, s0));
    CK(cudaStreamWaitEvent(s1, f1, 0));
    CK(cudaStreamWaitEvent(s2, f1, 0));
    for (int k = 0; k < 3; ++k) k_small<<<b, 256, 0, s1>>>(a + n, n);
    for (int k = 0; k < 2; ++k) k_small<<<b, 256, 0, s2>>>(a + 2 * n, n);
    for (int k = 0; k < 3; ++k) k_small<<<b, 256, 0, s0>>>(a, n);
    CK(cudaEventRecord(j1, s1));
    CK(cudaEventRecord(j2, s2));
    CK(cudaStreamWaitEvent(s0, j1, 0));
    CK(cudaStreamWaitEvent(s0, j2, 0));
    CK(cudaMemsetAsync(a + 3 * n, 0, 64, s0));
    for (int k = 0; k < 3; ++k) k_small<<<b, 256, 0, s0>>>(a, n);
    CK(cudaStreamEndCapture(s0, &gw));
    size_t nodes = 0;
    CK(cudaGraphGetNodes(gw, nullptr, &nodes));
    CK(cudaGraphInstantiateWithFlags(&wide, gw, cudaGraphInstantiateFlagUseNodePriority));
    CK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
    k_small<<<b, 256, 0, s0>>>(a, n);
    CK(cudaStreamEndCapture(s0, &g1));
    CK(cudaGraphInstantiate(&one, g1, 0));
    std::printf("wide graph: %zu nodes; priorities %d..%d\n", nodes, lo, hi);

    // what: 0 wide graph, 1 one-node graph, 2 a kernel
    auto launch = [&](int what, cudaStream_t s) {
        if (what == 0) return cudaGraphLaunch(wide, s);
        if (what == 1) return cudaGraphLaunch(one, s);
        k_small<<<b, 256, 0, s>>>(a, n);
        return cudaGetLastError();
    };
    const char *whats[3] = {"wide graph", "one-node graph", "kernel"};
    const char *conds[5] = {"GPU idle", "high-priority stream", "stream waits for a busy stream",
                            "GPU busy on another stream", "previous launch still running"};
    std::printf("%-32s %12s %15s %9s\n", "condition (host us, median)", whats[0], whats[1],
                whats[2]);
    for (int c = 0; c < 5; ++c) {
        double med[3];
        for (int w = 0; w < 3; ++w) {
            std::vector<double> t;
            for (int r = -10; r < reps; ++r) {
                CK(cudaDeviceSynchronize());
                cudaStream_t s = c == 1 ? sth : st;
                if (c == 2 || c == 3) k_spin<<<1, 1, 0, sb>>>(50000);
                if (c == 2) {
                    CK(cudaEventRecord(xr, sb));
                    CK(cudaStreamWaitEvent(s, xr, 0));
                }
                if (c == 4) {
                    k_spin<<<1, 1, 0, s>>>(20000);
                    CK(launch(w, s));
                }
                const double t0 = now_us();
                CK(launch(w, s));
                const double t1 = now_us();
                if (r >= 0) t.push_back(t1 - t0);
            }
            std::sort(t.begin(), t.end());
            med[w] = t[t.size() / 2];
        }
        std::printf("%-32s %12.2f %15.2f %9.2f\n", conds[c], med[0], med[1], med[2]);
    }
    // two host threads: kernels launched here while another thread launches the wide graph into
    // its own stream (does the driver serialise them? A module that launches from a thread of its
    // own relies on it not doing so)
    {
        cudaStream_t so;
        CK(cudaStreamCreateWithFlags(&so, cudaStreamNonBlocking));
        std::atomic<bool> stop{false};
        std::atomic<long> graphs{0};
        std::thread other([&] {
            while (!stop.load()) {
                if (cudaGraphLaunch(wide, so) != cudaSuccess) break;
                cudaStreamSynchronize(so);
                graphs++;
            }
        });
        // host time of 2000 kernel launches, sorted
        auto kernel_launches = [&] {
            std::vector<double> t;
            for (int r = 0; r < 2000; ++r) {
                const double t0 = now_us();
                k_small<<<b, 256, 0, st>>>(a + 3 * n, 64);
                t.push_back(now_us() - t0);
                if (r % 50 == 0) cudaStreamSynchronize(st);
            }
            std::sort(t.begin(), t.end());
            return t;
        };
        const std::vector<double> t = kernel_launches();
        stop = true;
        other.join();
        std::printf(
            "%-32s kernel launch median %.2f us, p90 %.2f us (%ld graphs launched meanwhile)\n",
            "another thread launching graphs", t[t.size() / 2], t[t.size() * 9 / 10],
            graphs.load());
        const std::vector<double> t2 = kernel_launches();
        std::printf("%-32s kernel launch median %.2f us, p90 %.2f us\n", "the same, alone",
                    t2[t2.size() / 2], t2[t2.size() * 9 / 10]);
    }
    CK(cudaDeviceSynchronize());
    return 0;
}
