/*
 * fmmforceprovider.cpp - the FMM module's force provider (fmmforceprovider.h). Units: GROMACS's
 * (nm, e, kJ/mol); the FMM library works in Gaussian units, so its potential, field, energy and
 * virial are multiplied by ONE_4PI_EPS0 / epsilon_r here.
 *
 * Part of the fmm project (plugin/), not of GROMACS; copied with the module's other files into
 * src/gromacs/applied_forces/fmm/ by plugin/build-gromacs.sh --gromacs 2022.5.
 */
#include "gmxpre.h"

#include "fmmforceprovider.h"

#include "config.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "gromacs/math/units.h"
#include "gromacs/math/vec.h"
#include "gromacs/mdlib/gmx_omp_nthreads.h"
#include "gromacs/mdtypes/enerdata.h"
#include "gromacs/mdtypes/forceoutput.h"
#include "gromacs/topology/ifunc.h"
#include "gromacs/utility/arrayref.h"
#include "gromacs/utility/logger.h"

namespace gmx
{

namespace
{

/* The library's entry points in GROMACS's own precision (float in a mixed-precision build, where
 * the positions are float already): half the bytes to and from the device */
int fmmSetpts(fmm_plan* p, long n, const float* xyz)
{
    return fmm_setptsf(p, n, xyz);
}
int fmmSetpts(fmm_plan* p, long n, const double* xyz)
{
    return fmm_setpts(p, n, xyz);
}
int fmmExecute(fmm_plan* p, const float* q, float* field, double* energy, double* virial)
{
    return fmm_executef(p, q, nullptr, field, energy, virial);
}
int fmmExecute(fmm_plan* p, const double* q, double* field, double* energy, double* virial)
{
    return fmm_execute(p, q, nullptr, field, energy, virial);
}
// positions and forces on the device: float only (a double GROMACS has no GPU update)
int fmmSetptsOnDevice(fmm_plan* p, long n, const void* d_x, void* stream)
{
    return fmm_cuda_setptsf(p, n, static_cast<const float*>(d_x), stream);
}
int fmmExecuteOnDevice(fmm_plan* p, const float* q, void* d_f, double scale, double* energy, void* stream)
{
    return fmm_cuda_forcesf(p, q, static_cast<float*>(d_f), scale, energy, nullptr, stream);
}
int fmmExecuteOnDevice(fmm_plan*, const double*, void*, double, double*, void*)
{
    return FMM_ERR_UNSUPPORTED;
}

std::string fmmStatusText(int rc)
{
    return formatString("%s (fmm status %d)", fmm_strerror(rc), rc);
}

} // namespace

FmmForceProvider::FmmForceProvider(const FmmParameters& p, const std::vector<int>& exclusionPairs, const MDLogger* logger) :
    p_(p), exclusionPairs_(exclusionPairs), logger_(logger)
{
    const size_t n = p_.charges_.size();
    q_.resize(n);
    std::copy(p_.charges_.begin(), p_.charges_.end(), q_.data());
    timing_       = std::getenv("GMX_FMM_TIMING") != nullptr;
    forcesOnHost_ = std::getenv("GMX_FMM_FORCES_ON_HOST") != nullptr;
    launchLate_   = std::getenv("GMX_FMM_LAUNCH_LATE") != nullptr;
    fmm_default_opts(&opts_);
    opts_.tolerance = p_.tolerance_;
    opts_.order     = p_.order_;
    opts_.depth     = p_.treeDepth_;
    opts_.periodic  = 1;
    opts_.boundary  = (p_.boundary_ == FmmBoundary::Vacuum) ? FMM_BOUNDARY_VACUUM : FMM_BOUNDARY_TINFOIL;
    opts_.device    = (p_.device_ == FmmDevice::Cuda) ? FMM_DEVICE_CUDA : FMM_DEVICE_CPU;
    opts_.precision = (p_.precision_ == FmmPrecision::Mixed) ? FMM_PRECISION_MIXED : FMM_PRECISION_DOUBLE;
    opts_.threads   = gmx_omp_nthreads_get(ModuleMultiThread::Default);
    prefactor_      = c_one4PiEps0 / p_.epsilonRResolved_;
}

FmmForceProvider::~FmmForceProvider()
{
    if (plan_ != nullptr)
    {
        fmm_destroy(plan_);
    }
}

bool FmmForceProvider::addsForcesOnDevice() const
{
    return GMX_GPU_CUDA && !GMX_DOUBLE && p_.device_ == FmmDevice::Cuda && !forcesOnHost_;
}

DeviceForceTarget FmmForceProvider::deviceForceTarget(const DeviceContext& deviceContext)
{
    if (device_ == nullptr)
    {
        device_ = std::make_unique<FmmDeviceForces>(deviceContext, static_cast<int>(p_.charges_.size()));
    }
    return { device_->forces(), device_->forcesReady() };
}

void FmmForceProvider::calculateDeviceForcesEarly(const ForceProviderInput& in)
{
    if (device_ == nullptr || (in.device_ != nullptr && launchLate_))
    {
        return; // no force target yet, or started late: calculateForces() computes them
    }
    using Clock   = std::chrono::steady_clock;
    const auto t0 = Clock::now();
    const int  n  = preparePlan(in);
    forcesOnDevice(in, n, nullptr);
    logPlan();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    addTiming({ 0, 0, ms, 0 }, true);
    earlyStep_ = in.step_;
}

void FmmForceProvider::calculateForces(const ForceProviderInput& in, ForceProviderOutput* out)
{
    if (in.device_ != nullptr && in.step_ == earlyStep_)
    {
        return; // started at the beginning of the step (calculateDeviceForcesEarly)
    }
    const int n = preparePlan(in);
    using Clock                 = std::chrono::steady_clock;
    const auto       t0         = Clock::now();
    auto             t1 = t0, t2 = t0, t3 = t0;
    ForceWithVirial& fwv        = out->forceWithVirial_;
    const bool       wantVirial = fwv.computeVirial_;
    double           energy     = 0;
    double           w[9]       = { 0 };
    const double     c          = prefactor_;
    if (in.device_ != nullptr)
    {
        // coordinates and forces stay on the device: no copies and no wait unless the energy
        // is asked for
        GMX_RELEASE_ASSERT(device_ != nullptr && !wantVirial,
                           "FMM module: device forces on a step without their target or with the virial");
        forcesOnDevice(in, n, in.device_->computeEnergy ? &energy : nullptr);
        t3 = Clock::now();
    }
    else
    {
        xyz_.resize(3 * static_cast<size_t>(n));
        field_.resize(3 * static_cast<size_t>(n));
        const int nt = opts_.threads;
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= c_parallelMinAtoms)
        for (int i = 0; i < n; i++)
        {
            for (int d = 0; d < DIM; d++)
            {
                xyz_[3 * i + d] = in.x_[i][d];
            }
        }
        t1 = Clock::now();
        check(fmmSetpts(plan_, n, xyz_.data()), "fmm_setpts");
        t2 = Clock::now();
        // the charges go to the plan once; later calls reuse them (q = NULL)
        check(fmmExecute(plan_,
                         chargesSent_ ? nullptr : q_.data(),
                         field_.data(),
                         &energy,
                         wantVirial ? w : nullptr),
              "fmm_execute");
        chargesSent_ = true;
        t3           = Clock::now();

        // all pairs, periodic, without the excluded pairs (the plan leaves out their minimum
        // images): forces, energy and virial (GROMACS: Xi = -1/2 sum x (x) f = -W/2)
        const ArrayRef<RVec> f = fwv.force_;
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= c_parallelMinAtoms)
        for (int i = 0; i < n; i++)
        {
            const double cq = c * p_.charges_[i];
            for (int d = 0; d < DIM; d++)
            {
                f[i][d] += cq * field_[3 * i + d];
            }
        }
    }
    logPlan();
    const double e = c * energy;
    if (timing_)
    {
        const auto t4 = Clock::now();
        addTiming({ std::chrono::duration<double, std::milli>(t1 - t0).count(),
                    std::chrono::duration<double, std::milli>(t2 - t1).count(),
                    std::chrono::duration<double, std::milli>(t3 - t2).count(),
                    std::chrono::duration<double, std::milli>(t4 - t3).count() },
                  in.device_ != nullptr);
    }
    if (wantVirial)
    {
        matrix vir;
        for (int a = 0; a < DIM; a++)
        {
            for (int b = 0; b < DIM; b++)
            {
                vir[a][b] = -0.5 * c * w[3 * b + a];
            }
        }
        fwv.addVirialContribution(vir);
    }
    out->enerd_.term[F_COUL_RECIP] += e;
}

