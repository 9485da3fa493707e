/*
 * fmmmodule.cpp - the project's fast multipole method as a GROMACS 2022 MDModule.
 *
 * Part of the fmm project (plugin/), not of GROMACS; see fmmmodule.h for what it does and
 * docs/gromacs.md for its use. Units: GROMACS's (nm, e, kJ/mol); the FMM library works in
 * Gaussian units, so its potential, field, energy and virial are multiplied by
 * ONE_4PI_EPS0 / epsilon_r here.
 */
#include "gmxpre.h"

#include "fmmmodule.h"

#include "config.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "gromacs/fileio/warninp.h"
#include "gromacs/math/units.h"
#include "gromacs/math/vec.h"
#include "gromacs/mdlib/gmx_omp_nthreads.h"
#include "gromacs/mdtypes/commrec.h"
#include "gromacs/mdtypes/enerdata.h"
#include "gromacs/mdtypes/forceoutput.h"
#include "gromacs/mdtypes/iforceprovider.h"
#include "gromacs/mdtypes/imdmodule.h"
#include "gromacs/mdtypes/imdoutputprovider.h"
#include "gromacs/mdtypes/imdpoptionprovider.h"
#include "gromacs/mdtypes/inputrec.h"
#include "gromacs/mdtypes/md_enums.h"
#include "gromacs/options/basicoptions.h"
#include "gromacs/options/optionsection.h"
#include "gromacs/pbcutil/pbc.h"
#include "gromacs/topology/ifunc.h"
#include "gromacs/topology/topology.h"
#include "gromacs/utility/arrayref.h"
#include "gromacs/utility/classhelpers.h"
#include "gromacs/utility/enumerationhelpers.h"
#include "gromacs/utility/exceptions.h"
#include "gromacs/utility/keyvaluetree.h"
#include "gromacs/utility/keyvaluetreebuilder.h"
#include "gromacs/utility/keyvaluetreetransform.h"
#include "gromacs/utility/logger.h"
#include "gromacs/utility/mdmodulesnotifiers.h"
#include "gromacs/utility/strconvert.h"
#include "gromacs/utility/stringutil.h"

#include "fmm.h" // the fmm project's C API (include path set by the patched CMakeLists.txt)
#include "fmmdevice.h"

