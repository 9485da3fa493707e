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

/*! \libinternal \file
 * \brief Declares the checks and the topology preprocessing of the fmmlib FMM backend.
 *
 * These need no part of the fmm library, so that grompp applies them in every build.
 */

#ifndef GMX_FMM_FMMLIBPREPROCESSING_H
#define GMX_FMM_FMMLIBPREPROCESSING_H

#include <optional>
#include <string>
#include <vector>


struct gmx_mtop_t;
enum class PbcType : int;

namespace gmx
{

/*! \brief Why fmmlib cannot simulate this periodic boundary, or nothing when it can.
 *
 * The one place that decides which boxes the backend takes at grompp: the periodic FMM of
 * the library needs pbc = xyz and takes every cell GROMACS allows (fmm_makeplan_cell, which
 * refuses at mdrun what its device cannot do).
 */
std::optional<std::string> fmmLibUnsupportedPbc(PbcType pbcType);

/*! \brief Why fmmlib cannot simulate this topology, or nothing when it can.
 *
 * Refuses free-energy perturbed atoms: the FMM has one set of charges, and GROMACS's
 * perturbed pair kernel has no FMM Coulomb.
 */
std::optional<std::string> fmmLibUnsupportedTopology(const gmx_mtop_t& mtop);

/*! \brief The excluded pairs of the topology, i0 j0 i1 j1 ... (i < j, global atom indices).
 *
 * The molecules' exclusions (bonded neighbours, SETTLE water, 1-4 pairs, whose Coulomb GROMACS
 * computes as pair interactions) and all pairs of the intermolecular exclusion group that are
 * not excluded already: fmmlib leaves out their Coulomb interaction.
 */
std::vector<int> fmmLibExcludedPairs(const gmx_mtop_t& mtop);

/*! \brief The charges of all atoms in the order of their global indices (state A).
 *
 * With several ranks the main rank evaluates the FMM of the whole system in that order
 * (FmmLibForceProvider), and the charges do not change during a run (perturbed atoms are refused).
 */
std::vector<double> fmmLibCharges(const gmx_mtop_t& mtop);

} // namespace gmx

#endif // GMX_FMM_FMMLIBPREPROCESSING_H
