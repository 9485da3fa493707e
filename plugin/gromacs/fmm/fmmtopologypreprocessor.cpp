/*
 * fmmtopologypreprocessor.cpp - the FMM module's work on the topology (fmmtopologypreprocessor.h).
 *
 * Part of the fmm project (plugin/), not of GROMACS; copied with the module's other files into
 * src/gromacs/applied_forces/fmm/ by plugin/build-gromacs.sh --gromacs 2022.5.
 */
#include "gmxpre.h"

#include "fmmtopologypreprocessor.h"

#include <algorithm>
#include <array>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

#include "gromacs/fileio/warninp.h"
#include "gromacs/topology/ifunc.h"
#include "gromacs/topology/topology.h"
#include "gromacs/utility/exceptions.h"
#include "gromacs/utility/stringutil.h"

namespace gmx
{

void fmmPreprocessTopology(gmx_mtop_t* mtop, bool haveFreeEnergy, warninp* wi, std::vector<double>* charges)
{
    // perturbed charges cannot be honoured: the module has one set
    for (const gmx_moltype_t& mt : mtop->moltype)
    {
        for (int a = 0; a < mt.atoms.nr; a++)
        {
            if (mt.atoms.atom[a].q != mt.atoms.atom[a].qB)
            {
                GMX_THROW(InconsistentInputError(formatString(
                        "fmm-active = yes does not support free-energy perturbed charges "
                        "(molecule type %s, atom %d: qA %g, qB %g)",
                        *mt.name, a + 1, mt.atoms.atom[a].q, mt.atoms.atom[a].qB)));
            }
        }
    }
    // polarization takes the shells' spring constants and the Thole screening from the
    // atom charges, which are about to be zeroed
    const auto checkPolarization = [](const InteractionLists& ilists, const char* where) {
        for (int ftype : { F_POLARIZATION, F_WATER_POL, F_THOLE_POL, F_ANHARM_POL })
        {
            if (!ilists[ftype].empty())
            {
                GMX_THROW(InconsistentInputError(formatString(
                        "fmm-active = yes does not support polarization (%s in %s): GROMACS "
                        "computes it from the charges, which the module zeroes",
                        interaction_function[ftype].longname, where)));
            }
        }
    };
    for (const gmx_moltype_t& mt : mtop->moltype)
    {
        checkPolarization(mt.ilist, formatString("molecule type %s", *mt.name).c_str());
    }
    if (mtop->bIntermolecularInteractions && mtop->intermolecular_ilist)
    {
        checkPolarization(*mtop->intermolecular_ilist, "the intermolecular interactions");
    }
    // all charges in global atom order
    charges->clear();
    for (const gmx_molblock_t& mb : mtop->molblock)
    {
        const t_atoms& atoms = mtop->moltype[mb.type].atoms;
        for (int m = 0; m < mb.nmol; m++)
        {
            for (int a = 0; a < atoms.nr; a++)
            {
                charges->push_back(atoms.atom[a].q);
            }
        }
    }
    int numPairsConverted = 0;
    // LJ-14 takes its charges from the (soon zero) atom charges: give each pair its own
    gmx_ffparams_t& ffp = mtop->ffparams;
    std::map<std::tuple<real, real, real, real, real>, int> ljc14Types;
    const auto ljc14Type = [&](real qi, real qj, real c6, real c12) {
        const auto key = std::make_tuple(ffp.fudgeQQ, qi, qj, c6, c12);
        auto       it  = ljc14Types.find(key);
        if (it != ljc14Types.end())
        {
            return it->second;
        }
        t_iparams ip = {};
        ip.ljc14.fqq = ffp.fudgeQQ;
        ip.ljc14.qi  = qi;
        ip.ljc14.qj  = qj;
        ip.ljc14.c6  = c6;
        ip.ljc14.c12 = c12;
        ffp.functype.push_back(F_LJC14_Q);
        ffp.iparams.push_back(ip);
        const int type = ffp.numTypes() - 1;
        ljc14Types.emplace(key, type);
        return type;
    };
    const auto convertList = [&](InteractionList* lj14, InteractionList* ljc14, const auto& chargeOf) {
        for (int i = 0; i < lj14->size(); i += 3)
        {
            const int                 type = lj14->iatoms[i];
            const int                 ai   = lj14->iatoms[i + 1];
            const int                 aj   = lj14->iatoms[i + 2];
            const decltype(t_iparams::lj14)& lj = ffp.iparams[type].lj14;
            if (haveFreeEnergy && (lj.c6A != lj.c6B || lj.c12A != lj.c12B))
            {
                GMX_THROW(InconsistentInputError(
                        "fmm-active = yes does not support perturbed 1-4 pair parameters"));
            }
            const std::array<int, 2> atomsPair = { ai, aj };
            ljc14->push_back(ljc14Type(chargeOf(ai), chargeOf(aj), lj.c6A, lj.c12A), atomsPair);
        }
        numPairsConverted += lj14->size() / 3;
        lj14->clear();
    };
    for (gmx_moltype_t& mt : mtop->moltype)
    {
        const t_atoms& atoms = mt.atoms;
        convertList(&mt.ilist[F_LJ14], &mt.ilist[F_LJC14_Q], [&](int a) { return atoms.atom[a].q; });
    }
    if (mtop->bIntermolecularInteractions && mtop->intermolecular_ilist)
    {
        convertList(&(*mtop->intermolecular_ilist)[F_LJ14],
                    &(*mtop->intermolecular_ilist)[F_LJC14_Q],
                    [&](int a) { return static_cast<real>((*charges)[a]); });
    }
    // GROMACS's kernels see no charge from now on
    for (gmx_moltype_t& mt : mtop->moltype)
    {
        for (int a = 0; a < mt.atoms.nr; a++)
        {
            mt.atoms.atom[a].q  = 0;
            mt.atoms.atom[a].qB = 0;
        }
    }
    if (wi != nullptr)
    {
        double qsum = 0;
        for (double q : *charges)
        {
            qsum += q;
        }
        warning_note(wi,
                     formatString("fmm-active = yes: %zu charges (net %.6g e) moved into the FMM "
                                  "module's tpr data and zeroed in the topology; %d LJ-14 pairs "
                                  "became LJC14_Q pairs (Coulomb-14 unchanged). Tools that read "
                                  "this tpr see zero charges.",
                                  charges->size(), qsum, numPairsConverted));
    }
}

std::vector<int> fmmExcludedPairs(const gmx_mtop_t& mtop)
{
    std::vector<int> pairs;
    int              offset = 0;
    for (const gmx_molblock_t& mb : mtop.molblock)
    {
        const gmx_moltype_t& mt = mtop.moltype[mb.type];
        for (int m = 0; m < mb.nmol; m++)
        {
            for (int a = 0; a < mt.atoms.nr; a++)
            {
                for (const int b : mt.excls[a])
                {
                    if (b > a)
                    {
                        pairs.push_back(offset + a);
                        pairs.push_back(offset + b);
                    }
                }
            }
            offset += mt.atoms.nr;
        }
    }
    // the intermolecular exclusion group (e.g. QM atoms): all its pairs not excluded already
    const std::vector<int>& group = mtop.intermolecularExclusionGroup;
    if (!group.empty())
    {
        std::vector<std::pair<int, int>> have;
        for (size_t k = 0; k < pairs.size(); k += 2)
        {
            have.emplace_back(pairs[k], pairs[k + 1]);
        }
        std::sort(have.begin(), have.end());
        for (size_t x = 0; x < group.size(); x++)
        {
            for (size_t y = x + 1; y < group.size(); y++)
            {
                const int i = std::min(group[x], group[y]);
                const int j = std::max(group[x], group[y]);
                if (i != j && !std::binary_search(have.begin(), have.end(), std::make_pair(i, j)))
                {
                    pairs.push_back(i);
                    pairs.push_back(j);
                }
            }
        }
    }
    return pairs;
}

} // namespace gmx