namespace gmx
{

namespace
{

//! Where the FMM runs (mdp fmm-device)
enum class FmmDevice : int
{
    Cpu,
    Cuda,
    Count
};
const EnumerationArray<FmmDevice, const char*> c_fmmDeviceNames = { { "cpu", "cuda" } };

//! Arithmetic of the GPU FMM (mdp fmm-precision): mixed = near field in float
enum class FmmPrecision : int
{
    Double,
    Mixed,
    Count
};
const EnumerationArray<FmmPrecision, const char*> c_fmmPrecisionNames = { { "double", "mixed" } };

//! Boundary at infinity of the periodic lattice (mdp fmm-boundary)
enum class FmmBoundary : int
{
    Tinfoil,
    Vacuum,
    Count
};
const EnumerationArray<FmmBoundary, const char*> c_fmmBoundaryNames = { { "tinfoil", "vacuum" } };

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

//! The module's parameters: mdp options plus what grompp resolved
struct FmmParameters
{
    bool        active_    = false;
    double      tolerance_ = 1e-5;
    int         order_     = 0;  // 0: chosen by the library from the tolerance
    int         treeDepth_ = -1; // -1: adaptive tree
    FmmDevice   device_    = FmmDevice::Cpu;
    double      epsilonR_  = 0; // 0: the mdp epsilon-r
    FmmBoundary boundary_  = FmmBoundary::Tinfoil;
    FmmPrecision precision_ = FmmPrecision::Double;
    // resolved at grompp / read at mdrun
    std::vector<double> charges_;
    double              epsilonRResolved_ = 1;
};

/*! \brief Host array for the FMM's inputs and outputs: page-locked where the library has a
 * CUDA device (fmm_host_alloc), so that the per-step copies run at full speed */
template<class T>
class FmmHostArray
{
public:
    FmmHostArray() = default;
    FmmHostArray(const FmmHostArray&) = delete;
    FmmHostArray& operator=(const FmmHostArray&) = delete;
    ~FmmHostArray() { fmm_host_free(p_); }
    void resize(size_t n)
    {
        if (n <= n_)
        {
            return;
        }
        fmm_host_free(p_);
        n_ = 0;
        p_ = static_cast<T*>(fmm_host_alloc(sizeof(T) * n));
        if (p_ == nullptr)
        {
            GMX_THROW(InternalError(formatString("FMM module: no memory for %zu values", n)));
        }
        n_ = n;
    }
    T*       data() { return p_; }
    T&       operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

private:
    T*     p_ = nullptr;
    size_t  n_ = 0;
};

/* The library's entry points in GROMACS's own precision (float in a mixed-precision build, where
 * the positions are float already): half the bytes to and from the device */
int fmmSetpts(fmm_plan* p, long n, const float* xyz)
{
    return fmm_setptsf(p, n, xyz);
}
int fmmSetpts(fmm_plan* p, long n, const double* xyz)
{
    return fmm_setpts(p, n, xyz);
}
int fmmExecute(fmm_plan* p, const float* q, float* field, double* energy, double* virial)
{
    return fmm_executef(p, q, nullptr, field, energy, virial);
}
int fmmExecute(fmm_plan* p, const double* q, double* field, double* energy, double* virial)
{
    return fmm_execute(p, q, nullptr, field, energy, virial);
}
// positions and forces on the device: float only (a double GROMACS has no GPU update)
int fmmSetptsOnDevice(fmm_plan* p, long n, const void* d_x, void* stream)
{
    return fmm_cuda_setptsf(p, n, static_cast<const float*>(d_x), stream);
}
int fmmExecuteOnDevice(fmm_plan* p, const float* q, void* d_f, double scale, double* energy, void* stream)
{
    return fmm_cuda_forcesf(p, q, static_cast<float*>(d_f), scale, energy, nullptr, stream);
}
int fmmExecuteOnDevice(fmm_plan*, const double*, void*, double, double*, void*)
{
    return FMM_ERR_UNSUPPORTED;
}

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

std::string fmmStatusText(int rc)
{
    return formatString("%s (fmm status %d)", fmm_strerror(rc), rc);
}

/*! \brief mdp options, preprocessing (grompp) and the tpr key-value-tree round trip */
class FmmOptions final : public IMdpOptionProvider
{
public:
    void initMdpTransform(IKeyValueTreeTransformRules* rules) override
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

    void initMdpOptions(IOptionsContainerWithSections* options) override
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

    void buildMdpOutput(KeyValueTreeObjectBuilder* builder) const override
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

    bool active() const { return p_.active_; }
    const FmmParameters& parameters() const { return p_; }

    void setWarninp(warninp* wi) { wi_ = wi; }

    //! grompp: the run parameters after check_ir
    void checkInputrec(const t_inputrec& ir)
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

    //! grompp: save the charges, move Coulomb-14 into LJC14_Q pairs, zero all charges
    void processTopology(gmx_mtop_t* mtop)
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
        p_.charges_.clear();
        for (const gmx_molblock_t& mb : mtop->molblock)
        {
            const t_atoms& atoms = mtop->moltype[mb.type].atoms;
            for (int m = 0; m < mb.nmol; m++)
            {
                for (int a = 0; a < atoms.nr; a++)
                {
                    p_.charges_.push_back(atoms.atom[a].q);
                }
            }
        }
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
                if (haveFreeEnergy_ && (lj.c6A != lj.c6B || lj.c12A != lj.c12B))
                {
                    GMX_THROW(InconsistentInputError(
                            "fmm-active = yes does not support perturbed 1-4 pair parameters"));
                }
                const std::array<int, 2> atomsPair = { ai, aj };
                ljc14->push_back(ljc14Type(chargeOf(ai), chargeOf(aj), lj.c6A, lj.c12A), atomsPair);
            }
            numPairsConverted_ += lj14->size() / 3;
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
                        [&](int a) { return static_cast<real>(p_.charges_[a]); });
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
        if (wi_ != nullptr)
        {
            double qsum = 0;
            for (double q : p_.charges_)
            {
                qsum += q;
            }
            warning_note(wi_,
                         formatString("fmm-active = yes: %zu charges (net %.6g e) moved into the FMM "
                                      "module's tpr data and zeroed in the topology; %d LJ-14 pairs "
                                      "became LJC14_Q pairs (Coulomb-14 unchanged). Tools that read "
                                      "this tpr see zero charges.",
                                      p_.charges_.size(), qsum, numPairsConverted_));
        }
    }

    //! grompp: the box must be cubic (a limit of the library's periodic FMM)
    void checkBox(const CoordinatesAndBoxPreprocessed& coords)
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

    void writeInternalParametersToKvt(KeyValueTreeObjectBuilder treeBuilder)
    {
        auto adder = treeBuilder.addUniformArray<double>(c_kvtCharges);
        for (double q : p_.charges_)
        {
            adder.addValue(q);
        }
        treeBuilder.addValue<double>(c_kvtEpsilonR, p_.epsilonRResolved_);
    }

    void readInternalParametersFromKvt(const KeyValueTreeObject& tree)
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

