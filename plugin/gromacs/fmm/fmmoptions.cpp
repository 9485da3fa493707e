/*
 * fmmoptions.cpp - the FMM module's mdp options, grompp checks and tpr round trip (fmmoptions.h).
 *
 * Part of the fmm project (plugin/), not of GROMACS; copied with the module's other files into
 * src/gromacs/applied_forces/fmm/ by plugin/build-gromacs.sh --gromacs 2022.5.
 */
#include "gmxpre.h"

#include "fmmoptions.h"

#include <cmath>
#include <string>

#include "gromacs/fileio/warninp.h"
#include "gromacs/mdtypes/inputrec.h"
#include "gromacs/mdtypes/md_enums.h"
#include "gromacs/options/basicoptions.h"
#include "gromacs/options/optionsection.h"
#include "gromacs/pbcutil/pbc.h"
#include "gromacs/utility/exceptions.h"
#include "gromacs/utility/keyvaluetree.h"
#include "gromacs/utility/keyvaluetreebuilder.h"
#include "gromacs/utility/keyvaluetreetransform.h"
#include "gromacs/utility/mdmodulesnotifiers.h"
#include "gromacs/utility/strconvert.h"
#include "gromacs/utility/stringutil.h"

#include "fmm.h" // the fmm project's C API (include path set by the patched CMakeLists.txt)
#include "fmmmodule.h"
#include "fmmtopologypreprocessor.h"

