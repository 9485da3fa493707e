/*
 * fmmmodule.cpp - the project's fast multipole method as a GROMACS 2022 MDModule: the module
 * itself, which subscribes the options (fmmoptions.h) to grompp's and mdrun's notifications,
 * collects the excluded pairs (fmmtopologypreprocessor.h) and makes the force provider
 * (fmmforceprovider.h).
 *
 * Part of the fmm project (plugin/), not of GROMACS; see fmmmodule.h for what it does and
 * docs/gromacs.md for its use.
 */
#include "gmxpre.h"

#include "fmmmodule.h"

#include <memory>
#include <string>
#include <vector>

#include "gromacs/mdtypes/commrec.h"
#include "gromacs/mdtypes/iforceprovider.h"
#include "gromacs/mdtypes/imdmodule.h"
#include "gromacs/mdtypes/imdoutputprovider.h"
#include "gromacs/pbcutil/pbc.h"
#include "gromacs/topology/topology.h"
#include "gromacs/utility/exceptions.h"
#include "gromacs/utility/keyvaluetree.h"
#include "gromacs/utility/keyvaluetreebuilder.h"
#include "gromacs/utility/logger.h"
#include "gromacs/utility/mdmodulesnotifiers.h"
#include "gromacs/utility/stringutil.h"

#include "fmmforceprovider.h"
#include "fmmoptions.h"
#include "fmmtopologypreprocessor.h"

namespace gmx
{

namespace
{

class FmmOutputProvider final : public IMDOutputProvider
{
public:
    void initOutput(FILE*, int, const t_filenm[], bool, const gmx_output_env_t*) override {}
    void finishOutput() override {}
};

class FmmModule final : public IMDModule
{
public:
    void subscribeToPreProcessingNotifications(MDModulesNotifiers* notifiers) override
    {
        if (!options_.active())
        {
            return;
        }
        auto& n = notifiers->preProcessingNotifier_;
        n.subscribe([this](warninp* wi) { options_.setWarninp(wi); });
        n.subscribe([this](const MDModulesInputrecPreprocessed& ir) { options_.checkInputrec(ir.ir_); });
        n.subscribe([this](gmx_mtop_t* mtop) { options_.processTopology(mtop); });
        n.subscribe([this](const CoordinatesAndBoxPreprocessed& c) { options_.checkBox(c); });
        n.subscribe([this](KeyValueTreeObjectBuilder b) { options_.writeInternalParametersToKvt(b); });
    }

    void subscribeToSimulationSetupNotifications(MDModulesNotifiers* notifiers) override
    {
        if (!options_.active())
        {
            return;
        }
        auto& n = notifiers->simulationSetupNotifier_;
        n.subscribe([this](const KeyValueTreeObject& tree) { options_.readInternalParametersFromKvt(tree); });
        n.subscribe([this](const gmx_mtop_t& mtop) {
            exclusionPairs_ = fmmExcludedPairs(mtop);
            numAtoms_       = mtop.natoms;
        });
        n.subscribe([](const t_commrec& cr) {
            if (cr.nnodes > 1)
            {
                GMX_THROW(InconsistentInputError(formatString(
                        "The FMM module (fmm-active = yes) runs on one rank only, this run has %d: "
                        "start mdrun with -ntmpi 1 (OpenMP threads: -ntomp)",
                        cr.nnodes)));
            }
        });
        n.subscribe([](const PbcType& pbc) {
            if (pbc != PbcType::Xyz)
            {
                GMX_THROW(InconsistentInputError("The FMM module needs pbc = xyz"));
            }
        });
        n.subscribe([this](const MDLogger& logger) { logger_ = &logger; });
        n.subscribe([](MDModulesEnergyOutputToCoulombRecipRequestChecker* request) {
            request->energyOutputToCoulombRecip_ = true;
        });
    }

    IMdpOptionProvider* mdpOptionProvider() override { return &options_; }
    IMDOutputProvider*  outputProvider() override { return &output_; }

    void initForceProviders(ForceProviders* forceProviders) override
    {
        if (!options_.active())
        {
            return;
        }
        if (static_cast<size_t>(numAtoms_) != options_.parameters().charges_.size())
        {
            GMX_THROW(InconsistentInputError(formatString(
                    "The FMM module: the topology has %d atoms, the tpr's FMM data %zu charges",
                    numAtoms_, options_.parameters().charges_.size())));
        }
        forceProvider_ = std::make_unique<FmmForceProvider>(
                options_.parameters(), exclusionPairs_, logger_);
        forceProviders->addForceProvider(forceProvider_.get());
    }

private:
    FmmOptions                        options_;
    FmmOutputProvider                 output_;
    std::vector<int>                  exclusionPairs_;
    int                               numAtoms_ = 0;
    const MDLogger*                   logger_   = nullptr;
    std::unique_ptr<FmmForceProvider> forceProvider_;
};

} // namespace

std::unique_ptr<IMDModule> FmmModuleInfo::create()
{
    return std::make_unique<FmmModule>();
}

const std::string FmmModuleInfo::name_ = "fmm";

} // namespace gmx
