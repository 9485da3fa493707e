/*
 * fmmdevice.cpp - see fmmdevice.h. Compiled by nvcc in a CUDA build of GROMACS (listed in
 * CUDA_SOURCES by this folder's CMakeLists.txt); without CUDA the module never asks for it.
 */
#include "gmxpre.h"

#include "fmmdevice.h"

#include "config.h"

#include "gromacs/utility/exceptions.h"

#if GMX_GPU_CUDA
#    include "gromacs/gpu_utils/device_stream.h"
#    include "gromacs/gpu_utils/devicebuffer.h"
#    include "gromacs/gpu_utils/gpueventsynchronizer.h"
#    include "gromacs/math/vectypes.h"
#endif

namespace gmx
{

#if GMX_GPU_CUDA

struct FmmDeviceForces::Impl
{
    Impl(const DeviceContext& deviceContext, int numAtoms) :
        stream_(deviceContext, DeviceStreamPriority::High, false)
    {
        allocateDeviceBuffer(&forces_, numAtoms, deviceContext);
    }
    ~Impl() { freeDeviceBuffer(&forces_); }
    DeviceStream                 stream_;
    mutable GpuEventSynchronizer ready_;
    DeviceBuffer<RVec>           forces_ = nullptr;
};

FmmDeviceForces::FmmDeviceForces(const DeviceContext& deviceContext, int numAtoms) :
    impl_(std::make_unique<Impl>(deviceContext, numAtoms))
{
}
void* FmmDeviceForces::stream() const
{
    return impl_->stream_.stream();
}
void* FmmDeviceForces::forces() const
{
    return impl_->forces_;
}
GpuEventSynchronizer* FmmDeviceForces::forcesReady() const
{
    return &impl_->ready_;
}
void FmmDeviceForces::waitFor(GpuEventSynchronizer* event) const
{
    event->enqueueWaitEvent(impl_->stream_);
}
void FmmDeviceForces::markForcesReady() const
{
    impl_->ready_.markEvent(impl_->stream_);
}

#else

struct FmmDeviceForces::Impl
{
};

FmmDeviceForces::FmmDeviceForces(const DeviceContext& /*deviceContext*/, int /*numAtoms*/)
{
    GMX_THROW(NotImplementedError("FMM module: forces on the device need a CUDA build of GROMACS"));
}
void* FmmDeviceForces::stream() const
{
    return nullptr;
}
void* FmmDeviceForces::forces() const
{
    return nullptr;
}
GpuEventSynchronizer* FmmDeviceForces::forcesReady() const
{
    return nullptr;
}
void FmmDeviceForces::waitFor(GpuEventSynchronizer* /*event*/) const {}
void FmmDeviceForces::markForcesReady() const {}

#endif

FmmDeviceForces::~FmmDeviceForces() = default;

} // namespace gmx