namespace gmx
{

namespace
{

// mdp option tags: "fmm-" + tag in the mdp file, "fmm/" + tag in the key-value tree
const std::string c_activeTag    = "active";
const std::string c_toleranceTag = "tolerance";
const std::string c_orderTag     = "order";
const std::string c_depthTag     = "tree-depth";
const std::string c_deviceTag    = "device";
const std::string c_epsilonRTag  = "epsilon-r";
const std::string c_boundaryTag  = "boundary";
const std::string c_precisionTag = "precision";

// tpr-internal (key-value tree) keys written at grompp, read at mdrun
const std::string c_kvtCharges  = "fmm-charges";
const std::string c_kvtEpsilonR = "fmm-epsilon-r-resolved";

//! Whether the mdp applies an electric field: a nonzero E0 of the electric-field module, whose
//! options grompp keeps in applied-forces/electric-field/{x,y,z}
bool haveElectricField(const t_inputrec& ir)
{
    if (ir.params == nullptr || !ir.params->keyExists("applied-forces"))
    {
        return false;
    }
    const KeyValueTreeObject& modules = (*ir.params)["applied-forces"].asObject();
    if (!modules.keyExists("electric-field"))
    {
        return false;
    }
    const KeyValueTreeObject& field = modules["electric-field"].asObject();
    for (const char* dim : { "x", "y", "z" })
    {
        if (field.keyExists(dim) && field[dim].asObject().keyExists("E0")
            && field[dim].asObject()["E0"].cast<real>() != 0)
        {
            return true;
        }
    }
    return false;
}

template<class ToType, class Function>
void addTransform(IKeyValueTreeTransformRules* rules, Function function, const std::string& tag)
{
    rules->addRule()
            .from<std::string>("/" + FmmModuleInfo::name_ + "-" + tag)
            .to<ToType>("/" + FmmModuleInfo::name_ + "/" + tag)
            .transformWith(function);
}
template<class T>
void value(KeyValueTreeObjectBuilder* builder, const T& v, const std::string& tag)
{
    builder->addValue<T>(FmmModuleInfo::name_ + "-" + tag, v);
}
void comment(KeyValueTreeObjectBuilder* builder, const std::string& text, const std::string& tag)
{
    builder->addValue<std::string>("comment-" + FmmModuleInfo::name_ + "-" + tag, text);
}

} // namespace

void FmmOptions::initMdpTransform(IKeyValueTreeTransformRules* rules)
{
    const auto stringIdentity = [](std::string s) { return s; };
    addTransform<bool>(rules, &fromStdString<bool>, c_activeTag);
    addTransform<double>(rules, &fromStdString<double>, c_toleranceTag);
    addTransform<int>(rules, &fromStdString<int>, c_orderTag);
    addTransform<int>(rules, &fromStdString<int>, c_depthTag);
    addTransform<std::string>(rules, stringIdentity, c_deviceTag);
    addTransform<double>(rules, &fromStdString<double>, c_epsilonRTag);
    addTransform<std::string>(rules, stringIdentity, c_boundaryTag);
    addTransform<std::string>(rules, stringIdentity, c_precisionTag);
}

void FmmOptions::initMdpOptions(IOptionsContainerWithSections* options)
{
    auto section = options->addSection(OptionSection(FmmModuleInfo::name_.c_str()));
    section.addOption(BooleanOption(c_activeTag.c_str()).store(&p_.active_));
    section.addOption(DoubleOption(c_toleranceTag.c_str()).store(&p_.tolerance_));
    section.addOption(IntegerOption(c_orderTag.c_str()).store(&p_.order_));
    section.addOption(IntegerOption(c_depthTag.c_str()).store(&p_.treeDepth_));
    section.addOption(
            EnumOption<FmmDevice>(c_deviceTag.c_str()).enumValue(c_fmmDeviceNames).store(&p_.device_));
    section.addOption(DoubleOption(c_epsilonRTag.c_str()).store(&p_.epsilonR_));
    section.addOption(EnumOption<FmmBoundary>(c_boundaryTag.c_str())
                              .enumValue(c_fmmBoundaryNames)
                              .store(&p_.boundary_));
    section.addOption(EnumOption<FmmPrecision>(c_precisionTag.c_str())
                              .enumValue(c_fmmPrecisionNames)
                              .store(&p_.precision_));
}

void FmmOptions::buildMdpOutput(KeyValueTreeObjectBuilder* builder) const
{
    comment(builder, "", "empty-line");
    comment(builder, "; Coulomb by the fast multipole method (fmm project MDModule)", c_activeTag);
    value(builder, p_.active_, c_activeTag);
    if (!p_.active_)
    {
        return;
    }
    comment(builder, "; target relative L2 error of the potential (1e-12 .. 1e-3)", c_toleranceTag);
    value(builder, p_.tolerance_, c_toleranceTag);
    comment(builder, "; expansion order; 0: chosen from fmm-tolerance", c_orderTag);
    value(builder, p_.order_, c_orderTag);
    comment(builder, "; uniform tree depth; -1: adaptive tree", c_depthTag);
    value(builder, p_.treeDepth_, c_depthTag);
    comment(builder, "; cpu or cuda", c_deviceTag);
    value(builder, std::string(c_fmmDeviceNames[p_.device_]), c_deviceTag);
    comment(builder, "; relative dielectric constant of the FMM Coulomb; 0: epsilon-r", c_epsilonRTag);
    value(builder, p_.epsilonR_, c_epsilonRTag);
    comment(builder, "; boundary of the periodic lattice at infinity: tinfoil or vacuum", c_boundaryTag);
    value(builder, std::string(c_fmmBoundaryNames[p_.boundary_]), c_boundaryTag);
    comment(builder, "; double, or mixed (cuda only: near field in float, fmm-tolerance >= 1e-5)",
            c_precisionTag);
    value(builder, std::string(c_fmmPrecisionNames[p_.precision_]), c_precisionTag);
}

void FmmOptions::checkInputrec(const t_inputrec& ir)
{
    if (ir.coulombtype != CoulombInteractionType::Cut)
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-active = yes needs coulombtype = Cut-off (the FMM computes all Coulomb "
                "interactions; GROMACS's own Coulomb must be off), not %s",
                enumValueToString(ir.coulombtype))));
    }
    // walls before pbc: GROMACS takes walls only with pbc = xy, which would be named instead
    if (ir.nwall > 0)
    {
        GMX_THROW(InconsistentInputError("fmm-active = yes does not support walls"));
    }
    if (ir.pbcType != PbcType::Xyz)
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-active = yes needs pbc = xyz (periodic cubic box), not pbc = %s",
                c_pbcTypeNames[ir.pbcType].c_str())));
    }
    if (EI_TPI(ir.eI))
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-active = yes does not support integrator = %s (test-particle insertion "
                "computes its Coulomb from the charges, which the module zeroes)",
                enumValueToString(ir.eI))));
    }
    if (haveElectricField(ir))
    {
        GMX_THROW(InconsistentInputError(
                "fmm-active = yes does not support electric-field-x/y/z (the applied field acts "
                "on the charges, which the module zeroes)"));
    }
    if (ir.epc != PressureCoupling::No && ir.epct != PressureCouplingType::Isotropic)
    {
        GMX_THROW(InconsistentInputError(
                "fmm-active = yes needs a cubic box at every step: only isotropic pressure "
                "coupling is supported"));
    }
    if (!(ir.epsilon_r > 0) || std::isinf(ir.epsilon_r))
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-active = yes: epsilon-r = %g; the FMM needs a finite epsilon-r > 0 (0 "
                "means infinity, which switches Coulomb off: set fmm-active = no instead)",
                ir.epsilon_r)));
    }
    if (!(p_.tolerance_ >= FMM_TOL_MIN && p_.tolerance_ <= FMM_TOL_MAX))
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-tolerance = %g is outside [%g, %g]", p_.tolerance_, FMM_TOL_MIN, FMM_TOL_MAX)));
    }
    if (p_.precision_ == FmmPrecision::Mixed && p_.device_ != FmmDevice::Cuda)
    {
        GMX_THROW(InconsistentInputError("fmm-precision = mixed needs fmm-device = cuda"));
    }
    if (p_.precision_ == FmmPrecision::Mixed && p_.order_ == 0 && p_.tolerance_ < FMM_MIXED_TOL_MIN)
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-precision = mixed: fmm-tolerance = %g is below %g (the float near field's "
                "own error); use double or a larger tolerance",
                p_.tolerance_, FMM_MIXED_TOL_MIN)));
    }
    if (p_.order_ != 0 && (p_.order_ < FMM_ORDER_MIN || p_.order_ > FMM_ORDER_MAX))
    {
        GMX_THROW(InconsistentInputError(formatString("fmm-order = %d: use 0 (automatic) or %d .. %d",
                                                      p_.order_, FMM_ORDER_MIN, FMM_ORDER_MAX)));
    }
    if (p_.treeDepth_ < -1 || p_.treeDepth_ > FMM_DEPTH_MAX)
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-tree-depth = %d: use -1 (adaptive) or 0 .. %d", p_.treeDepth_, FMM_DEPTH_MAX)));
    }
    if (!(p_.epsilonR_ >= 0) || std::isinf(p_.epsilonR_))
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-epsilon-r = %g: use a finite value > 0, or 0 for epsilon-r", p_.epsilonR_)));
    }
    p_.epsilonRResolved_ = (p_.epsilonR_ > 0) ? p_.epsilonR_ : ir.epsilon_r;
    if (p_.epsilonR_ > 0 && p_.epsilonR_ != ir.epsilon_r && wi_ != nullptr)
    {
        warning(wi_,
                formatString("fmm-epsilon-r = %g differs from epsilon-r = %g: the FMM uses %g, "
                             "the Coulomb-14 pairs that GROMACS computes use %g",
                             p_.epsilonR_, ir.epsilon_r, p_.epsilonR_, ir.epsilon_r));
    }
    haveFreeEnergy_ = (ir.efep != FreeEnergyPerturbationType::No);
}

