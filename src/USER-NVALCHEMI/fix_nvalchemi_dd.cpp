/* ----------------------------------------------------------------------
   LAMMPS - Large-scale Atomic/Molecular Massively Parallel Simulator
   https://www.lammps.org/, Sandia National Laboratories
   LAMMPS development team: developers@lammps.org

   This software is distributed under the GNU General Public License.
   See the README file in the top-level LAMMPS directory.
------------------------------------------------------------------------- */

/* ----------------------------------------------------------------------
   fix nvalchemi/dd: domain statistics, the force guard, the energy drift,
   in-run validation against the single-process reference, snapshots, and
   DomainParallel-style hooks (LOCAL, GLOBAL and RANK_ZERO scopes)
   (USER-NVALCHEMI package; the features are in nvalchemi_dd_features).
------------------------------------------------------------------------- */

#include "fix_nvalchemi_dd.h"

#include "atom.h"
#include "comm.h"
#include "compute.h"
#include "domain.h"
#include "error.h"
#include "force.h"
#include "memory.h"
#include "modify.h"
#include "pair_nvalchemi.h"
#include "update.h"

#include "nvalchemi_dd_features.h"
#include "nvalchemi_dd_hook.h"
#include "nvalchemi_step_device.h"
#include "nvalchemi_step_engine.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

using namespace LAMMPS_NS;
using namespace FixConst;
using NVAlchemi::HookScope;
using NVAlchemi::HookStage;

namespace {
// the global vector f_ID[1..]: names only for the doc and the bounds check
enum Stat {
  OWNED_MIN,
  OWNED_MAX,
  OWNED_MEAN,
  IMBALANCE,
  GHOSTS,
  EDGES,
  OWNER_CHANGES,
  MODEL_TIME,
  GLUE_TIME,
  EXCHANGE_TIME,
  DRIFT,
  VALIDATE_DIFFERENCE,
  CLAMPED,
  GRAPH_TIME,
  TENSORS_TIME,
  FORWARD_TIME,
  BACKWARD_TIME,
  TALLY_TIME,
  NUM_STATS
};
}    // namespace

struct FixNVAlchemiDD::State {
  explicit State(LAMMPS *lmp) : guard(lmp), drift(lmp), validation(lmp), snapshots(lmp) {}
  // the features (an interval of 0 turns one off)
  NVAlchemi::ForceGuard guard;
  NVAlchemi::EnergyDrift drift;
  NVAlchemi::Validator validation;
  NVAlchemi::Snapshots snapshots;
  int hook_every = 0;
  std::unique_ptr<NVAlchemi::HookRunner> hook;

  // what the features use
  std::vector<PairNVAlchemi *> models;    // every pair_style nvalchemi that drives the dynamics
  Compute *pe = nullptr;                  // thermo_pe, for drift and snapshots

  // state
  bigint owner_changes = 0;    // on this rank at the last count
  double stats[NUM_STATS] = {};
  bigint stats_step = -1;
  bigint hook_step = -1;    // step the hook energy belongs to
  double hook_energy = 0.0;

  bool hook_at(HookStage stage) const { return hook && hook->stage() == stage; }
};

/* ----------------------------------------------------------------------
   fix ID group nvalchemi/dd [guard N] [maxforce F clamp|abort]
     [drift N window tolerance warn|error] [validate N tolerance]
     [snapshot N file] [snapshot_if v_name] [hook file.pt local|global|rank_zero N]
     [stage before_step|before_compute|after_compute|after_step]
------------------------------------------------------------------------- */

