/*
 * fmmtopologypreprocessor.h - the FMM module's work on the topology: at grompp the charges move
 * out of it into the module's tpr data (GROMACS then computes no Coulomb), at mdrun the excluded
 * pairs that the FMM plan leaves out are collected from it.
 *
 * Part of the fmm project (plugin/), not of GROMACS; copied with the module's other files into
 * src/gromacs/applied_forces/fmm/ by plugin/build-gromacs.sh --gromacs 2022.5.
 */
#ifndef GMX_APPLIED_FORCES_FMM_FMMTOPOLOGYPREPROCESSOR_H
#define GMX_APPLIED_FORCES_FMM_FMMTOPOLOGYPREPROCESSOR_H

#include <vector>

struct gmx_mtop_t;
struct warninp;

namespace gmx
{

/*! \brief grompp: refuses perturbed charges and polarization, saves every atom's charge (global
 * order) in *charges, moves each LJ-14 pair into an LJC14_Q pair that carries its own charges
 * (perturbed pair parameters refused where haveFreeEnergy), zeroes the topology's charges and
 * notes what it did through wi (when not null) */
void fmmPreprocessTopology(gmx_mtop_t* mtop, bool haveFreeEnergy, warninp* wi, std::vector<double>* charges);

//! All excluded pairs (i < j, global indices) of the topology
std::vector<int> fmmExcludedPairs(const gmx_mtop_t& mtop);

} // namespace gmx

#endif
