/* ----------------------------------------------------------------------
   USER-NVALCHEMI as a LAMMPS plugin: `plugin load nvalchemiplugin.so`
   registers pair_style nvalchemi, fix nvalchemi/dd and computes nvalchemi/atom,
   nvalchemi/global and nvalchemi/deviation. Built by cmake/plugin/CMakeLists.txt.
------------------------------------------------------------------------- */

#include "lammpsplugin.h"
#include "version.h"

#include "compute_nvalchemi_atom.h"
#include "compute_nvalchemi_deviation.h"
#include "compute_nvalchemi_global.h"
#include "fix_nvalchemi_dd.h"
#include "pair_nvalchemi.h"

using namespace LAMMPS_NS;

static Pair *nvalchemi_creator(LAMMPS *lmp)
{ return new PairNVAlchemi(lmp); }

static Compute *nvalchemi_atom_creator(LAMMPS *lmp, int narg, char **arg)
{ return new ComputeNVAlchemiAtom(lmp, narg, arg); }

static Compute *nvalchemi_global_creator(LAMMPS *lmp, int narg, char **arg)
{ return new ComputeNVAlchemiGlobal(lmp, narg, arg); }

static Compute *nvalchemi_deviation_creator(LAMMPS *lmp, int narg, char **arg)
{ return new ComputeNVAlchemiDeviation(lmp, narg, arg); }

static Fix *nvalchemi_dd_creator(LAMMPS *lmp, int narg, char **arg)
{ return new FixNVAlchemiDD(lmp, narg, arg); }

// the plugin is compiled with hidden visibility (its classes never bind to a built-in copy of
// the package); only the entry point LAMMPS looks up is exported
extern "C" __attribute__((visibility("default"))) void lammpsplugin_init(void *lmp, void *handle,
                                                                         void *regfunc)
{
  lammpsplugin_t plugin;
  auto register_plugin = (lammpsplugin_regfunc) regfunc;

  plugin.version = LAMMPS_VERSION;
  plugin.style = "pair";
  plugin.name = "nvalchemi";
  plugin.info = "USER-NVALCHEMI pair style nvalchemi (TorchScript and AOTInductor potentials)";
  plugin.author = "USER-NVALCHEMI developers";
  plugin.creator.v1 = (lammpsplugin_factory1 *) &nvalchemi_creator;
  plugin.handle = handle;
  (*register_plugin)(&plugin, lmp);

  plugin.style = "compute";
  plugin.name = "nvalchemi/atom";
  plugin.info = "USER-NVALCHEMI compute nvalchemi/atom (per-atom model outputs)";
  plugin.creator.v2 = (lammpsplugin_factory2 *) &nvalchemi_atom_creator;
  (*register_plugin)(&plugin, lmp);

  plugin.name = "nvalchemi/global";
  plugin.info = "USER-NVALCHEMI compute nvalchemi/global (per-system model outputs)";
  plugin.creator.v2 = (lammpsplugin_factory2 *) &nvalchemi_global_creator;
  (*register_plugin)(&plugin, lmp);

  plugin.name = "nvalchemi/deviation";
  plugin.info = "USER-NVALCHEMI compute nvalchemi/deviation (model deviation of a committee)";
  plugin.creator.v2 = (lammpsplugin_factory2 *) &nvalchemi_deviation_creator;
  (*register_plugin)(&plugin, lmp);

  plugin.style = "fix";
  plugin.name = "nvalchemi/dd";
  plugin.info = "USER-NVALCHEMI fix nvalchemi/dd (domain-decomposition hooks and statistics)";
  plugin.creator.v2 = (lammpsplugin_factory2 *) &nvalchemi_dd_creator;
  (*register_plugin)(&plugin, lmp);
}