FixNVAlchemiDD::FixNVAlchemiDD(LAMMPS *lmp, int narg, char **arg) :
    Fix(lmp, narg, arg), state(new State(lmp)), owner(nullptr)
{
  vector_flag = 1;
  size_vector = NUM_STATS;
  global_freq = 1;
  extvector = 0;
  restart_global = 1;
  restart_peratom = 1;

  State &h = *state;
  bool stage_given = false;
  std::string hook_file, snapshot_file;
  HookScope hook_scope = HookScope::LOCAL;
  HookStage hook_stage = HookStage::AFTER_COMPUTE;
  int iarg = 3;
  const auto need = [&](int n, const char *keyword) {
    if (iarg + n >= narg)
      utils::missing_cmd_args(FLERR, std::string("fix nvalchemi/dd ") + keyword, error);
  };
  const auto interval = [&](int offset) {
    const int n = utils::inumeric(FLERR, arg[iarg + offset], false, lmp);
    if (n <= 0)
      error->all(FLERR, iarg + offset, "fix nvalchemi/dd {}: the interval must be > 0, got {}",
                 arg[iarg], n);
    return n;
  };
  while (iarg < narg) {
    const std::string keyword = arg[iarg];
    if (keyword == "guard") {
      need(1, "guard");
      h.guard.every = interval(1);
      iarg += 2;
    } else if (keyword == "maxforce") {
      need(2, "maxforce");
      h.guard.max_force = utils::numeric(FLERR, arg[iarg + 1], false, lmp);
      if (h.guard.max_force <= 0.0)
        error->all(FLERR, iarg + 1, "fix nvalchemi/dd maxforce must be > 0, got {}", arg[iarg + 1]);
      const std::string action = arg[iarg + 2];
      if (action != "clamp" && action != "abort")
        error->all(FLERR, iarg + 2,
                   "fix nvalchemi/dd maxforce action must be clamp or abort, got {}", action);
      h.guard.clamp = action == "clamp";
      iarg += 3;
    } else if (keyword == "drift") {
      need(4, "drift");
      h.drift.every = interval(1);
      h.drift.window = utils::inumeric(FLERR, arg[iarg + 2], false, lmp);
      if (h.drift.window < 2)
        error->all(FLERR, iarg + 2, "fix nvalchemi/dd drift window must be >= 2 samples, got {}",
                   h.drift.window);
      h.drift.tolerance = utils::numeric(FLERR, arg[iarg + 3], false, lmp);
      if (h.drift.tolerance <= 0.0)
        error->all(FLERR, iarg + 3, "fix nvalchemi/dd drift tolerance must be > 0");
      const std::string action = arg[iarg + 4];
      if (action != "warn" && action != "error")
        error->all(FLERR, iarg + 4, "fix nvalchemi/dd drift action must be warn or error, got {}",
                   action);
      h.drift.stops = action == "error";
      iarg += 5;
    } else if (keyword == "validate") {
      need(2, "validate");
      h.validation.every = interval(1);
      h.validation.tolerance = utils::numeric(FLERR, arg[iarg + 2], false, lmp);
      if (h.validation.tolerance <= 0.0)
        error->all(FLERR, iarg + 2, "fix nvalchemi/dd validate tolerance must be > 0");
      iarg += 3;
    } else if (keyword == "snapshot") {
      need(2, "snapshot");
      h.snapshots.every = interval(1);
      snapshot_file = arg[iarg + 2];
      iarg += 3;
    } else if (keyword == "snapshot_if") {
      need(1, "snapshot_if");
      if (!utils::strmatch(arg[iarg + 1], "^v_"))
        error->all(FLERR, iarg + 1,
                   "fix nvalchemi/dd snapshot_if takes an equal-style variable as v_name, got {}",
                   arg[iarg + 1]);
      h.snapshots.condition = arg[iarg + 1] + 2;
      iarg += 2;
    } else if (keyword == "hook") {
      need(3, "hook");
      hook_file = arg[iarg + 1];
      const std::string scope = arg[iarg + 2];
      const auto *found = std::find(std::begin(NVAlchemi::HOOK_SCOPE_NAMES),
                                    std::end(NVAlchemi::HOOK_SCOPE_NAMES), scope);
      if (found == std::end(NVAlchemi::HOOK_SCOPE_NAMES))
        error->all(FLERR, iarg + 2,
                   "fix nvalchemi/dd hook scope must be local, global or rank_zero, got {}", scope);
      hook_scope = static_cast<HookScope>(found - std::begin(NVAlchemi::HOOK_SCOPE_NAMES));
      iarg += 3;
      h.hook_every = interval(0);
      iarg += 1;
    } else if (keyword == "stage") {
      need(1, "stage");
      const std::string stage = arg[iarg + 1];
      const auto *found = std::find(std::begin(NVAlchemi::HOOK_STAGE_NAMES),
                                    std::end(NVAlchemi::HOOK_STAGE_NAMES), stage);
      if (found == std::end(NVAlchemi::HOOK_STAGE_NAMES))
        error->all(FLERR, iarg + 1,
                   "fix nvalchemi/dd stage must be before_step, before_compute, after_compute or "
                   "after_step, got {}",
                   stage);
      hook_stage = static_cast<HookStage>(found - std::begin(NVAlchemi::HOOK_STAGE_NAMES));
      stage_given = true;
      iarg += 2;
    } else {
      error->all(FLERR, iarg, "Unknown fix nvalchemi/dd keyword: {}", keyword);
    }
  }
  if (stage_given && hook_file.empty())
    error->all(FLERR, "fix nvalchemi/dd stage sets where the hook runs: it needs the hook keyword");
  if (h.guard.max_force > 0.0 && h.guard.every == 0)
    error->all(FLERR, "fix nvalchemi/dd maxforce needs the guard keyword (guard N)");
  if (h.drift.every) h.drift.fit.set_window(h.drift.window);
  if (!h.snapshots.condition.empty() && !h.snapshots.every)
    error->all(FLERR,
               "fix nvalchemi/dd snapshot_if selects snapshots: it needs the snapshot keyword");

  if (!hook_file.empty()) {
    h.hook = std::make_unique<NVAlchemi::HookRunner>(lmp, hook_file, hook_scope, hook_stage);
    scalar_flag = 1;
    extscalar = 1;
    energy_global_flag = 1;
    virial_global_flag = 1;
  }

  if (h.snapshots.every) h.snapshots.open(snapshot_file);

  FixNVAlchemiDD::grow_arrays(atom->nmax);
  atom->add_callback(Atom::GROW);
  atom->add_callback(Atom::RESTART);
  for (int i = 0; i < atom->nlocal; ++i) owner[i] = comm->me;
}