void FmmForceProvider::forcesOnDevice(const ForceProviderInput& in, int n, double* energy)
{
    if (in.device_ != nullptr)
    {
        device_->waitFor(in.device_->xReadyOnDevice);
        check(fmmSetptsOnDevice(plan_, n, in.device_->d_x, device_->stream()),
              "fmm_cuda_setptsf");
    }
    else
    {
        check(fmmSetpts(plan_, n, in.x_[0].as_vec()), "fmm_setpts");
    }
    // the charges go to the plan (the device) once; later calls reuse them (q = NULL)
    check(fmmExecuteOnDevice(plan_,
                             chargesSent_ ? nullptr : q_.data(),
                             device_->forces(),
                             prefactor_,
                             energy,
                             device_->stream()),
          "fmm_cuda_forcesf");
    device_->markForcesReady();
    chargesSent_ = true;
}

void FmmForceProvider::addTiming(const std::array<double, 4>& ms, bool onDevice)
{
    if (!timing_)
    {
        return;
    }
    for (int k = 0; k < 4; k++)
    {
        timeMs_[k] += ms[k];
    }
    deviceCalls_ += onDevice;
    if (++timedCalls_ == c_timedCalls)
    {
        log(formatString(
                "FMM module timing, mean of %d calls (ms; %d with forces on the "
                "device): positions %.3f, fmm_setpts %.3f, fmm_execute %.3f, forces %.3f",
                c_timedCalls,
                deviceCalls_,
                timeMs_[0] / c_timedCalls,
                timeMs_[1] / c_timedCalls,
                timeMs_[2] / c_timedCalls,
                timeMs_[3] / c_timedCalls));
        timedCalls_ = deviceCalls_ = 0;
        std::fill(std::begin(timeMs_), std::end(timeMs_), 0.0);
    }
}

