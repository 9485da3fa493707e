/*
 * fmmforceprovider.h - the FMM module's force provider: on every force call the periodic Coulomb
 * energy, forces and virial of all charges by the FMM (C API include/fmm.h), the excluded pairs
 * left out; with GROMACS's GPU update, the forces go to the device buffer that GROMACS's GPU force
 * sum adds (fmmdevice.h). Environment switches, for measurements: GMX_FMM_TIMING (log where the
 * time goes), GMX_FMM_FORCES_ON_HOST, GMX_FMM_LAUNCH_LATE (the device route's alternatives).
 *
 * Part of the fmm project (plugin/), not of GROMACS; copied with the module's other files into
 * src/gromacs/applied_forces/fmm/ by plugin/build-gromacs.sh --gromacs 2022.5.
 */
#ifndef GMX_APPLIED_FORCES_FMM_FMMFORCEPROVIDER_H
#define GMX_APPLIED_FORCES_FMM_FMMFORCEPROVIDER_H

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gromacs/mdtypes/iforceprovider.h"
#include "gromacs/utility/exceptions.h"
#include "gromacs/utility/real.h"
#include "gromacs/utility/stringutil.h"

#include "fmm.h" // the fmm project's C API (include path set by the patched CMakeLists.txt)
#include "fmmdevice.h"
#include "fmmtypes.h"

namespace gmx
{

class MDLogger;

/*! \brief Host array for the FMM's inputs and outputs: page-locked where the library has a
 * CUDA device (fmm_host_alloc), so that the per-step copies run at full speed */
template<class T>
class FmmHostArray
{
public:
    FmmHostArray() = default;
    FmmHostArray(const FmmHostArray&) = delete;
    FmmHostArray& operator=(const FmmHostArray&) = delete;
    ~FmmHostArray() { fmm_host_free(p_); }
    void resize(size_t n)
    {
        if (n <= n_)
        {
            return;
        }
        fmm_host_free(p_);
        n_ = 0;
        p_ = static_cast<T*>(fmm_host_alloc(sizeof(T) * n));
        if (p_ == nullptr)
        {
            GMX_THROW(InternalError(formatString("FMM module: no memory for %zu values", n)));
        }
        n_ = n;
    }
    T*       data() { return p_; }
    T&       operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

private:
    T*     p_ = nullptr;
    size_t  n_ = 0;
};

/*! \brief Computes the FMM Coulomb energy, forces and virial on every force call */
class FmmForceProvider final : public IForceProvider
{
public:
    FmmForceProvider(const FmmParameters& p, const std::vector<int>& exclusionPairs, const MDLogger* logger);
    ~FmmForceProvider();

    // with GROMACS's GPU update, the forces go to its device buffer (environment
    // GMX_FMM_FORCES_ON_HOST: through the host instead, as on every step before; for comparison)
    bool addsForcesOnDevice() const override;
    DeviceForceTarget deviceForceTarget(const DeviceContext& deviceContext) override;

    // the forces on the GPU from the start of the step, beside all else GROMACS does in it: on
    // search steps from the host coordinates (valid then) while the host searches pairs, on the
    // other steps from the device coordinates once the update has made them, ahead of the
    // nonbonded work (where PME on the GPU starts); the later calculateForces() of the step has
    // nothing left to do. Environment GMX_FMM_LAUNCH_LATE: the other steps' forces are started
    // where GROMACS asks for the special forces instead, after the nonbonded launch (for
    // comparison).
    void calculateDeviceForcesEarly(const ForceProviderInput& in) override;

    void calculateForces(const ForceProviderInput& in, ForceProviderOutput* out) override;

private:
    //! The step's forces into the device buffer that GROMACS's GPU force sum adds
    //! (deviceForceTarget): from GROMACS's device coordinates once they are ready (in.device_) or
    //! from the host's; with energy, the host waits for it
    void forcesOnDevice(const ForceProviderInput& in, int n, double* energy);
    //! GMX_FMM_TIMING: ms in positions, fmm_setpts, fmm_execute and forces, logged as the mean of
    //! each c_timedCalls calls (on the device route fmm_execute is the launch: the host does not
    //! wait)
    void addTiming(const std::array<double, 4>& ms, bool onDevice);
    //! Checks the step's atoms and box against the plan's (made anew when the box edge changed); returns n
    int preparePlan(const ForceProviderInput& in);
    void makePlan(double l);
    void check(int rc, const char* what) const;
    void log(const std::string& text) const;
    //! The plan's parameters, once (after the first fmm_setpts: the depth is set there)
    void logPlan();

    const FmmParameters& p_;
    std::vector<int>     exclusionPairs_; // i0 j0 i1 j1 ...: the plan leaves these pairs out
    const MDLogger*      logger_;
    fmm_opts             opts_;
    fmm_plan*            plan_            = nullptr;
    double               planEdge_        = 0;
    int                  numPlans_        = 0;
    double               prefactor_       = 1;
    bool                 infoLogged_      = false;
    bool                 chargesSent_     = false; // the plan keeps the charges of its first execute
    FmmHostArray<real>   xyz_;
    FmmHostArray<real>   field_;
    FmmHostArray<real>   q_;
    std::unique_ptr<FmmDeviceForces> device_; // forces on the device (deviceForceTarget)
    static constexpr int c_timedCalls = 100;
    //! Below this many atoms the module's host loops over them (positions in, forces out) run on
    //! one thread (the library's threshold for its own loops): a few microseconds, where a
    //! GPU-resident run's idle OpenMP threads have to be woken first
    //! (suspected in the droplet's virial steps: a 76-97 us host gap before the FMM's first CUDA
    //! call, bench/results/gromacs_gpu/README.md)
    static constexpr int c_parallelMinAtoms = 50000;
    bool                 forcesOnHost_ = false;
    bool                 launchLate_   = false; // environment GMX_FMM_LAUNCH_LATE
    int64_t              earlyStep_    = -1;    // the step calculateDeviceForcesEarly() started
    bool                 timing_      = false; // environment GMX_FMM_TIMING: log where the time goes
    int                  timedCalls_  = 0;
    int                  deviceCalls_ = 0;
    double               timeMs_[4]  = { 0 };
};

} // namespace gmx

#endif