/* ---------------------------------------------------------------------- */

FixNVAlchemiDD::~FixNVAlchemiDD()
{
  atom->delete_callback(id, Atom::GROW);
  atom->delete_callback(id, Atom::RESTART);
  memory->destroy(owner);
  delete state;
}

/* ---------------------------------------------------------------------- */

int FixNVAlchemiDD::setmask()
{
  int mask = POST_FORCE | MIN_POST_FORCE | END_OF_STEP | POST_RUN;
  if (state->hook_at(HookStage::BEFORE_STEP)) mask |= INITIAL_INTEGRATE;
  if (state->hook_at(HookStage::BEFORE_COMPUTE)) mask |= PRE_FORCE | MIN_PRE_FORCE;
  return mask;
}

/* ---------------------------------------------------------------------- */

void FixNVAlchemiDD::init()
{
  State &h = *state;
  if (utils::strmatch(update->integrate_style, "^respa"))
    error->all(FLERR, Error::NOLASTLINE, "Fix nvalchemi/dd does not support run_style respa");
  const HookStage stage = h.hook ? h.hook->stage() : HookStage::AFTER_COMPUTE;
  if ((thermo_energy || thermo_virial) && !NVAlchemi::stage_adds_forces(stage))
    error->all(FLERR, Error::NOLASTLINE,
               "fix_modify energy or virial with fix nvalchemi/dd needs the hook at stage "
               "before_compute or after_compute (it is at {})",
               NVAlchemi::HOOK_STAGE_NAMES[static_cast<int>(stage)]);

  // a committee member that does not drive (drive no) has no step of its own to watch
  h.models.clear();
  for (PairNVAlchemi *model : PairNVAlchemi::instances(force))
    if (model->engine().drives) h.models.push_back(model);
  // the phase times this fix reports hold the device's work
  for (PairNVAlchemi *model : h.models) model->engine().synchronize_phases(true);
  // the hook runs where the model does
  if (h.hook)
    h.hook->place_on(h.models.empty() ? NVAlchemi::Device() : h.models.front()->engine().device);
  if (h.validation.every && h.models.size() != 1)
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd validate needs exactly one pair_style nvalchemi (found {}): it "
               "compares that model with its single-process reference",
               h.models.size());
  if (h.snapshots.every && h.models.empty())
    error->all(FLERR, Error::NOLASTLINE,
               "Fix nvalchemi/dd snapshot needs a pair_style nvalchemi: its pair_coeff names the "
               "species written to {}",
               h.snapshots.file);

  if (h.snapshots.every) h.snapshots.find_condition();
  h.pe = nullptr;
  if (h.drift.every || h.snapshots.every) {
    h.pe = modify->get_compute_by_id("thermo_pe");
    if (!h.pe)
      error->all(FLERR, Error::NOLASTLINE,
                 "Fix nvalchemi/dd drift and snapshot need the compute thermo_pe, which was "
                 "deleted");
    // the run's first step writes a snapshot when it is due: its energy must be tallied
    if (due(h.snapshots.every)) h.pe->addstep(update->ntimestep);
  }
}

