/*
 * This file is part of the GROMACS molecular simulation package.
 *
 * Copyright 2026- The GROMACS Authors
 * and the project initiators Erik Lindahl, Berk Hess and David van der Spoel.
 * Consult the AUTHORS/COPYING files and https://www.gromacs.org for details.
 *
 * GROMACS is free software; you can redistribute it and/or
 * modify it under the terms of the GNU Lesser General Public License
 * as published by the Free Software Foundation; either version 2.1
 * of the License, or (at your option) any later version.
 *
 * GROMACS is distributed in the hope that it will be useful,
 * but WITHOUT ANY WARRANTY; without even the implied warranty of
 * MERCHANTABILITY or FITNESS FOR A PARTICULAR PURPOSE.  See the GNU
 * Lesser General Public License for more details.
 *
 * You should have received a copy of the GNU Lesser General Public
 * License along with GROMACS; if not, see
 * https://www.gnu.org/licenses, or write to the Free Software Foundation,
 * Inc., 51 Franklin Street, Fifth Floor, Boston, MA  02110-1301  USA.
 *
 * If you want to redistribute modifications to GROMACS, please
 * consider that scientific software is very special. Version
 * control is crucial - bugs must be traceable. We will be happy to
 * consider code for inclusion in the official distribution, but
 * derived work must not be called official GROMACS. Details are found
 * in the README & COPYING files - if they are missing, get the
 * official version at https://www.gromacs.org.
 *
 * To help us fund GROMACS development, we humbly ask that you cite
 * the research papers on the package. Check out https://www.gromacs.org.
 */

/*! \internal \file
 * \brief Implements the force provider of the fmmlib FMM backend.
 *
 * Units are GROMACS's (nm, e, kJ/mol); the library works in Gaussian units, so its field,
 * energy and virial are multiplied by ONE_4PI_EPS0 / epsilon_r here.
 */

#include "gmxpre.h"

#include "fmmlibforceprovider.h"

#include <array>

#include "gromacs/math/units.h"
#include "gromacs/mdlib/gmx_omp_nthreads.h"
#include "gromacs/mdrunutility/mdmodulesnotifiers.h"
#include "gromacs/mdtypes/enerdata.h"
#include "gromacs/mdtypes/forceoutput.h"
#include "gromacs/pbcutil/pbc.h"
#include "gromacs/topology/ifunc.h"
#include "gromacs/topology/topology.h"
#include "gromacs/utility/exceptions.h"
#include "gromacs/utility/logger.h"
#include "gromacs/utility/mpicomm.h"
#include "gromacs/utility/stringutil.h"

#include "fmm.h"
#include "fmmlibpreprocessing.h"