private:
    template<class ToType, class Function>
    static void addTransform(IKeyValueTreeTransformRules* rules, Function function, const std::string& tag)
    {
        rules->addRule()
                .from<std::string>("/" + FmmModuleInfo::name_ + "-" + tag)
                .to<ToType>("/" + FmmModuleInfo::name_ + "/" + tag)
                .transformWith(function);
    }
    template<class T>
    static void value(KeyValueTreeObjectBuilder* builder, const T& v, const std::string& tag)
    {
        builder->addValue<T>(FmmModuleInfo::name_ + "-" + tag, v);
    }
    static void comment(KeyValueTreeObjectBuilder* builder, const std::string& text, const std::string& tag)
    {
        builder->addValue<std::string>("comment-" + FmmModuleInfo::name_ + "-" + tag, text);
    }

    FmmParameters p_;
    warninp*      wi_                = nullptr;
    bool          haveFreeEnergy_    = false;
    int           numPairsConverted_ = 0;
};

/*! \brief Computes the FMM Coulomb energy, forces and virial on every force call */
class FmmForceProvider final : public IForceProvider
{
public:
    FmmForceProvider(const FmmParameters& p, const std::vector<int>& exclusionPairs, const MDLogger* logger) :
        p_(p), exclusionPairs_(exclusionPairs), logger_(logger)
    {
        const size_t n = p_.charges_.size();
        q_.resize(n);
        std::copy(p_.charges_.begin(), p_.charges_.end(), q_.data());
        timing_       = std::getenv("GMX_FMM_TIMING") != nullptr;
        forcesOnHost_ = std::getenv("GMX_FMM_FORCES_ON_HOST") != nullptr;
        launchLate_   = std::getenv("GMX_FMM_LAUNCH_LATE") != nullptr;
        fmm_default_opts(&opts_);
        opts_.tolerance = p_.tolerance_;
        opts_.order     = p_.order_;
        opts_.depth     = p_.treeDepth_;
        opts_.periodic  = 1;
        opts_.boundary  = (p_.boundary_ == FmmBoundary::Vacuum) ? FMM_BOUNDARY_VACUUM : FMM_BOUNDARY_TINFOIL;
        opts_.device    = (p_.device_ == FmmDevice::Cuda) ? FMM_DEVICE_CUDA : FMM_DEVICE_CPU;
        opts_.precision = (p_.precision_ == FmmPrecision::Mixed) ? FMM_PRECISION_MIXED : FMM_PRECISION_DOUBLE;
        opts_.threads   = gmx_omp_nthreads_get(ModuleMultiThread::Default);
        prefactor_      = c_one4PiEps0 / p_.epsilonRResolved_;
    }
    ~FmmForceProvider()
    {
        if (plan_ != nullptr)
        {
            fmm_destroy(plan_);
        }
    }