void FmmOptions::processTopology(gmx_mtop_t* mtop)
{
    fmmPreprocessTopology(mtop, haveFreeEnergy_, wi_, &p_.charges_);
}

void FmmOptions::checkBox(const CoordinatesAndBoxPreprocessed& coords)
{
    const auto& box = coords.box_;
    const real  l   = box[XX][XX];
    const bool  offDiagonal = box[YY][XX] != 0 || box[ZZ][XX] != 0 || box[ZZ][YY] != 0
                             || box[XX][YY] != 0 || box[XX][ZZ] != 0 || box[YY][ZZ] != 0;
    if (offDiagonal)
    {
        GMX_THROW(InconsistentInputError(
                "fmm-active = yes does not support triclinic boxes (the FMM needs a cubic box)"));
    }
    if (box[YY][YY] != l || box[ZZ][ZZ] != l)
    {
        GMX_THROW(InconsistentInputError(formatString(
                "fmm-active = yes needs a cubic box; this one is %g x %g x %g nm",
                box[XX][XX], box[YY][YY], box[ZZ][ZZ])));
    }
}

void FmmOptions::writeInternalParametersToKvt(KeyValueTreeObjectBuilder treeBuilder)
{
    auto adder = treeBuilder.addUniformArray<double>(c_kvtCharges);
    for (double q : p_.charges_)
    {
        adder.addValue(q);
    }
    treeBuilder.addValue<double>(c_kvtEpsilonR, p_.epsilonRResolved_);
}

void FmmOptions::readInternalParametersFromKvt(const KeyValueTreeObject& tree)
{
    if (!tree.keyExists(c_kvtCharges) || !tree.keyExists(c_kvtEpsilonR))
    {
        GMX_THROW(InconsistentInputError(
                "fmm-active = yes but the tpr holds no FMM charges: was it made by a grompp "
                "with the FMM module?"));
    }
    const auto values = tree[c_kvtCharges].asArray().values();
    p_.charges_.resize(values.size());
    for (size_t i = 0; i < values.size(); i++)
    {
        p_.charges_[i] = values[i].cast<double>();
    }
    p_.epsilonRResolved_ = tree[c_kvtEpsilonR].cast<double>();
}

} // namespace gmx