/* ---------------------------------------------------------------------- */

void FixNVAlchemiDD::setup(int vflag)
{
  count_owner_changes();
  state->stats_step = -1;
  post_force(vflag);
  if (due(state->snapshots.every)) {
    modify->clearstep_compute();
    write_snapshot();
  }
  request_sampled_energy();
}

void FixNVAlchemiDD::min_setup(int vflag)
{
  count_owner_changes();
  state->stats_step = -1;
  post_force(vflag);
}

/* ----------------------------------------------------------------------
   the hook's stages; the virial is reset where the hook adds forces
------------------------------------------------------------------------- */

void FixNVAlchemiDD::initial_integrate(int /*vflag*/)
{
  if (due(state->hook_every)) run_hook();
}

void FixNVAlchemiDD::setup_pre_force(int vflag)
{ pre_force(vflag); }

void FixNVAlchemiDD::min_pre_force(int vflag)
{ pre_force(vflag); }

void FixNVAlchemiDD::pre_force(int vflag)
{
  v_init(vflag);
  if (due(state->hook_every)) run_hook();
}

/* ----------------------------------------------------------------------
   after the forces: validate the model, run the hook, guard the forces
------------------------------------------------------------------------- */

void FixNVAlchemiDD::post_force(int vflag)
{
  State &h = *state;
  if (due(h.validation.every)) h.validation.check(h.models.front());
  if (h.hook_at(HookStage::AFTER_COMPUTE)) {
    v_init(vflag);
    if (due(h.hook_every)) run_hook();
  }
  if (due(h.guard.every)) h.guard.check(groupbit, fmt::format("f_{}[{}]", id, CLAMPED + 1));
}

void FixNVAlchemiDD::min_post_force(int vflag)
{ post_force(vflag); }

/* ----------------------------------------------------------------------
   after the step: owner changes (every step), drift, snapshots
------------------------------------------------------------------------- */

void FixNVAlchemiDD::end_of_step()
{
  count_owner_changes();
  State &h = *state;
  if (h.hook_at(HookStage::AFTER_STEP) && due(h.hook_every)) run_hook();
  const bool drift = due(h.drift.every), snapshot = due(h.snapshots.every);
  if (!drift && !snapshot) return;
  modify->clearstep_compute();
  if (drift) h.drift.sample(h.pe);
  if (snapshot) write_snapshot();
  request_sampled_energy();
}

