/*
 * fmmmodule.h - the project's fast multipole method as a GROMACS 2022 MDModule.
 *
 * Part of the fmm project (plugin/), not of GROMACS. Copied into
 * src/gromacs/applied_forces/fmm/ of a GROMACS 2022.5 source tree by
 * plugin/build-gromacs.sh, together with plugin/gromacs-2022.5-fmm.patch, which registers
 * the module in MDModules and adds two notifications (the inputrec at grompp, the
 * Coul. recip. energy-output request at mdrun).
 *
 * What the module does (see docs/gromacs.md):
 *  - grompp (fmm-active = yes): checks the set-up (cubic box, pbc = xyz, coulombtype = Cut-off,
 *    no perturbed charges, no anisotropic pressure coupling), stores every atom's charge and the
 *    resolved options in the tpr's key-value tree, rewrites each LJ-14 pair into an LJC14_Q pair
 *    that carries its own charges, then zeroes every charge in the topology, so that GROMACS's
 *    own kernels compute no Coulomb interaction at all;
 *  - mdrun: a force provider that computes, on every force call, the periodic Coulomb energy,
 *    forces and virial of all charges with the FMM (C API include/fmm.h), minus the direct
 *    1/r interaction of every excluded pair (minimum image), and adds the energy to Coul. recip.
 */
#ifndef GMX_APPLIED_FORCES_FMM_FMMMODULE_H
#define GMX_APPLIED_FORCES_FMM_FMMMODULE_H

#include <memory>
#include <string>

namespace gmx
{

class IMDModule;

struct FmmModuleInfo
{
    //! Creates the module (inactive unless fmm-active = yes in the mdp file).
    static std::unique_ptr<IMDModule> create();
    //! The name of the module: the mdp option prefix "fmm-"
    static const std::string name_;
};

} // namespace gmx

#endif
