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
 * \brief Declares the force provider of the fmmlib FMM backend.
 *
 * fmmlib is the periodic fast multipole method of the fmm project, called through its C API
 * (fmm.h). It computes every Coulomb interaction of the system: all pairs, periodic, with the
 * tin-foil (or vacuum) boundary, minus the excluded pairs of the topology.
 */

#ifndef GMX_FMM_FMMLIBFORCEPROVIDER_H
#define GMX_FMM_FMMLIBFORCEPROVIDER_H

#include <array>
#include <vector>

#include "fmmforceprovider.h"
#include "fmmoptions.h"

struct fmm_plan;

namespace gmx
{

/*! \libinternal \brief Computes the Coulomb energy, forces and virial with the fmm library
 *
 * U = (ONE_4PI_EPS0 / eps_r) [ U_FMM(all pairs, periodic) - sum_{excluded i<j} q_i q_j / r_ij ],
 * the excluded pairs at their minimum image; the energy goes to Coul. recip.
 */
class FmmLibForceProvider final : public FmmBackendForceProvider
{
public:
    /*! \brief Sets up the backend; the library's plan is made at the first force call
     *
     * \param[in] options   the fmmlib mdp options
     * \param[in] mtop      the topology (for the excluded pairs)
     * \param[in] pbcType   the periodic boundary (checked: pbc = xyz)
     * \param[in] logger    where the plan is reported
     * \param[in] epsilonR  the run's relative dielectric constant
     */
    FmmLibForceProvider(const FmmLibOptions& options,
                        const gmx_mtop_t&    mtop,
                        PbcType              pbcType,
                        const MDLogger&      logger,
                        double               epsilonR);
    ~FmmLibForceProvider() override;

    void calculateForces(const ForceProviderInput& fInput, ForceProviderOutput* fOutput) override;

    /*! \brief Takes the home atoms' order after a redistribution
     *
     * With domain decomposition (which GROMACS uses also on a single rank), the home atoms are
     * in the order of their global indices, which are kept. On one rank the excluded pairs are
     * mapped to that order, and the charges go to the plan again at the next evaluation.
     */
    void atomsRedistributed(const MDModulesAtomsRedistributedSignal& signal) override;

private:
    /*! \brief One rank: the FMM of its home atoms (all atoms), their field into field_
     *
     * energy and virial (nullptr: not asked) as fmm_execute gives them.
     */
    void evaluateHome(const ForceProviderInput& fInput, double* energy, double* virial);
    /*! \brief Several ranks: the FMM of the whole system on the main rank
     *
     * The home positions are gathered on every rank in the global order (a sum over the ranks,
     * each atom being home on one), the main rank evaluates all atoms with the global charges
     * and excluded pairs, and its field reaches every rank by a second sum (into globalField_),
     * with its status, so that a failure stops every rank. energy and virial: the main rank's.
     */
    void evaluateGathered(const ForceProviderInput& fInput, double* energy, double* virial);
    //! Makes the plan for the step's box when it has none or the box changed
    void preparePlan(const ForceProviderInput& fInput);
    //! Throws with the library's message when rc is not FMM_OK
    static void check(int rc, const char* what);
    //! Reports the plan's parameters in the log, once
    void logPlan();

    const FmmLibOptions options_;
    const MDLogger&     logger_;
    //! Coulomb's constant over the relative dielectric constant
    const double prefactor_;
    //! Excluded pairs i0 j0 i1 j1 ... (global indices)
    const std::vector<int> excludedPairs_;
    //! The excluded pairs in the home atoms' order, where that is not the global one
    std::vector<int> localExcludedPairs_;
    //! Whether the plan has the excluded pairs of the current atom order
    bool exclusionsSent_ = false;
    //! The number of atoms of the system
    const int numAtoms_;
    //! OpenMP threads of the library and of the loops here
    const int numThreads_;
    fmm_plan* plan_ = nullptr;
    //! The cell of the plan, rows a, b, c
    std::array<double, 9> planCell_ = {};
    //! The plan keeps the charges of its first evaluation
    bool chargesSent_ = false;
    bool planLogged_  = false;
    //! Whether the first change of the box (after which every change re-plans) was reported
    bool boxChangeLogged_ = false;
    //! Positions and field in GROMACS's precision, interleaved x y z
    std::vector<real> xyz_;
    std::vector<real> field_;
    //! All charges in the order of the global indices (the gathered evaluation)
    const std::vector<double> globalCharges_;
    //! The home atoms' global indices (-1: a filler), with domain decomposition
    std::vector<int> homeGlobalIndex_;
    //! The gathered evaluation's positions and field of all atoms, global order, x y z
    std::vector<double> globalXyz_;
    std::vector<double> globalField_;
};

} // namespace gmx

#endif // GMX_FMM_FMMLIBFORCEPROVIDER_H