int FmmForceProvider::preparePlan(const ForceProviderInput& in)
{
    const int n = in.homenr_;
    if (static_cast<size_t>(n) != p_.charges_.size())
    {
        GMX_THROW(InternalError(formatString("FMM module: %d home atoms but %zu charges in the tpr",
                                             n, p_.charges_.size())));
    }
    const double l = in.box_[XX][XX];
    if (in.box_[YY][YY] != in.box_[XX][XX] || in.box_[ZZ][ZZ] != in.box_[XX][XX])
    {
        GMX_THROW(InconsistentInputError(formatString(
                "FMM module: the box is no longer cubic (%g %g %g nm)", in.box_[XX][XX],
                in.box_[YY][YY], in.box_[ZZ][ZZ])));
    }
    if (plan_ == nullptr || l != planEdge_)
    {
        makePlan(l);
    }
    return n;
}

void FmmForceProvider::makePlan(double l)
{
    if (plan_ != nullptr)
    {
        fmm_destroy(plan_);
        plan_ = nullptr;
    }
    const double box[3] = { l, l, l };
    check(fmm_makeplan(&opts_, box, &plan_), "fmm_makeplan");
    check(fmm_set_exclusions(plan_, static_cast<long>(exclusionPairs_.size() / 2), exclusionPairs_.data()),
          "fmm_set_exclusions");
    chargesSent_ = false;
    planEdge_ = l;
    numPlans_++;
    if (numPlans_ == 2)
    {
        log("FMM module: the box edge changed, the FMM plan is rebuilt at every change "
            "(pressure coupling makes each such step slower)");
    }
}

void FmmForceProvider::check(int rc, const char* what) const
{
    if (rc != FMM_OK)
    {
        GMX_THROW(InconsistentInputError(
                formatString("FMM module: %s failed: %s", what, fmmStatusText(rc).c_str())));
    }
}

void FmmForceProvider::log(const std::string& text) const
{
    if (logger_ != nullptr)
    {
        GMX_LOG(logger_->info).asParagraph().appendText(text);
    }
}

void FmmForceProvider::logPlan()
{
    if (infoLogged_)
    {
        return;
    }
    fmm_info info;
    if (fmm_get_info(plan_, &info) == FMM_OK)
    {
        log(formatString("FMM module: %zu charges, %zu excluded pairs, box %.4f nm, %s, "
                         "tolerance %g, order %d, tree depth %d (%s), %ld leaves, %d threads, "
                         "epsilon-r %g, boundary %s, precision %s",
                         p_.charges_.size(), exclusionPairs_.size() / 2, planEdge_,
                         c_fmmDeviceNames[p_.device_], p_.tolerance_, info.order, info.depth,
                         p_.treeDepth_ < 0 ? "adaptive" : "uniform", info.nleaves, opts_.threads,
                         p_.epsilonRResolved_, c_fmmBoundaryNames[p_.boundary_],
                         c_fmmPrecisionNames[p_.precision_]));
    }
    infoLogged_ = true;
}

} // namespace gmx
