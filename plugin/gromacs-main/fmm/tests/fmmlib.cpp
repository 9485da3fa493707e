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
 * \brief Tests for the fmmlib FMM backend: options, validation, topology preprocessing and,
 * where GROMACS is built with the fmm library, forces against an Ewald sum.
 */

#include "gmxpre.h"

#include <cmath>

#include <array>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "gromacs/fileio/warninp.h"
#include "gromacs/fmm/fmm_mdmodule.h"
#include "gromacs/fmm/fmm_mdpoptions.h"
#include "gromacs/fmm/fmmforceprovider.h"
#include "gromacs/fmm/fmmlibpreprocessing.h"
#include "gromacs/fmm/fmmoptions.h"
#include "gromacs/math/functions.h"
#include "gromacs/math/units.h"
#include "gromacs/mdrunutility/mdmodulesnotifiers.h"
#include "gromacs/mdtypes/enerdata.h"
#include "gromacs/mdtypes/forceoutput.h"
#include "gromacs/mdtypes/iforceprovider.h"
#include "gromacs/mdtypes/imdmodule.h"
#include "gromacs/mdtypes/imdpoptionprovider_test_helper.h"
#include "gromacs/pbcutil/pbc.h"
#include "gromacs/topology/atoms.h"
#include "gromacs/topology/topology.h"
#include "gromacs/utility/keyvaluetree.h"
#include "gromacs/utility/keyvaluetreebuilder.h"
#include "gromacs/utility/keyvaluetreemdpwriter.h"
#include "gromacs/utility/logger.h"
#include "gromacs/utility/mpicomm.h"
#include "gromacs/utility/stringstream.h"
#include "gromacs/utility/textwriter.h"
#include "gromacs/utility/vec.h"

#include "testutils/loggertest.h"
#include "testutils/refdata.h"
#include "testutils/testasserts.h"

namespace gmx
{
namespace test
{
namespace
{

//! mdp values (option name without the "fmm-" prefix -> value) with fmm-backend = fmmlib
KeyValueTreeObject fmmLibMdpValues(const std::map<std::string, std::string>& options = {})
{
    KeyValueTreeBuilder builder;
    const std::string   prefix = std::string(FmmModuleInfo::sc_name) + "-";
    builder.rootObject().addValue(prefix + c_fmmActiveOptionName, fmmBackendName(ActiveFmmBackend::FmmLib));
    for (const auto& [name, value] : options)
    {
        builder.rootObject().addValue(prefix + name, value);
    }
    return builder.build();
}

//! A water-like molecule type (charges -0.8, 0.4, 0.4, all pairs excluded) in \p nmol copies
void addWaters(gmx_mtop_t* mtop, int nmol)
{
    // made in place: a copy of a molecule type would share (and free) its atoms
    mtop->moltype.emplace_back();
    gmx_moltype_t& moltype = mtop->moltype.back();
    init_t_atoms(&moltype.atoms, 3, false);
    for (int a = 0; a < 3; a++)
    {
        moltype.atoms.atom[a].q = moltype.atoms.atom[a].qB = (a == 0) ? -0.8 : 0.4;
        moltype.atoms.atom[a].m = moltype.atoms.atom[a].mB = (a == 0) ? 16 : 1;
    }
    const std::vector<int> allAtoms = { 0, 1, 2 };
    for (int a = 0; a < 3; a++)
    {
        moltype.excls.pushBack(allAtoms);
    }
    static char  name[]  = "SOL";
    static char* namePtr = name;
    moltype.name         = &namePtr;
    mtop->molblock.emplace_back();
    mtop->molblock.back().type = mtop->moltype.size() - 1;
    mtop->molblock.back().nmol = nmol;
    mtop->natoms += 3 * nmol;
}

//! Errors, warnings of grompp's FMM checks for these mdp values, Coulomb type, box and topology
struct GromppChecks
{
    int errors   = 0;
    int warnings = 0;
};

GromppChecks runGromppChecks(const KeyValueTreeObject&       mdpValues,
                             const MdModulesCoulombTypeInfo& coulombTypeInfo,
                             PbcType                         pbcType,
                             const matrix                    box,
                             gmx_mtop_t*                     mtop)
{
    std::unique_ptr<IMDModule> fmmModule = FmmModuleInfo::create();
    fillOptionsFromMdpValues(mdpValues, fmmModule->mdpOptionProvider());
    MDModulesNotifiers notifiers;
    fmmModule->subscribeToPreProcessingNotifications(&notifiers);
    WarningHandler wi(true, 10);
    notifiers.preProcessingNotifier_.notify(&wi);
    notifiers.preProcessingNotifier_.notify(coulombTypeInfo);
    notifiers.preProcessingNotifier_.notify(mtop);
    CoordinatesAndBoxPreprocessed coordinatesAndBox;
    copy_mat(box, coordinatesAndBox.box_);
    coordinatesAndBox.pbc_ = pbcType;
    notifiers.preProcessingNotifier_.notify(coordinatesAndBox);
    return { wi.errorCount(), wi.warningCount() };
}

class FmmLibValidatorTest : public ::testing::Test
{
protected:
    FmmLibValidatorTest() { addWaters(&mtop_, 2); }