    // with GROMACS's GPU update, the forces go to its device buffer (environment
    // GMX_FMM_FORCES_ON_HOST: through the host instead, as on every step before; for comparison)
    bool addsForcesOnDevice() const override
    {
        return GMX_GPU_CUDA && !GMX_DOUBLE && p_.device_ == FmmDevice::Cuda && !forcesOnHost_;
    }
    DeviceForceTarget deviceForceTarget(const DeviceContext& deviceContext) override
    {
        if (device_ == nullptr)
        {
            device_ = std::make_unique<FmmDeviceForces>(deviceContext, static_cast<int>(p_.charges_.size()));
        }
        return { device_->forces(), device_->forcesReady() };
    }

    // the forces on the GPU from the start of the step, beside all else GROMACS does in it: on
    // search steps from the host coordinates (valid then) while the host searches pairs, on the
    // other steps from the device coordinates once the update has made them, ahead of the
    // nonbonded work (where PME on the GPU starts); the later calculateForces() of the step has
    // nothing left to do. Environment GMX_FMM_LAUNCH_LATE: the other steps' forces are started
    // where GROMACS asks for the special forces instead, after the nonbonded launch (for
    // comparison).
    void calculateDeviceForcesEarly(const ForceProviderInput& in) override
    {
        if (device_ == nullptr || (in.device_ != nullptr && launchLate_))
        {
            return; // no force target yet, or started late: calculateForces() computes them
        }
        using Clock   = std::chrono::steady_clock;
        const auto t0 = Clock::now();
        const int  n  = preparePlan(in);
        forcesOnDevice(in, n, nullptr);
        logPlan();
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        addTiming({ 0, 0, ms, 0 }, true);
        earlyStep_ = in.step_;
    }

    void calculateForces(const ForceProviderInput& in, ForceProviderOutput* out) override
    {
        if (in.device_ != nullptr && in.step_ == earlyStep_)
        {
            return; // started at the beginning of the step (calculateDeviceForcesEarly)
        }
        const int n = preparePlan(in);
        using Clock                 = std::chrono::steady_clock;
        const auto       t0         = Clock::now();
        auto             t1 = t0, t2 = t0, t3 = t0;
        ForceWithVirial& fwv        = out->forceWithVirial_;
        const bool       wantVirial = fwv.computeVirial_;
        double           energy     = 0;
        double           w[9]       = { 0 };
        const double     c          = prefactor_;
        if (in.device_ != nullptr)
        {
            // coordinates and forces stay on the device: no copies and no wait unless the energy
            // is asked for
            GMX_RELEASE_ASSERT(device_ != nullptr && !wantVirial,
                               "FMM module: device forces on a step without their target or with the virial");
            forcesOnDevice(in, n, in.device_->computeEnergy ? &energy : nullptr);
            t3 = Clock::now();
        }
        else
        {
            xyz_.resize(3 * static_cast<size_t>(n));
            field_.resize(3 * static_cast<size_t>(n));
            const int nt = opts_.threads;
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= c_parallelMinAtoms)
            for (int i = 0; i < n; i++)
            {
                for (int d = 0; d < DIM; d++)
                {
                    xyz_[3 * i + d] = in.x_[i][d];
                }
            }
            t1 = Clock::now();
            check(fmmSetpts(plan_, n, xyz_.data()), "fmm_setpts");
            t2 = Clock::now();
            // the charges go to the plan once; later calls reuse them (q = NULL)
            check(fmmExecute(plan_,
                             chargesSent_ ? nullptr : q_.data(),
                             field_.data(),
                             &energy,
                             wantVirial ? w : nullptr),
                  "fmm_execute");
            chargesSent_ = true;
            t3           = Clock::now();

            // all pairs, periodic, without the excluded pairs (the plan leaves out their minimum
            // images): forces, energy and virial (GROMACS: Xi = -1/2 sum x (x) f = -W/2)
            const ArrayRef<RVec> f = fwv.force_;
#pragma omp parallel for num_threads(nt) schedule(static) if (n >= c_parallelMinAtoms)
            for (int i = 0; i < n; i++)
            {
                const double cq = c * p_.charges_[i];
                for (int d = 0; d < DIM; d++)
                {
                    f[i][d] += cq * field_[3 * i + d];
                }
            }
        }
        logPlan();
        const double e = c * energy;
        if (timing_)
        {
            const auto t4 = Clock::now();
            addTiming({ std::chrono::duration<double, std::milli>(t1 - t0).count(),
                        std::chrono::duration<double, std::milli>(t2 - t1).count(),
                        std::chrono::duration<double, std::milli>(t3 - t2).count(),
                        std::chrono::duration<double, std::milli>(t4 - t3).count() },
                      in.device_ != nullptr);
        }
        if (wantVirial)
        {
            matrix vir;
            for (int a = 0; a < DIM; a++)
            {
                for (int b = 0; b < DIM; b++)
                {
                    vir[a][b] = -0.5 * c * w[3 * b + a];
                }
            }
            fwv.addVirialContribution(vir);
        }
        out->enerd_.term[F_COUL_RECIP] += e;
    }

