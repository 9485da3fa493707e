/*
 * fmmtypes.h - the FMM module's parameters: the mdp options' enumerations with their mdp names,
 * and FmmParameters, the options plus what grompp resolved (the charges, the epsilon-r), which the
 * options (fmmoptions.h) fill and the force provider (fmmforceprovider.h) reads.
 *
 * Part of the fmm project (plugin/), not of GROMACS; copied with the module's other files into
 * src/gromacs/applied_forces/fmm/ by plugin/build-gromacs.sh --gromacs 2022.5.
 */
#ifndef GMX_APPLIED_FORCES_FMM_FMMTYPES_H
#define GMX_APPLIED_FORCES_FMM_FMMTYPES_H

#include <vector>

#include "gromacs/utility/enumerationhelpers.h"

namespace gmx
{

//! Where the FMM runs (mdp fmm-device)
enum class FmmDevice : int
{
    Cpu,
    Cuda,
    Count
};
const EnumerationArray<FmmDevice, const char*> c_fmmDeviceNames = { { "cpu", "cuda" } };

//! Arithmetic of the GPU FMM (mdp fmm-precision): mixed = near field in float
enum class FmmPrecision : int
{
    Double,
    Mixed,
    Count
};
const EnumerationArray<FmmPrecision, const char*> c_fmmPrecisionNames = { { "double", "mixed" } };

//! Boundary at infinity of the periodic lattice (mdp fmm-boundary)
enum class FmmBoundary : int
{
    Tinfoil,
    Vacuum,
    Count
};
const EnumerationArray<FmmBoundary, const char*> c_fmmBoundaryNames = { { "tinfoil", "vacuum" } };

//! The module's parameters: mdp options plus what grompp resolved
struct FmmParameters
{
    bool        active_    = false;
    double      tolerance_ = 1e-5;
    int         order_     = 0;  // 0: chosen by the library from the tolerance
    int         treeDepth_ = -1; // -1: adaptive tree
    FmmDevice   device_    = FmmDevice::Cpu;
    double      epsilonR_  = 0; // 0: the mdp epsilon-r
    FmmBoundary boundary_  = FmmBoundary::Tinfoil;
    FmmPrecision precision_ = FmmPrecision::Double;
    // resolved at grompp / read at mdrun
    std::vector<double> charges_;
    double              epsilonRResolved_ = 1;
};

} // namespace gmx

#endif
