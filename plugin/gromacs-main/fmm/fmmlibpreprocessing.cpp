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
 * \brief Implements the checks and the topology preprocessing of the fmmlib FMM backend.
 */

#include "gmxpre.h"

#include "fmmlibpreprocessing.h"

#include <algorithm>
#include <utility>

#include "gromacs/pbcutil/pbc.h"
#include "gromacs/topology/topology.h"
#include "gromacs/utility/stringutil.h"

namespace gmx
{

std::optional<std::string> fmmLibUnsupportedPbc(PbcType pbcType)
{
    // every cell that GROMACS allows is one the library takes (fmm_makeplan_cell; on the GPU,
    // cubes only: fmm_makeplan_cell says so at mdrun)
    if (pbcType != PbcType::Xyz)
    {
        return formatString("fmm-backend = fmmlib needs pbc = xyz, not pbc = %s.",
                            c_pbcTypeNames[pbcType].c_str());
    }
    return std::nullopt;
}

std::optional<std::string> fmmLibUnsupportedTopology(const gmx_mtop_t& mtop)
{
    for (const gmx_moltype_t& moltype : mtop.moltype)
    {
        for (int a = 0; a < moltype.atoms.nr; a++)
        {
            if (PERTURBED(moltype.atoms.atom[a]))
            {
                return formatString(
                        "fmm-backend = fmmlib does not support free-energy perturbed atoms "
                        "(molecule type %s, atom %d): the FMM has one set of charges, and the "
                        "perturbed pair kernel has no FMM Coulomb.",
                        *moltype.name,
                        a + 1);
            }
        }
    }
    return std::nullopt;
}

std::vector<int> fmmLibExcludedPairs(const gmx_mtop_t& mtop)
{
    std::vector<std::pair<int, int>> pairs;
    int                              offset = 0;
    for (const gmx_molblock_t& molblock : mtop.molblock)
    {
        const gmx_moltype_t& moltype = mtop.moltype[molblock.type];
        for (int m = 0; m < molblock.nmol; m++)
        {
            for (int a = 0; a < moltype.atoms.nr; a++)
            {
                for (const int b : moltype.excls[a])
                {
                    if (b > a)
                    {
                        pairs.emplace_back(offset + a, offset + b);
                    }
                }
            }
            offset += moltype.atoms.nr;
        }
    }
    const std::vector<int>& group = mtop.intermolecularExclusionGroup;
    if (!group.empty())
    {
        std::vector<std::pair<int, int>> known(pairs);
        std::sort(known.begin(), known.end());
        for (size_t x = 0; x < group.size(); x++)
        {
            for (size_t y = x + 1; y < group.size(); y++)
            {
                const std::pair<int, int> pair(std::min(group[x], group[y]), std::max(group[x], group[y]));
                if (pair.first != pair.second && !std::binary_search(known.begin(), known.end(), pair))
                {
                    pairs.push_back(pair);
                }
            }
        }
    }
    std::vector<int> flat;
    flat.reserve(2 * pairs.size());
    for (const auto& [i, j] : pairs)
    {
        flat.push_back(i);
        flat.push_back(j);
    }
    return flat;
}

std::vector<double> fmmLibCharges(const gmx_mtop_t& mtop)
{
    std::vector<double> charges;
    charges.reserve(mtop.natoms);
    for (const gmx_molblock_t& molblock : mtop.molblock)
    {
        const t_atoms& atoms = mtop.moltype[molblock.type].atoms;
        for (int m = 0; m < molblock.nmol; m++)
        {
            for (int a = 0; a < atoms.nr; a++)
            {
                charges.push_back(atoms.atom[a].q);
            }
        }
    }
    return charges;
}

} // namespace gmx