private:
    //! The step's forces into the device buffer that GROMACS's GPU force sum adds
    //! (deviceForceTarget): from GROMACS's device coordinates once they are ready (in.device_) or
    //! from the host's; with energy, the host waits for it
    void forcesOnDevice(const ForceProviderInput& in, int n, double* energy)
    {
        if (in.device_ != nullptr)
        {
            device_->waitFor(in.device_->xReadyOnDevice);
            check(fmmSetptsOnDevice(plan_, n, in.device_->d_x, device_->stream()),
                  "fmm_cuda_setptsf");
        }
        else
        {
            check(fmmSetpts(plan_, n, in.x_[0].as_vec()), "fmm_setpts");
        }
        // the charges go to the plan (the device) once; later calls reuse them (q = NULL)
        check(fmmExecuteOnDevice(plan_,
                                 chargesSent_ ? nullptr : q_.data(),
                                 device_->forces(),
                                 prefactor_,
                                 energy,
                                 device_->stream()),
              "fmm_cuda_forcesf");
        device_->markForcesReady();
        chargesSent_ = true;
    }
    //! GMX_FMM_TIMING: ms in positions, fmm_setpts, fmm_execute and forces, logged as the mean of
    //! each c_timedCalls calls (on the device route fmm_execute is the launch: the host does not
    //! wait)
    void addTiming(const std::array<double, 4>& ms, bool onDevice)
    {
        if (!timing_)
        {
            return;
        }
        for (int k = 0; k < 4; k++)
        {
            timeMs_[k] += ms[k];
        }
        deviceCalls_ += onDevice;
        if (++timedCalls_ == c_timedCalls)
        {
            log(formatString(
                    "FMM module timing, mean of %d calls (ms; %d with forces on the "
                    "device): positions %.3f, fmm_setpts %.3f, fmm_execute %.3f, forces %.3f",
                    c_timedCalls,
                    deviceCalls_,
                    timeMs_[0] / c_timedCalls,
                    timeMs_[1] / c_timedCalls,
                    timeMs_[2] / c_timedCalls,
                    timeMs_[3] / c_timedCalls));
            timedCalls_ = deviceCalls_ = 0;
            std::fill(std::begin(timeMs_), std::end(timeMs_), 0.0);
        }
    }
    //! Checks the step's atoms and box against the plan's (made anew when the box edge changed); returns n
    int preparePlan(const ForceProviderInput& in)
    {
        const int n = in.homenr_;
        if (static_cast<size_t>(n) != p_.charges_.size())
        {
            GMX_THROW(InternalError(formatString("FMM module: %d home atoms but %zu charges in the tpr",
                                                 n, p_.charges_.size())));
        }
        const double l = in.box_[XX][XX];
        if (in.box_[YY][YY] != in.box_[XX][XX] || in.box_[ZZ][ZZ] != in.box_[XX][XX])
        {
            GMX_THROW(InconsistentInputError(formatString(
                    "FMM module: the box is no longer cubic (%g %g %g nm)", in.box_[XX][XX],
                    in.box_[YY][YY], in.box_[ZZ][ZZ])));
        }
        if (plan_ == nullptr || l != planEdge_)
        {
            makePlan(l);
        }
        return n;
    }
    void makePlan(double l)
    {
        if (plan_ != nullptr)
        {
            fmm_destroy(plan_);
            plan_ = nullptr;
        }
        const double box[3] = { l, l, l };
        check(fmm_makeplan(&opts_, box, &plan_), "fmm_makeplan");
        check(fmm_set_exclusions(plan_, static_cast<long>(exclusionPairs_.size() / 2), exclusionPairs_.data()),
              "fmm_set_exclusions");
        chargesSent_ = false;
        planEdge_ = l;
        numPlans_++;
        if (numPlans_ == 2)
        {
            log("FMM module: the box edge changed, the FMM plan is rebuilt at every change "
                "(pressure coupling makes each such step slower)");
        }
    }
    void check(int rc, const char* what) const
    {
        if (rc != FMM_OK)
        {
            GMX_THROW(InconsistentInputError(
                    formatString("FMM module: %s failed: %s", what, fmmStatusText(rc).c_str())));
        }
    }
    void log(const std::string& text) const
    {
        if (logger_ != nullptr)
        {
            GMX_LOG(logger_->info).asParagraph().appendText(text);
        }
    }
    //! The plan's parameters, once (after the first fmm_setpts: the depth is set there)
    void logPlan()
    {
        if (infoLogged_)
        {
            return;
        }
        fmm_info info;
        if (fmm_get_info(plan_, &info) == FMM_OK)
        {
            log(formatString("FMM module: %zu charges, %zu excluded pairs, box %.4f nm, %s, "
                             "tolerance %g, order %d, tree depth %d (%s), %ld leaves, %d threads, "
                             "epsilon-r %g, boundary %s, precision %s",
                             p_.charges_.size(), exclusionPairs_.size() / 2, planEdge_,
                             c_fmmDeviceNames[p_.device_], p_.tolerance_, info.order, info.depth,
                             p_.treeDepth_ < 0 ? "adaptive" : "uniform", info.nleaves, opts_.threads,
                             p_.epsilonRResolved_, c_fmmBoundaryNames[p_.boundary_],
                             c_fmmPrecisionNames[p_.precision_]));
        }
        infoLogged_ = true;
    }

    const FmmParameters& p_;
    std::vector<int>     exclusionPairs_; // i0 j0 i1 j1 ...: the plan leaves these pairs out
    const MDLogger*      logger_;
    fmm_opts             opts_;
    fmm_plan*            plan_            = nullptr;
    double               planEdge_        = 0;
    int                  numPlans_        = 0;
    double               prefactor_       = 1;
    bool                 infoLogged_      = false;
    bool                 chargesSent_     = false; // the plan keeps the charges of its first execute
    FmmHostArray<real>   xyz_;
    FmmHostArray<real>   field_;
    FmmHostArray<real>   q_;
    std::unique_ptr<FmmDeviceForces> device_; // forces on the device (deviceForceTarget)
    static constexpr int c_timedCalls = 100;
    //! Below this many atoms the module's host loops over them (positions in, forces out) run on
    //! one thread (the library's threshold for its own loops): a few microseconds, where a
    //! GPU-resident run's idle OpenMP threads have to be woken first
    //! (suspected in the droplet's virial steps: a 76-97 us host gap before the FMM's first CUDA
    //! call, bench/results/gromacs_gpu/README.md)
    static constexpr int c_parallelMinAtoms = 50000;
    bool                 forcesOnHost_ = false;
    bool                 launchLate_   = false; // environment GMX_FMM_LAUNCH_LATE
    int64_t              earlyStep_    = -1;    // the step calculateDeviceForcesEarly() started
    bool                 timing_      = false; // environment GMX_FMM_TIMING: log where the time goes
    int                  timedCalls_  = 0;
    int                  deviceCalls_ = 0;
    double               timeMs_[4]  = { 0 };
};

class FmmOutputProvider final : public IMDOutputProvider
{
public:
    void initOutput(FILE*, int, const t_filenm[], bool, const gmx_output_env_t*) override {}
    void finishOutput() override {}
};

//! All excluded pairs (i < j, global indices) of the topology
std::vector<int> excludedPairs(const gmx_mtop_t& mtop)
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
            exclusionPairs_ = excludedPairs(mtop);
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