namespace gmx
{

static_assert(c_fmmLibToleranceMin == FMM_TOL_MIN && c_fmmLibToleranceMax == FMM_TOL_MAX
                      && c_fmmLibMixedToleranceMin == FMM_MIXED_TOL_MIN && c_fmmLibOrderMin == FMM_ORDER_MIN
                      && c_fmmLibOrderMax == FMM_ORDER_MAX && c_fmmLibTreeDepthMax == FMM_DEPTH_MAX,
              "The fmmlib option limits of fmmoptions.h must be those of fmm.h");

namespace
{

//! The library's entry points in GROMACS's own precision (inline: a build uses one or both)
//! \{
inline int fmmSetpts(fmm_plan* plan, long n, const float* xyz)
{
    return fmm_setptsf(plan, n, xyz);
}
inline int fmmSetpts(fmm_plan* plan, long n, const double* xyz)
{
    return fmm_setpts(plan, n, xyz);
}
inline int fmmExecute(fmm_plan* plan, const float* q, float* field, double* energy, double* virial)
{
    return fmm_executef(plan, q, nullptr, field, energy, virial);
}
inline int fmmExecute(fmm_plan* plan, const double* q, double* field, double* energy, double* virial)
{
    return fmm_execute(plan, q, nullptr, field, energy, virial);
}
//! \}

} // namespace

FmmLibForceProvider::FmmLibForceProvider(const FmmLibOptions& options,
                                         const gmx_mtop_t&    mtop,
                                         PbcType              pbcType,
                                         const MDLogger&      logger,
                                         double               epsilonR) :
    options_(options),
    logger_(logger),
    prefactor_(c_one4PiEps0 / options.resolvedEpsilonR(epsilonR)),
    excludedPairs_(fmmLibExcludedPairs(mtop)),
    numAtoms_(mtop.natoms),
    numThreads_(gmx_omp_nthreads_get(ModuleMultiThread::Default)),
    globalCharges_(fmmLibCharges(mtop))
{
    if (const std::optional<std::string> error = fmmLibUnsupportedPbc(pbcType))
    {
        GMX_THROW(InconsistentInputError(*error));
    }
}

FmmLibForceProvider::~FmmLibForceProvider()
{
    fmm_destroy(plan_);
}

void FmmLibForceProvider::check(int rc, const char* what)
{
    if (rc != FMM_OK)
    {
        GMX_THROW(InconsistentInputError(
                formatString("fmmlib: %s failed: %s (fmm status %d)", what, fmm_strerror(rc), rc)));
    }
}

void FmmLibForceProvider::preparePlan(const ForceProviderInput& fInput)
{
    // the cell's rows a, b, c, as fmm_makeplan_cell takes them; the library decides whether it
    // takes the cell (FMM_ERR_BOX with its reason otherwise)
    std::array<double, 9> cell;
    for (int a = 0; a < DIM; a++)
    {
        for (int d = 0; d < DIM; d++)
        {
            cell[DIM * a + d] = fInput.box_[a][d];
        }
    }
    if (plan_ != nullptr && cell == planCell_)
    {
        return;
    }
    fmm_destroy(plan_);
    plan_ = nullptr;
    fmm_opts opts;
    fmm_default_opts(&opts);
    opts.tolerance = options_.tolerance;
    opts.order     = options_.order;
    opts.depth     = options_.treeDepth;
    opts.periodic  = 1;
    opts.boundary = options_.boundary == FmmLibBoundary::Vacuum ? FMM_BOUNDARY_VACUUM : FMM_BOUNDARY_TINFOIL;
    opts.device    = options_.device == FmmLibDevice::Cuda ? FMM_DEVICE_CUDA : FMM_DEVICE_CPU;
    opts.precision = options_.precision == FmmLibPrecision::Mixed ? FMM_PRECISION_MIXED
                                                                  : FMM_PRECISION_DOUBLE;
    opts.threads   = numThreads_;
    check(fmm_makeplan_cell(&opts, cell.data(), &plan_), "fmm_makeplan_cell");
    exclusionsSent_ = false;
    // once: with pressure coupling the box changes every nstpcouple steps
    if (planCell_[0] != 0 && !boxChangeLogged_)
    {
        GMX_LOG(logger_.info)
                .asParagraph()
                .appendText(
                        "fmmlib: the box changed, the FMM plan is made anew at every change "
                        "(pressure coupling makes such steps slower; reported once)");
        boxChangeLogged_ = true;
    }
    planCell_    = cell;
    chargesSent_ = false;
}

void FmmLibForceProvider::atomsRedistributed(const MDModulesAtomsRedistributedSignal& signal)
{
    if (!signal.globalAtomIndices_.has_value())
    {
        return; // no domain decomposition: the atoms keep their global order
    }
    const ArrayRef<const int> globalIndices = signal.globalAtomIndices_.value();
    const int                 numHome       = static_cast<int>(signal.x_.size());
    homeGlobalIndex_.assign(globalIndices.begin(), globalIndices.begin() + numHome);
    if (numHome != numAtoms_)
    {
        return; // several ranks: the gathered evaluation works in the global order
    }
    std::vector<int> localIndex(numAtoms_);
    for (int i = 0; i < numAtoms_; i++)
    {
        localIndex[globalIndices[i]] = i;
    }
    localExcludedPairs_.resize(excludedPairs_.size());
    for (size_t k = 0; k < excludedPairs_.size(); k++)
    {
        localExcludedPairs_[k] = localIndex[excludedPairs_[k]];
    }
    exclusionsSent_ = false;
    chargesSent_    = false;
}

void FmmLibForceProvider::logPlan()
{
    if (planLogged_)
    {
        return;
    }
    // a triclinic cell: its rows b = (bx, by, 0) and c = (cx, cy, cz) have off-diagonal elements
    std::string offDiagonal;
    if (planCell_[3] != 0 || planCell_[6] != 0 || planCell_[7] != 0)
    {
        offDiagonal = formatString(
                " (triclinic, bx %.4f cx %.4f cy %.4f nm)", planCell_[3], planCell_[6], planCell_[7]);
    }
    fmm_info info;
    if (fmm_get_info(plan_, &info) == FMM_OK)
    {
        GMX_LOG(logger_.info)
                .asParagraph()
                .appendTextFormatted(
                        "fmmlib: %zu excluded pairs, box %.4f %.4f %.4f nm%s, %s, tolerance %g, "
                        "order %d, tree "
                        "depth %d (%s), %ld leaves, %d threads, Coulomb prefactor %g, boundary %s, "
                        "precision %s",
                        excludedPairs_.size() / 2,
                        planCell_[0],
                        planCell_[4],
                        planCell_[8],
                        offDiagonal.c_str(),
                        c_fmmLibDeviceNames[options_.device],
                        options_.tolerance,
                        info.order,
                        info.depth,
                        options_.treeDepth < 0 ? "adaptive" : "uniform",
                        info.nleaves,
                        numThreads_,
                        prefactor_,
                        c_fmmLibBoundaryNames[options_.boundary],
                        c_fmmLibPrecisionNames[options_.precision]);
    }
    planLogged_ = true;
}

void FmmLibForceProvider::evaluateHome(const ForceProviderInput& fInput, double* energy, double* virial)
{
    const int n = fInput.homenr_;
    if (n != numAtoms_)
    {
        GMX_THROW(InternalError(formatString(
                "fmmlib: %d home atoms on a single rank, the system has %d", n, numAtoms_)));
    }
    preparePlan(fInput);
    xyz_.resize(3 * static_cast<size_t>(n));
    field_.resize(3 * static_cast<size_t>(n));
#pragma omp parallel for num_threads(numThreads_) schedule(static)
    for (int i = 0; i < n; i++)
    {
        for (int d = 0; d < DIM; d++)
        {
            xyz_[3 * i + d] = fInput.x_[i][d];
        }
    }
    check(fmmSetpts(plan_, n, xyz_.data()), "fmm_setpts");
    if (!exclusionsSent_)
    {
        const std::vector<int>& pairs = localExcludedPairs_.empty() ? excludedPairs_ : localExcludedPairs_;
        check(fmm_set_exclusions(plan_, static_cast<long>(pairs.size() / 2), pairs.data()),
              "fmm_set_exclusions");
        exclusionsSent_ = true;
    }
    // the charges go to the plan once; later calls reuse them (q = nullptr)
    check(fmmExecute(plan_, chargesSent_ ? nullptr : fInput.chargeA_.data(), field_.data(), energy, virial),
          "fmm_execute");
    chargesSent_ = true;
    logPlan();
}

void FmmLibForceProvider::evaluateGathered(const ForceProviderInput& fInput, double* energy, double* virial)
{
    const MpiComm& comm = fInput.mpiComm_;
    const int      n    = fInput.homenr_;
    if (static_cast<int>(homeGlobalIndex_.size()) != n)
    {
        GMX_THROW(
                InternalError(formatString("fmmlib: %d home atoms, but the global indices of %zu "
                                           "after the last redistribution",
                                           n,
                                           homeGlobalIndex_.size())));
    }
    const size_t numValues = 3 * static_cast<size_t>(numAtoms_);
    globalXyz_.assign(numValues, 0.0);
    for (int i = 0; i < n; i++)
    {
        const int g = homeGlobalIndex_[i];
        for (int d = 0; g >= 0 && d < DIM; d++)
        {
            globalXyz_[3 * static_cast<size_t>(g) + d] = fInput.x_[i][d];
        }
    }
    comm.sumReduce(globalXyz_);
    globalField_.assign(numValues + 1, 0.0); // the field, then the main rank's status
    std::string error;
    if (comm.isMainRank())
    {
        try
        {
            preparePlan(fInput);
            check(fmmSetpts(plan_, numAtoms_, globalXyz_.data()), "fmm_setpts");
            if (!exclusionsSent_)
            {
                check(fmm_set_exclusions(
                              plan_, static_cast<long>(excludedPairs_.size() / 2), excludedPairs_.data()),
                      "fmm_set_exclusions");
                exclusionsSent_ = true;
            }
            check(fmmExecute(plan_, chargesSent_ ? nullptr : globalCharges_.data(), globalField_.data(), energy, virial),
                  "fmm_execute");
            chargesSent_ = true;
            logPlan();
        }
        catch (const GromacsException& ex)
        {
            error                   = ex.what();
            globalField_[numValues] = 1;
        }
    }
    comm.sumReduce(globalField_);
    if (globalField_[numValues] != 0)
    {
        GMX_THROW(InconsistentInputError(
                comm.isMainRank()
                        ? error
                        : "fmmlib: the evaluation on the main rank failed (its message is "
                          "in the main rank's output)"));
    }
}

void FmmLibForceProvider::calculateForces(const ForceProviderInput& fInput, ForceProviderOutput* fOutput)
{
    ForceWithVirial& forceWithVirial = fOutput->forceWithVirial_;
    double           energy          = 0;
    double           virial[9]       = { 0 };
    double*          virialOut       = forceWithVirial.computeVirial_ ? virial : nullptr;
    const bool       gathered        = fInput.mpiComm_.isParallel();
    if (gathered)
    {
        evaluateGathered(fInput, &energy, virialOut);
    }
    else
    {
        evaluateHome(fInput, &energy, virialOut);
    }

    const int                  n = fInput.homenr_;
    const ArrayRef<RVec>       f = forceWithVirial.force_;
    const ArrayRef<const real> q = fInput.chargeA_;
#pragma omp parallel for num_threads(numThreads_) schedule(static)
    for (int i = 0; i < n; i++)
    {
        const int g = gathered ? homeGlobalIndex_[i] : i;
        if (g < 0)
        {
            continue; // a filler
        }
        const double cq = prefactor_ * q[i];
        for (int d = 0; d < DIM; d++)
        {
            f[i][d] += cq * (gathered ? globalField_[3 * static_cast<size_t>(g) + d] : field_[3 * i + d]);
        }
    }
    // energy and virial are those of the whole system: with several ranks the main rank's alone,
    // as GROMACS sums both over the ranks
    if (gathered && !fInput.mpiComm_.isMainRank())
    {
        return;
    }
    if (forceWithVirial.computeVirial_)
    {
        // GROMACS's virial is -1/2 sum x (x) f; the library's W_ab = -dU/d eps_ab
        matrix vir;
        for (int a = 0; a < DIM; a++)
        {
            for (int b = 0; b < DIM; b++)
            {
                vir[a][b] = -0.5 * prefactor_ * virial[3 * b + a];
            }
        }
        forceWithVirial.addVirialContribution(vir);
    }
    fOutput->enerd_.term[InteractionFunction::CoulombReciprocalSpace] += prefactor_ * energy;
}

} // namespace gmx
