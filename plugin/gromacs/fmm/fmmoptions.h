/*
 * fmmoptions.h - the FMM module's mdp options (fmm-active, fmm-tolerance, ...), its checks of the
 * run parameters, the box and the topology at grompp, and the round trip of the charges and the
 * resolved epsilon-r through the tpr's key-value tree to mdrun.
 *
 * Part of the fmm project (plugin/), not of GROMACS; copied with the module's other files into
 * src/gromacs/applied_forces/fmm/ by plugin/build-gromacs.sh --gromacs 2022.5.
 */
#ifndef GMX_APPLIED_FORCES_FMM_FMMOPTIONS_H
#define GMX_APPLIED_FORCES_FMM_FMMOPTIONS_H

#include "gromacs/mdtypes/imdpoptionprovider.h"

#include "fmmtypes.h"

struct gmx_mtop_t;
struct t_inputrec;
struct warninp;

namespace gmx
{

class KeyValueTreeObject;
class KeyValueTreeObjectBuilder;
struct CoordinatesAndBoxPreprocessed;

/*! \brief mdp options, preprocessing (grompp) and the tpr key-value-tree round trip */
class FmmOptions final : public IMdpOptionProvider
{
public:
    void initMdpTransform(IKeyValueTreeTransformRules* rules) override;

    void initMdpOptions(IOptionsContainerWithSections* options) override;

    void buildMdpOutput(KeyValueTreeObjectBuilder* builder) const override;

    bool active() const { return p_.active_; }
    const FmmParameters& parameters() const { return p_; }

    void setWarninp(warninp* wi) { wi_ = wi; }

    //! grompp: the run parameters after check_ir
    void checkInputrec(const t_inputrec& ir);

    //! grompp: save the charges, move Coulomb-14 into LJC14_Q pairs, zero all charges
    void processTopology(gmx_mtop_t* mtop);

    //! grompp: the box must be cubic (a limit of the library's periodic FMM)
    void checkBox(const CoordinatesAndBoxPreprocessed& coords);

    void writeInternalParametersToKvt(KeyValueTreeObjectBuilder treeBuilder);

    void readInternalParametersFromKvt(const KeyValueTreeObject& tree);

private:
    FmmParameters p_;
    warninp*      wi_                = nullptr;
    bool          haveFreeEnergy_    = false;
};

} // namespace gmx

#endif