// the potential energy of the next steps that drift and snapshots sample must be tallied
void FixNVAlchemiDD::request_sampled_energy()
{
  for (int every : {state->drift.every, state->snapshots.every})
    if (every) state->pe->addstep((update->ntimestep / every + 1) * every);
}

/* ---------------------------------------------------------------------- */

void FixNVAlchemiDD::post_run()
{
  const State &h = *state;
  if (comm->me != 0) return;
  if (h.validation.validations)
    utils::logmesg(lmp,
                   "fix nvalchemi/dd: {} validations, largest relative difference in the last: "
                   "{:.3g}\n",
                   h.validation.validations, h.validation.difference);
  if (h.guard.clamped)
    utils::logmesg(lmp, "fix nvalchemi/dd: {} forces clamped so far\n", h.guard.clamped);
}

bool FixNVAlchemiDD::due(int every) const
{ return every > 0 && update->ntimestep % every == 0; }

/* ----------------------------------------------------------------------
   atoms whose owner changed since the previous count (they carry the rank
   that owned them through migration and restarts)
------------------------------------------------------------------------- */

void FixNVAlchemiDD::count_owner_changes()
{
  bigint changes = 0;
  for (int i = 0; i < atom->nlocal; ++i)
    if (owner[i] != comm->me) {
      ++changes;
      owner[i] = comm->me;
    }
  state->owner_changes = changes;
}

/* ----------------------------------------------------------------------
   the domain statistics, reduced over ranks once per step on demand
------------------------------------------------------------------------- */

double FixNVAlchemiDD::compute_vector(int n)
{
  const State &h = *state;
  switch (n) {
    case DRIFT:
      return h.drift.fit.slope();
    case VALIDATE_DIFFERENCE:
      return h.validation.difference;
    case CLAMPED:
      return static_cast<double>(h.guard.clamped);
    default:
      if (h.stats_step != update->ntimestep) update_stats();
      return h.stats[n];
  }
}

void FixNVAlchemiDD::update_stats()
{
  State &h = *state;
  double edges = 0.0;
  // each time summed over the models, then its maximum over ranks
  constexpr int NUM_TIMES = 8;
  const int time_stat[NUM_TIMES] = {MODEL_TIME,   GLUE_TIME,    EXCHANGE_TIME, GRAPH_TIME,
                                    TENSORS_TIME, FORWARD_TIME, BACKWARD_TIME, TALLY_TIME};
  double maxima[2 + NUM_TIMES] = {static_cast<double>(atom->nlocal),
                                  -static_cast<double>(atom->nlocal)};
  double *times = maxima + 2;
  for (const PairNVAlchemi *model : h.models) {
    const NVAlchemi::StepSummary &step = model->engine().last_step();
    edges += static_cast<double>(step.edges);
    const double phases[NUM_TIMES] = {step.model,   step.glue,    step.exchange, step.graph,
                                      step.tensors, step.forward, step.backward, step.tally};
    for (int t = 0; t < NUM_TIMES; ++t) times[t] += phases[t];
  }
  double sums[4] = {static_cast<double>(atom->nlocal), static_cast<double>(atom->nghost), edges,
                    static_cast<double>(h.owner_changes)};
  MPI_Allreduce(MPI_IN_PLACE, sums, 4, MPI_DOUBLE, MPI_SUM, world);
  MPI_Allreduce(MPI_IN_PLACE, maxima, 2 + NUM_TIMES, MPI_DOUBLE, MPI_MAX, world);

  double *s = h.stats;
  const double mean = sums[0] / comm->nprocs;
  s[OWNED_MIN] = -maxima[1];
  s[OWNED_MAX] = maxima[0];
  s[OWNED_MEAN] = mean;
  s[IMBALANCE] = mean > 0.0 ? maxima[0] / mean : 1.0;
  s[GHOSTS] = sums[1];
  s[EDGES] = sums[2];
  s[OWNER_CHANGES] = sums[3];
  for (int t = 0; t < NUM_TIMES; ++t) s[time_stat[t]] = times[t];
  h.stats_step = update->ntimestep;
}

