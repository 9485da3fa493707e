/*
 * fmmdevice.h - the FMM module's GPU side in a CUDA build of GROMACS: its stream, the device
 * buffer of its forces and the event that marks them written, which GROMACS's GPU force sum
 * waits for (steps whose coordinates and forces stay on the GPU).
 *
 * Part of the fmm project (plugin/), not of GROMACS. Kept apart from fmmforceprovider.cpp because
 * GROMACS's GPU types (DeviceStream, GpuEventSynchronizer, DeviceBuffer) compile with nvcc only;
 * this header declares nothing of them, so the module's host source includes it freely.
 */
#ifndef GMX_APPLIED_FORCES_FMM_FMMDEVICE_H
#define GMX_APPLIED_FORCES_FMM_FMMDEVICE_H

#include <memory>

class DeviceContext;
class GpuEventSynchronizer;

namespace gmx
{

class FmmDeviceForces
{
public:
    //! A stream of high priority and a force buffer of numAtoms RVec (CUDA builds only)
    FmmDeviceForces(const DeviceContext& deviceContext, int numAtoms);
    ~FmmDeviceForces();
    //! The stream the FMM library orders its work against (a cudaStream_t)
    void* stream() const;
    //! The force buffer (a DeviceBuffer<RVec>)
    void* forces() const;
    //! The event marking the forces written
    GpuEventSynchronizer* forcesReady() const;
    //! Makes the work queued next on the stream wait for \p event
    void waitFor(GpuEventSynchronizer* event) const;
    //! Marks the forces written after the work queued so far on the stream
    void markForcesReady() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace gmx

#endif