    //! The checks with these options and otherwise valid settings
    GromppChecks check(const std::map<std::string, std::string>& options,
                       real                                      epsilonR = 1,
                       PbcType                                   pbcType  = PbcType::Xyz)
    {
        return runGromppChecks(
                fmmLibMdpValues(options), { CoulombInteractionType::Fmm, epsilonR }, pbcType, cube_, &mtop_);
    }

    gmx_mtop_t   mtop_;
    const matrix cube_ = { { 2, 0, 0 }, { 0, 2, 0 }, { 0, 0, 2 } };
};

} // namespace

TEST(FmmLibMdpOptionsTest, OutputDefaultValuesWhenActive)
{
    FmmMdpOptions fmmMdpOptions;
    fillOptionsFromMdpValues(fmmLibMdpValues(), &fmmMdpOptions);

    StringOutputStream        stream;
    KeyValueTreeBuilder       builder;
    KeyValueTreeObjectBuilder builderObject = builder.rootObject();
    fmmMdpOptions.buildMdpOutput(&builderObject);
    {
        TextWriter writer(&stream);
        writeKeyValueTreeAsMdp(&writer, builder.build());
    }
    stream.close();

    TestReferenceData    data;
    TestReferenceChecker checker(data.rootChecker());
    checker.checkString(stream.toString(), "Mdp output");
}

TEST(FmmLibMdpOptionsTest, ParsesNonDefaultValues)
{
    FmmMdpOptions fmmMdpOptions;
    fillOptionsFromMdpValues(fmmLibMdpValues({ { c_fmmFmmLibToleranceOptionName, "1e-8" },
                                               { c_fmmFmmLibOrderOptionName, "12" },
                                               { c_fmmFmmLibTreeDepthOptionName, "3" },
                                               { c_fmmFmmLibDeviceOptionName, "cuda" },
                                               { c_fmmFmmLibPrecisionOptionName, "mixed" },
                                               { c_fmmFmmLibBoundaryOptionName, "vacuum" },
                                               { c_fmmFmmLibEpsilonROptionName, "2.5" } }),
                             &fmmMdpOptions);
    const FmmLibOptions& opts = fmmMdpOptions.fmmLibOptions();
    EXPECT_EQ(opts.tolerance, 1e-8);
    EXPECT_EQ(opts.order, 12);
    EXPECT_EQ(opts.treeDepth, 3);
    EXPECT_EQ(opts.device, FmmLibDevice::Cuda);
    EXPECT_EQ(opts.precision, FmmLibPrecision::Mixed);
    EXPECT_EQ(opts.boundary, FmmLibBoundary::Vacuum);
    EXPECT_EQ(opts.epsilonR, 2.5);
    EXPECT_EQ(opts.resolvedEpsilonR(1), 2.5);
    EXPECT_THROW(fmmMdpOptions.exaFmmOptions(), InternalError);
}

TEST(FmmLibMdpOptionsTest, IsTheDirectProvider)
{
    FmmMdpOptions fmmMdpOptions;
    fillOptionsFromMdpValues(fmmLibMdpValues(), &fmmMdpOptions);
    EXPECT_EQ(fmmMdpOptions.directProvider(), FmmDirectProvider::Fmm);
    EXPECT_EQ(fmmMdpOptions.fmmLibOptions().resolvedEpsilonR(1.5), 1.5);
}

TEST_F(FmmLibValidatorTest, AcceptsValidSettings)
{
    const GromppChecks defaults = check({});
    EXPECT_EQ(defaults.errors, 0);
    EXPECT_EQ(defaults.warnings, 0);
    const GromppChecks limits = check({ { c_fmmFmmLibToleranceOptionName, "1e-12" },
                                        { c_fmmFmmLibOrderOptionName, "50" },
                                        { c_fmmFmmLibTreeDepthOptionName, "20" },
                                        { c_fmmFmmLibDeviceOptionName, "cuda" },
                                        { c_fmmFmmLibPrecisionOptionName, "mixed" },
                                        { c_fmmFmmLibEpsilonROptionName, "1" } });
    EXPECT_EQ(limits.errors, 0);
    EXPECT_EQ(limits.warnings, 0);
}

TEST_F(FmmLibValidatorTest, RefusesEachInvalidOption)
{
    const std::vector<std::map<std::string, std::string>> invalid = {
        { { c_fmmFmmLibToleranceOptionName, "1e-13" } },
        { { c_fmmFmmLibToleranceOptionName, "2e-3" } },
        { { c_fmmFmmLibToleranceOptionName, "nan" } },
        { { c_fmmFmmLibOrderOptionName, "-1" } },
        { { c_fmmFmmLibOrderOptionName, "51" } },
        { { c_fmmFmmLibTreeDepthOptionName, "-2" } },
        { { c_fmmFmmLibTreeDepthOptionName, "21" } },
        { { c_fmmFmmLibEpsilonROptionName, "-1" } },
        { { c_fmmFmmLibEpsilonROptionName, "inf" } },
        { { c_fmmFmmLibPrecisionOptionName, "mixed" } },
        { { c_fmmFmmLibDeviceOptionName, "cuda" },
          { c_fmmFmmLibPrecisionOptionName, "mixed" },
          { c_fmmFmmLibToleranceOptionName, "1e-6" } },
    };
    for (const auto& options : invalid)
    {
        SCOPED_TRACE(options.begin()->first + " = " + options.begin()->second);
        EXPECT_EQ(check(options).errors, 1);
    }
}

TEST_F(FmmLibValidatorTest, RefusesRunSettings)
{
    // epsilon-r 0 (infinity) and infinite
    EXPECT_EQ(check({}, 0).errors, 1);
    EXPECT_EQ(check({}, std::numeric_limits<real>::infinity()).errors, 1);
    // a Coulomb type other than FMM
    EXPECT_EQ(runGromppChecks(fmmLibMdpValues(), { CoulombInteractionType::Pme, 1 }, PbcType::Xyz, cube_, &mtop_)
                      .errors,
              1);
    // pbc other than xyz
    EXPECT_EQ(check({}, 1, PbcType::XY).errors, 1);
    EXPECT_EQ(check({}, 1, PbcType::No).errors, 1);
    // fmmlib-epsilon-r differing from epsilon-r is a warning
    const GromppChecks differs = check({ { c_fmmFmmLibEpsilonROptionName, "2" } });
    EXPECT_EQ(differs.errors, 0);
    EXPECT_EQ(differs.warnings, 1);
}

TEST_F(FmmLibValidatorTest, AcceptsEveryPeriodicCell)
{
    const matrix brick     = { { 2, 0, 0 }, { 0, 2, 0 }, { 0, 0, 3 } };
    const matrix triclinic = { { 2, 0, 0 }, { 0.5, 2, 0 }, { 0, 0, 2 } };
    for (const auto* box : { &brick, &triclinic })
    {
        EXPECT_EQ(runGromppChecks(
                          fmmLibMdpValues(), { CoulombInteractionType::Fmm, 1 }, PbcType::Xyz, *box, &mtop_)
                          .errors,
                  0);
    }
    EXPECT_FALSE(fmmLibUnsupportedPbc(PbcType::Xyz).has_value());
}

TEST_F(FmmLibValidatorTest, RefusesPerturbedAtoms)
{
    mtop_.moltype[0].atoms.atom[1].qB = 0;
    EXPECT_EQ(check({}).errors, 1);
    mtop_.moltype[0].atoms.atom[1].qB    = mtop_.moltype[0].atoms.atom[1].q;
    mtop_.moltype[0].atoms.atom[1].typeB = 1;
    EXPECT_EQ(check({}).errors, 1);
}

TEST(FmmInactiveBackendTest, RefusesFmmCoulombWithoutBackend)
{
    gmx_mtop_t   mtop;
    const matrix box = { { 2, 0, 0 }, { 0, 2, 0 }, { 0, 0, 2 } };
    EXPECT_EQ(runGromppChecks(KeyValueTreeObject(), { CoulombInteractionType::Fmm, 1 }, PbcType::Xyz, box, &mtop)
                      .errors,
              1);
    EXPECT_EQ(runGromppChecks(KeyValueTreeObject(), { CoulombInteractionType::Pme, 1 }, PbcType::Xyz, box, &mtop)
                      .errors,
              0);
}

TEST(FmmLibPreprocessingTest, ExcludedPairs)
{
    gmx_mtop_t mtop;
    addWaters(&mtop, 2);
    EXPECT_EQ(fmmLibExcludedPairs(mtop), (std::vector<int>{ 0, 1, 0, 2, 1, 2, 3, 4, 3, 5, 4, 5 }));
    // the intermolecular exclusion group adds the pairs it has beyond those
    mtop.intermolecularExclusionGroup = { 1, 2, 4 };
    EXPECT_EQ(fmmLibExcludedPairs(mtop),
              (std::vector<int>{ 0, 1, 0, 2, 1, 2, 3, 4, 3, 5, 4, 5, 1, 4, 2, 4 }));
}

#if GMX_USE_EXT_FMM

namespace
{

/*! \brief Coulomb energy, forces and virial trace of charges in a periodic cube by an Ewald sum
 * (tin-foil, neutral), without the excluded pairs at their minimum image; GROMACS units
 * with epsilon-r 1. */
struct EwaldReference
{
    double energy = 0;
    //! The Coulomb energy of the excluded pairs, which the total leaves out
    double            excludedEnergy = 0;
    std::vector<RVec> forces;
};

EwaldReference ewaldWithoutExclusions(const std::vector<RVec>& x,
                                      const std::vector<real>& q,
                                      double                   edge,
                                      const std::vector<int>&  excludedPairs)
{
    const int    n     = x.size();
    const double alpha = 7.0 / edge; // erfc(alpha L) ~ 4e-23: images beyond +-1 cell negligible
    const int    kmax  = 14;         // exp(-pi^2 k^2 / (alpha L)^2) < 2e-18 beyond
    std::vector<DVec> field(n, DVec(0, 0, 0));
    double            energy         = 0;
    double            excludedEnergy = 0;
    // real space: all pairs and images of the neighbouring cells
    for (int i = 0; i < n; i++)
    {
        for (int j = 0; j < n; j++)
        {
            for (int sx = -2; sx <= 2; sx++)
            {
                for (int sy = -2; sy <= 2; sy++)
                {
                    for (int sz = -2; sz <= 2; sz++)
                    {
                        if (i == j && sx == 0 && sy == 0 && sz == 0)
                        {
                            continue;
                        }
                        const DVec   d(x[i][XX] - x[j][XX] + sx * edge,
                                     x[i][YY] - x[j][YY] + sy * edge,
                                     x[i][ZZ] - x[j][ZZ] + sz * edge);
                        const double r = d.norm();
                        const double e = std::erfc(alpha * r) / r;
                        energy += 0.5 * q[i] * q[j] * e;
                        const double g =
                                (e + 2 * alpha / std::sqrt(M_PI) * std::exp(-alpha * alpha * r * r))
                                / (r * r);
                        field[i] += (q[j] * g) * d;
                    }
                }
            }
        }
        energy -= alpha / std::sqrt(M_PI) * q[i] * q[i];
    }
    // reciprocal space
    const double volume = edge * edge * edge;
    for (int kx = -kmax; kx <= kmax; kx++)
    {
        for (int ky = -kmax; ky <= kmax; ky++)
        {
            for (int kz = -kmax; kz <= kmax; kz++)
            {
                if (kx == 0 && ky == 0 && kz == 0)
                {
                    continue;
                }
                const DVec   k(2 * M_PI * kx / edge, 2 * M_PI * ky / edge, 2 * M_PI * kz / edge);
                const double k2 = k.dot(k);
                const double a  = 4 * M_PI / volume * std::exp(-k2 / (4 * alpha * alpha)) / k2;
                double       sc = 0, ss = 0;
                for (int j = 0; j < n; j++)
                {
                    const double phase = k[XX] * x[j][XX] + k[YY] * x[j][YY] + k[ZZ] * x[j][ZZ];
                    sc += q[j] * std::cos(phase);
                    ss += q[j] * std::sin(phase);
                }
                energy += 0.5 * a * (sc * sc + ss * ss);
                for (int i = 0; i < n; i++)
                {
                    const double phase = k[XX] * x[i][XX] + k[YY] * x[i][YY] + k[ZZ] * x[i][ZZ];
                    field[i] += (a * (std::sin(phase) * sc - std::cos(phase) * ss)) * k;
                }
            }
        }
    }
    // the excluded pairs at their minimum image
    for (size_t p = 0; p < excludedPairs.size(); p += 2)
    {
        const int i = excludedPairs[p];
        const int j = excludedPairs[p + 1];
        DVec      d(x[i][XX] - x[j][XX], x[i][YY] - x[j][YY], x[i][ZZ] - x[j][ZZ]);
        for (int dim = 0; dim < DIM; dim++)
        {
            d[dim] -= edge * std::round(d[dim] / edge);
        }
        const double r = d.norm();
        energy -= q[i] * q[j] / r;
        excludedEnergy += q[i] * q[j] / r;
        field[i] -= (q[j] / (r * r * r)) * d;
        field[j] += (q[i] / (r * r * r)) * d;
    }
    EwaldReference reference;
    reference.energy         = c_one4PiEps0 * energy;
    reference.excludedEnergy = c_one4PiEps0 * excludedEnergy;
    for (int i = 0; i < n; i++)
    {
        const double c = c_one4PiEps0 * q[i];
        reference.forces.emplace_back(c * field[i][XX], c * field[i][YY], c * field[i][ZZ]);
    }
    return reference;
}

} // namespace

TEST(FmmLibForceProviderTest, ForcesEnergyAndVirialMatchEwald)
{
    // 24 rigid waters at fixed pseudo-random positions and orientations in a 1.3 nm cube
    const int    numWaters = 24;
    const double edge      = 1.3;
    gmx_mtop_t   mtop;
    addWaters(&mtop, numWaters);
    std::mt19937_64                        rng(20261128);
    std::uniform_real_distribution<double> uniform(0, 1);
    std::vector<RVec>                      x;
    std::vector<real>                      q;
    const std::array<DVec, 3> geometry = { DVec(0, 0, 0), DVec(0.1, 0, 0), DVec(-0.0334, 0.0943, 0) };
    for (int m = 0; m < numWaters; m++)
    {
        const DVec centre(edge * uniform(rng), edge * uniform(rng), edge * uniform(rng));
        // a random rotation from a random unit quaternion
        const double u1 = uniform(rng), u2 = 2 * M_PI * uniform(rng), u3 = 2 * M_PI * uniform(rng);
        const double qw = std::sqrt(1 - u1) * std::sin(u2), qx = std::sqrt(1 - u1) * std::cos(u2);
        const double qy = std::sqrt(u1) * std::sin(u3), qz = std::sqrt(u1) * std::cos(u3);
        const double rot[3][3] = {
            { 1 - 2 * (qy * qy + qz * qz), 2 * (qx * qy - qz * qw), 2 * (qx * qz + qy * qw) },
            { 2 * (qx * qy + qz * qw), 1 - 2 * (qx * qx + qz * qz), 2 * (qy * qz - qx * qw) },
            { 2 * (qx * qz - qy * qw), 2 * (qy * qz + qx * qw), 1 - 2 * (qx * qx + qy * qy) }
        };
        for (int a = 0; a < 3; a++)
        {
            RVec position;
            for (int d = 0; d < DIM; d++)
            {
                position[d] = centre[d] + rot[d][0] * geometry[a][0] + rot[d][1] * geometry[a][1]
                              + rot[d][2] * geometry[a][2];
                // the positions are in GROMACS's precision before both computations
                position[d] = position[d] - edge * std::floor(position[d] / edge);
            }
            x.push_back(position);
            q.push_back(mtop.moltype[0].atoms.atom[a].q);
        }
    }
    const EwaldReference reference = ewaldWithoutExclusions(x, q, edge, fmmLibExcludedPairs(mtop));

    FmmMdpOptions fmmMdpOptions;
    fillOptionsFromMdpValues(fmmLibMdpValues({ { c_fmmFmmLibToleranceOptionName, "1e-8" } }), &fmmMdpOptions);
    MDLogger            logger;
    FmmForceProvider    provider(fmmMdpOptions.fmmLibOptions(), mtop, PbcType::Xyz, logger, 1.0);
    const matrix        box = { { real(edge), 0, 0 }, { 0, real(edge), 0 }, { 0, 0, real(edge) } };
    MpiComm             mpiComm(MpiComm::SingleRank{});
    ForceProviderInput  input(x, x.size(), q, {}, 0.0, 0, box, mpiComm, nullptr);
    std::vector<RVec>   f(x.size(), RVec(0, 0, 0));
    ForceWithVirial     forceWithVirial(f, true);
    gmx_enerdata_t      enerd(1, nullptr);
    ForceProviderOutput output(&forceWithVirial, &enerd);
    provider.calculateForces(input, &output);

    const double energy = enerd.term[InteractionFunction::CoulombReciprocalSpace];
    // the total is a small difference of large sums (the excluded pairs' energy is about 30 times
    // larger here): the FMM's periodic accuracy, about 1e-7 of those sums, sets the tolerance
    EXPECT_REAL_EQ_TOL(
            reference.energy, energy, relativeToleranceAsFloatingPoint(reference.excludedEnergy, 1e-7));
    double diff2 = 0, ref2 = 0;
    for (size_t i = 0; i < x.size(); i++)
    {
        for (int d = 0; d < DIM; d++)
        {
            diff2 += gmx::square(f[i][d] - reference.forces[i][d]);
            ref2 += gmx::square(reference.forces[i][d]);
        }
    }
    EXPECT_LT(std::sqrt(diff2 / ref2), 1e-5) << "relative RMS force error";
    // the Coulomb energy is homogeneous of degree -1 in the coordinates: trace(virial) = -U/2
    const matrix& virial = forceWithVirial.getVirial();
    EXPECT_REAL_EQ_TOL(-0.5 * reference.energy,
                       virial[XX][XX] + virial[YY][YY] + virial[ZZ][ZZ],
                       relativeToleranceAsFloatingPoint(reference.energy, 1e-5));

    TestReferenceData    data;
    TestReferenceChecker checker(data.rootChecker());
    checker.setDefaultTolerance(relativeToleranceAsFloatingPoint(reference.energy, 1e-5));
    checker.checkReal(energy, "Coulomb energy");
    checker.setDefaultTolerance(relativeToleranceAsFloatingPoint(std::sqrt(ref2 / x.size()), 1e-4));
    checker.checkSequence(f.begin(), f.end(), "Forces");
}

TEST(FmmLibForceProviderTest, RefusesACellTheLibraryDoesNotTake)
{
    gmx_mtop_t mtop;
    addWaters(&mtop, 1);
    FmmMdpOptions fmmMdpOptions;
    fillOptionsFromMdpValues(fmmLibMdpValues(), &fmmMdpOptions);
    MDLogger         logger;
    FmmForceProvider provider(fmmMdpOptions.fmmLibOptions(), mtop, PbcType::Xyz, logger, 1.0);
    const std::vector<RVec> x = { { 0.1, 0.1, 0.1 }, { 0.2, 0.1, 0.1 }, { 0.1, 0.2, 0.1 } };
    const std::vector<real> q = { -0.8, 0.4, 0.4 };
    // b leans beyond half of a: not a cell GROMACS allows, fmm_makeplan_cell refuses it
    const matrix        box = { { 1, 0, 0 }, { 0.8, 1, 0 }, { 0, 0, 1 } };
    MpiComm             mpiComm(MpiComm::SingleRank{});
    ForceProviderInput  input(x, x.size(), q, {}, 0.0, 0, box, mpiComm, nullptr);
    std::vector<RVec>   f(x.size(), RVec(0, 0, 0));
    ForceWithVirial     forceWithVirial(f, false);
    gmx_enerdata_t      enerd(1, nullptr);
    ForceProviderOutput output(&forceWithVirial, &enerd);
    EXPECT_THROW(provider.calculateForces(input, &output), InconsistentInputError);
}

namespace
{

//! The Coulomb energy of \p provider for one force evaluation in \p box
double coulombEnergy(FmmForceProvider*        provider,
                     const std::vector<RVec>& x,
                     const std::vector<real>& q,
                     const matrix             box)
{
    MpiComm             mpiComm(MpiComm::SingleRank{});
    ForceProviderInput  input(x, x.size(), q, {}, 0.0, 0, box, mpiComm, nullptr);
    std::vector<RVec>   f(x.size(), RVec(0, 0, 0));
    ForceWithVirial     forceWithVirial(f, false);
    gmx_enerdata_t      enerd(1, nullptr);
    ForceProviderOutput output(&forceWithVirial, &enerd);
    provider->calculateForces(input, &output);
    return enerd.term[InteractionFunction::CoulombReciprocalSpace];
}

} // namespace

TEST(FmmLibForceProviderTest, FollowsATriclinicBoxAndReportsTheFirstChangeOnce)
{
    gmx_mtop_t mtop;
    addWaters(&mtop, 2);
    const std::vector<RVec> x = { { 0.20, 0.30, 0.40 }, { 0.29, 0.33, 0.40 }, { 0.17, 0.39, 0.42 },
                                  { 0.80, 0.90, 0.70 }, { 0.88, 0.86, 0.74 }, { 0.76, 0.96, 0.64 } };
    const std::vector<real> q = { -0.8476, 0.4238, 0.4238, -0.8476, 0.4238, 0.4238 };
    // a triclinic cell, then only an off-diagonal element of b changed, then only those of c
    const matrix  boxes[] = { { { 1.3, 0, 0 }, { 0.3, 1.2, 0 }, { 0, 0, 1.1 } },
                              { { 1.3, 0, 0 }, { 0.4, 1.2, 0 }, { 0, 0, 1.1 } },
                              { { 1.3, 0, 0 }, { 0.4, 1.2, 0 }, { 0.2, -0.3, 1.1 } } };
    FmmMdpOptions fmmMdpOptions;
    fillOptionsFromMdpValues(fmmLibMdpValues({ { c_fmmFmmLibToleranceOptionName, "1e-8" } }), &fmmMdpOptions);

    // with pressure coupling the box changes every nstpcouple steps: md.log gets the plan and the
    // first change once each, not a line per change
    LoggerTestHelper logHelper;
    logHelper.expectEntryMatchingRegex(MDLogger::LogLevel::Info, "fmmlib: 6 excluded pairs");
    logHelper.expectEntryMatchingRegex(MDLogger::LogLevel::Info, "the box changed");
    FmmForceProvider provider(fmmMdpOptions.fmmLibOptions(), mtop, PbcType::Xyz, logHelper.logger(), 1.0);
    std::vector<double> energies;
    for (const auto& box : boxes)
    {
        energies.push_back(coulombEnergy(&provider, x, q, box));
    }
    // each energy is that of a plan made for its box alone
    for (size_t k = 0; k < energies.size(); k++)
    {
        MDLogger         logger;
        FmmForceProvider fresh(fmmMdpOptions.fmmLibOptions(), mtop, PbcType::Xyz, logger, 1.0);
        EXPECT_REAL_EQ_TOL(coulombEnergy(&fresh, x, q, boxes[k]),
                           energies[k],
                           relativeToleranceAsFloatingPoint(energies[k], 1e-12))
                << "box " << k;
    }
    // and the off-diagonal changes matter
    EXPECT_GT(std::abs(energies[1] - energies[0]), 1e-6 * std::abs(energies[0]));
    EXPECT_GT(std::abs(energies[2] - energies[1]), 1e-6 * std::abs(energies[1]));
}

#endif // GMX_USE_EXT_FMM

} // namespace test
} // namespace gmx