/* ----------------------------------------------------------------------
   the TorchScript hook at its scope; its forces are added to the atoms of
   the group, its energy and virial reach thermo through fix_modify
------------------------------------------------------------------------- */

void FixNVAlchemiDD::run_hook()
{
  State &h = *state;
  const std::vector<int> no_species;
  const NVAlchemi::HookRunner::Result result = h.hook->run(
      groupbit, h.models.empty() ? no_species : h.models.front()->engine().atomic_number_of_type,
      thermo_virial);
  h.hook_energy = result.energy;
  h.hook_step = update->ntimestep;
  if (vflag_global && result.has_virial)
    for (int v = 0; v < 6; ++v) virial[v] += result.virial[v];
}

double FixNVAlchemiDD::compute_scalar()
{
  // the hook's energy on the steps it acts, like its forces
  return state->hook_step == update->ntimestep ? state->hook_energy : 0.0;
}

void FixNVAlchemiDD::write_snapshot()
{
  state->snapshots.write(groupbit, state->pe,
                         state->models.front()->engine().atomic_number_of_type);
}

/* ----------------------------------------------------------------------
   global state in restart files: drift samples, clamp count, validation
------------------------------------------------------------------------- */

void FixNVAlchemiDD::write_restart(FILE *fp)
{
  const State &h = *state;
  std::vector<double> list = {static_cast<double>(h.guard.clamped), h.validation.difference,
                              static_cast<double>(h.validation.validations)};
  const std::vector<double> drift = h.drift.fit.state();
  list.insert(list.end(), drift.begin(), drift.end());
  if (comm->me == 0) {
    const int size = static_cast<int>(list.size() * sizeof(double));
    fwrite(&size, sizeof(int), 1, fp);
    fwrite(list.data(), sizeof(double), list.size(), fp);
  }
}

void FixNVAlchemiDD::restart(char *buf)
{
  State &h = *state;
  const auto *list = reinterpret_cast<const double *>(buf);
  h.guard.clamped = static_cast<bigint>(list[0]);
  h.validation.difference = list[1];
  h.validation.validations = static_cast<int>(list[2]);
  h.drift.fit.restore(list + 3);
}

/* ----------------------------------------------------------------------
   per-atom state: the owning rank at the previous step
------------------------------------------------------------------------- */

void FixNVAlchemiDD::grow_arrays(int nmax)
{ memory->grow(owner, nmax, "nvalchemi/dd:owner"); }

void FixNVAlchemiDD::copy_arrays(int i, int j, int /*delflag*/)
{ owner[j] = owner[i]; }

int FixNVAlchemiDD::pack_exchange(int i, double *buf)
{
  buf[0] = owner[i];
  return 1;
}

int FixNVAlchemiDD::unpack_exchange(int nlocal, double *buf)
{
  owner[nlocal] = static_cast<int>(buf[0]);
  return 1;
}

int FixNVAlchemiDD::pack_restart(int i, double *buf)
{
  buf[0] = 2;    // values of this fix, this count included (how fixes share atom->extra)
  buf[1] = owner[i];
  return 2;
}

void FixNVAlchemiDD::unpack_restart(int nlocal, int nth)
{
  double **extra = atom->extra;
  int m = 0;
  for (int k = 0; k < nth; ++k) m += static_cast<int>(extra[nlocal][m]);
  owner[nlocal] = static_cast<int>(extra[nlocal][m + 1]);
}

int FixNVAlchemiDD::size_restart(int /*nlocal*/)
{ return 2; }

int FixNVAlchemiDD::maxsize_restart()
{ return 2; }

double FixNVAlchemiDD::memory_usage()
{ return static_cast<double>(atom->nmax) * sizeof(int); }
